// model_builder.hpp - tiny helpers to build ONNX models in tests: the graph
// builder, attribute setters and initializer tensors from literal values.
#ifndef SINGA_TESTS_MODEL_BUILDER_HPP
#define SINGA_TESTS_MODEL_BUILDER_HPP

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
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

// Attribute setters for the node being built (usually `m.last()`). Each adds a
// new attribute; ONNX types are explicit, so e.g. Conv's "group" is add_int.
inline void add_ints(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void add_int(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void add_float(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void add_floats(::onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

inline void add_string(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

// Host tensors from literal values, for initializers and feeds. The value count
// must equal the shape's element count (singa::Error otherwise).
inline singa::Tensor f32_tensor(const singa::Shape& shape, const std::vector<float>& v) {
  return singa::Tensor::from_vector(shape, SINGA_ONNX_FLOAT, v);
}

// A 1-D int64 tensor (shapes, axes, pads, indices), or one of the given shape.
inline singa::Tensor i64_tensor(const std::vector<int64_t>& v) {
  return singa::Tensor::from_vector({int64_t(v.size())}, SINGA_ONNX_INT64, v);
}
inline singa::Tensor i64_tensor(const singa::Shape& shape, const std::vector<int64_t>& v) {
  return singa::Tensor::from_vector(shape, SINGA_ONNX_INT64, v);
}

// An int8 or uint8 tensor (quantized weights, zero points) from int values,
// which are truncated to the 8-bit type as the quantizers store them.
inline singa::Tensor q_tensor(const singa::Shape& shape, int32_t dtype, const std::vector<int>& v) {
  if (dtype == SINGA_ONNX_UINT8)
    return singa::Tensor::from_vector(shape, dtype, std::vector<uint8_t>(v.begin(), v.end()));
  return singa::Tensor::from_vector(shape, dtype, std::vector<int8_t>(v.begin(), v.end()));
}

// Random int8 / uint8 values in [lo, hi], clamped to the type's range (the
// defaults give the whole range), from a fixed seed.
inline singa::Tensor random_q(const singa::Shape& shape, int32_t dtype, unsigned seed, int lo = -1000, int hi = 1000) {
  const bool u8 = dtype == SINGA_ONNX_UINT8;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(std::max(lo, u8 ? 0 : -128), std::min(hi, u8 ? 255 : 127));
  singa::Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (u8)
      t.data<uint8_t>()[i] = uint8_t(u(rng));
    else
      t.data<int8_t>()[i] = int8_t(u(rng));
  }
  return t;
}

// Element i of an int8 or uint8 tensor.
inline int q_at(const singa::Tensor& t, int64_t i) {
  return t.dtype() == SINGA_ONNX_UINT8 ? int(t.data<uint8_t>()[i]) : int(t.data<int8_t>()[i]);
}

// n uniform random floats in [lo, hi), or in [-scale, scale), from a fixed
// seed (weights and inputs that make a wrong index or a dropped term visible).
inline std::vector<float> random_values(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}
inline std::vector<float> random_values(size_t n, unsigned seed, float scale) {
  return random_values(n, seed, -scale, scale);
}

// n uniform floats in [-scale, scale) drawn from `rng` (one seed for a run of
// weights).
inline std::vector<float> random_values(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A float tensor of random_values.
inline singa::Tensor random_floats(const singa::Shape& shape, unsigned seed, float lo = -1.f, float hi = 1.f) {
  return f32_tensor(shape, random_values(size_t(singa::shape_numel(shape)), seed, lo, hi));
}

// The op types a prepared model runs, in order, and how many nodes run `op`:
// the tests' evidence that a pass fired (or was refused).
inline std::vector<std::string> op_types(const singa::onnx::Rep& rep) {
  std::vector<std::string> ops;
  for (const auto& p : rep.placement()) ops.push_back(p.op_type);
  return ops;
}
inline int count_op(const singa::onnx::Rep& rep, const std::string& op) {
  int n = 0;
  for (const auto& p : rep.placement()) n += p.op_type == op;
  return n;
}

// m prepared at `threads` with the named options (PrepareOptions::options).
inline std::shared_ptr<singa::onnx::Rep> prepare_at(const ModelBuilder& m, int threads,
                                                    const std::map<std::string, std::string>& options = {}) {
  singa::onnx::PrepareOptions o;
  o.threads = threads;
  o.options = options;
  return singa::onnx::prepare_bytes(m.bytes(), o);
}

}  // namespace testing_util
#endif
