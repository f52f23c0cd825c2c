// model_builder.hpp - tiny helper to build ONNX models in tests.
#ifndef SINGA_TESTS_MODEL_BUILDER_HPP
#define SINGA_TESTS_MODEL_BUILDER_HPP

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace testing_util {

struct ModelBuilder {
  ::onnx::ModelProto model;
  ::onnx::GraphProto* g;
  explicit ModelBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g = model.mutable_graph();
    g->set_name("test");
  }
  // dims: -1 with a dim_param name for symbolic dimensions
  ModelBuilder& input(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& params = {}) {
    add_vi(g->add_input(), name, dtype, dims, params);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims = {},
                       const std::vector<std::string>& params = {}) {
    auto* vi = g->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
    if (!dims.empty() || !params.empty()) add_shape(vi, dims, params);
    return *this;
  }
  ModelBuilder& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                     const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(g->node_size()) : name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const singa::Tensor& t) {
    *g->add_initializer() = singa::onnx::to_proto(t, name);
    return *this;
  }
  ::onnx::NodeProto* last() { return g->mutable_node(g->node_size() - 1); }
  std::string bytes() const { return model.SerializeAsString(); }

 private:
  static void add_shape(::onnx::ValueInfoProto* vi, const std::vector<int64_t>& dims, const std::vector<std::string>& params) {
    auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (dims[i] >= 0) d->set_dim_value(dims[i]);
      else d->set_dim_param(i < params.size() ? params[i] : "N");
    }
  }
  static void add_vi(::onnx::ValueInfoProto* vi, const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                     const std::vector<std::string>& params) {
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
    add_shape(vi, dims, params);
  }
};

}  // namespace testing_util
#endif
