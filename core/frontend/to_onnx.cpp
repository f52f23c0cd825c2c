#include "../autograd/tape.hpp"

#include <singa/frontend.hpp>
#include <singa/onnx.hpp>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace singa {
namespace onnx {

using autograd::TapeNode;
using autograd::Variable;

namespace {

class Tracer {
 public:
  Tracer(const std::vector<Variable>& inputs, const std::vector<Variable>& outputs, const ExportOptions& o)
      : inputs_(inputs), outputs_(outputs), opt_(o) {}

  ::onnx::ModelProto trace() {
    if (opt_.opset < 13 || opt_.opset > 17)
      throw Error(SINGA_INVALID_ARGUMENT, "to_onnx: opset " + std::to_string(opt_.opset) + " is not supported (13 to 17)");
    if (outputs_.empty()) throw Error(SINGA_INVALID_ARGUMENT, "to_onnx: no outputs given");
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.set_producer_name("singa");
    m.set_producer_version("0.1.0");
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(opt_.opset);
    g_ = m.mutable_graph();
    g_->set_name(opt_.graph_name);

    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Variable& v = inputs_[i];
      if (!v.defined()) throw Error(SINGA_INVALID_ARGUMENT, "to_onnx: input " + std::to_string(i) + " is undefined");
      std::string name = unique(i < opt_.input_names.size() ? opt_.input_names[i]
                                : v.name().empty() ? "input_" + std::to_string(i) : v.name());
      names_[v.id()] = name;
      if (i == 0 && !v.shape().empty()) batch_ = v.shape()[0];
      describe(g_->add_input(), name, v.data(), opt_.dynamic_batch);
    }
    // Output names first, so that the nodes producing them use them.
    std::vector<std::string> out_names;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Variable& v = outputs_[i];
      if (!v.defined()) throw Error(SINGA_INVALID_ARGUMENT, "to_onnx: output " + std::to_string(i) + " is undefined");
      if (names_.count(v.id())) throw Error(SINGA_INVALID_ARGUMENT, "to_onnx: output " + std::to_string(i) + " is an input");
      out_names.push_back(unique(i < opt_.output_names.size() ? opt_.output_names[i]
                                 : v.name().empty() ? "output_" + std::to_string(i) : v.name()));
      names_[v.id()] = out_names.back();
    }
    for (const Variable& v : outputs_) visit_value(v);
    for (const TapeNode* n : order_) emit(*n);
    for (size_t i = 0; i < outputs_.size(); ++i)
      describe(g_->add_output(), out_names[i], outputs_[i].data(),
               opt_.dynamic_batch && !outputs_[i].shape().empty() && outputs_[i].shape()[0] == batch_);
    if (opt_.check) check(m);
    return m;
  }

 private:
  // Collects the producers of `v` (post-order), or makes it an initializer.
  void visit_value(const Variable& v) {
    if (!v.defined() || input_ids_().count(v.id())) return;
    const auto& c = v.creator();
    if (!c) {
      if (!names_.count(v.id()) || !initialized_.count(v.id())) add_initializer(v);
      return;
    }
    if (seen_.insert(c.get()).second) {
      for (size_t i = 0; i < exported_inputs(*c); ++i) visit_value(c->inputs[i]);
      order_.push_back(c.get());
    }
    used_[c.get()].insert(v.output_index());
  }

  // Dropout loses its training_mode input: the export is for inference.
  static size_t exported_inputs(const TapeNode& n) {
    return n.proto.op_type() == "Dropout" ? std::min<size_t>(n.inputs.size(), 2) : n.inputs.size();
  }

  const std::unordered_set<const void*>& input_ids_() {
    if (input_set_.empty())
      for (const Variable& v : inputs_) input_set_.insert(v.id());
    return input_set_;
  }

  void add_initializer(const Variable& v) {
    if (initialized_.count(v.id())) return;
    std::string wanted = v.name().empty() ? "const" : v.name();
    for (const auto& [n, p] : opt_.initializer_names)
      if (p.id() == v.id()) wanted = n;
    std::string name = names_.count(v.id()) ? names_[v.id()] : unique(wanted);
    names_[v.id()] = name;
    initialized_.insert(v.id());
    *g_->add_initializer() = to_proto(v.data(), name);
  }

  std::string value_name(const TapeNode& n, size_t k) {
    auto s = k < n.outputs.size() ? n.outputs[k].lock() : nullptr;
    if (s && names_.count(s.get())) return names_[s.get()];
    auto key = std::make_pair(&n, k);
    auto it = out_names_.find(key);
    if (it != out_names_.end()) return it->second;
    std::string base = s && !s->name.empty() ? s->name : n.proto.op_type() + "_" + std::to_string(node_index(n)) + "_out" + std::to_string(k);
    std::string name = unique(base);
    out_names_[key] = name;
    if (s) names_[s.get()] = name;
    return name;
  }

  size_t node_index(const TapeNode& n) {
    auto it = index_.find(&n);
    if (it != index_.end()) return it->second;
    size_t i = index_.size();
    index_[&n] = i;
    return i;
  }

  std::string name_of_input(const Variable& v) {
    if (!v.defined()) return "";
    if (names_.count(v.id()) && (input_set_.count(v.id()) || initialized_.count(v.id()))) return names_[v.id()];
    const auto& c = v.creator();
    if (!c) return names_.at(v.id());
    return value_name(*c, size_t(v.output_index()));
  }

  void emit(const TapeNode& n) {
    const std::string& op = n.proto.op_type();
    if (n.proto.domain() == autograd::kFusedDomain && op == "ConvReluMaxPool") {
      emit_conv_relu_pool(n);
      return;
    }
    if (!n.proto.domain().empty() && n.proto.domain() != "ai.onnx")
      throw Error(SINGA_UNIMPLEMENTED, "to_onnx: op '" + op + "' of domain '" + n.proto.domain() + "' cannot be exported");
    if (!::onnx::OpSchemaRegistry::Schema(op, int(opt_.opset), ""))
      throw Error(SINGA_UNIMPLEMENTED, "to_onnx: op '" + op + "' does not exist at opset " + std::to_string(opt_.opset));
    ::onnx::NodeProto* p = g_->add_node();
    p->set_op_type(op);
    p->set_name(op + "_" + std::to_string(node_index(n)));
    size_t num_inputs = exported_inputs(n);
    for (size_t i = 0; i < num_inputs; ++i) p->add_input(name_of_input(n.inputs[i]));
    while (p->input_size() > 0 && p->input(p->input_size() - 1).empty()) p->mutable_input()->RemoveLast();
    for (const auto& a : n.proto.attribute()) {
      if (op == "BatchNormalization" && a.name() == "training_mode") continue;
      *p->add_attribute() = a;
    }
    if (n.opset > 0 && n.opset < 13) upgrade_to_13(n, p);
    // Outputs nobody reads are dropped (MaxPool's Indices, BatchNorm's
    // running statistics, Dropout's mask, the loss's log_prob).
    const std::set<int>& used = used_[&n];
    int last = used.empty() ? 0 : *used.rbegin();
    for (int k = 0; k <= last; ++k) p->add_output(used.count(k) ? value_name(n, size_t(k)) : "");
  }

  // A node recorded at an opset before 13 (an imported opset-11 model re-trained)
  // is written at 13..17, where some ops changed form: Squeeze, Unsqueeze,
  // ReduceSum and Split take as an input what was an attribute, and Softmax,
  // LogSoftmax and Hardmax normalise along one axis instead of over the
  // flattened trailing axes (and default to the last axis instead of 1).
  void upgrade_to_13(const TapeNode& n, ::onnx::NodeProto* p) {
    const std::string& op = p->op_type();
    const char* moved = op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum" ? "axes"
                        : op == "Split"                                             ? "split"
                                                                                    : nullptr;
    if (moved) {
      for (int i = 0; i < p->attribute_size(); ++i) {
        if (p->attribute(i).name() != moved) continue;
        ::onnx::TensorProto* t = g_->add_initializer();
        t->set_name(unique(p->name() + "_" + moved));
        t->set_data_type(SINGA_ONNX_INT64);
        t->add_dims(p->attribute(i).ints_size());
        for (int64_t v : p->attribute(i).ints()) t->add_int64_data(v);
        while (p->input_size() < 1) p->add_input("");
        p->mutable_input()->DeleteSubrange(1, p->input_size() - 1);
        p->add_input(t->name());
        p->mutable_attribute()->DeleteSubrange(i, 1);
        break;
      }
      return;
    }
    if (op != "Softmax" && op != "LogSoftmax" && op != "Hardmax") return;
    const int64_t rank = n.inputs.empty() ? 0 : int64_t(n.inputs[0].shape().size());
    int64_t axis = 1;
    int at = -1;
    for (int i = 0; i < p->attribute_size(); ++i)
      if (p->attribute(i).name() == "axis") axis = p->attribute(i).i(), at = i;
    if (axis < 0) axis += rank;
    if (axis >= rank - 1) {  // the last axis: the same either way, once said explicitly
      ::onnx::AttributeProto* a = at >= 0 ? p->mutable_attribute(at) : p->add_attribute();
      a->set_name("axis");
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(-1);
      return;
    }
    // Over the flattened trailing axes: Flatten(axis) -> op(axis -1) -> Reshape to Shape(x).
    const std::string x = p->input(0), flat = unique(p->name() + "_flat"), shape = unique(p->name() + "_shape"),
                      y = unique(p->name() + "_2d");
    ::onnx::NodeProto* f = g_->add_node();
    f->set_op_type("Flatten");
    f->set_name(unique(p->name() + "_Flatten"));
    f->add_input(x);
    f->add_output(flat);
    ::onnx::AttributeProto* fa = f->add_attribute();
    fa->set_name("axis");
    fa->set_type(::onnx::AttributeProto::INT);
    fa->set_i(axis);
    ::onnx::NodeProto* s = g_->add_node();
    s->set_op_type("Shape");
    s->set_name(unique(p->name() + "_Shape"));
    s->add_input(x);
    s->add_output(shape);
    // The op itself moves after them, on the 2-D value; a Reshape takes its place.
    ::onnx::NodeProto core = *p;
    core.set_input(0, flat);
    core.clear_output();
    core.add_output(y);
    for (auto& a : *core.mutable_attribute())
      if (a.name() == "axis") a.set_i(-1);
    if (at < 0) {
      ::onnx::AttributeProto* a = core.add_attribute();
      a->set_name("axis");
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(-1);
    }
    p->Clear();
    p->set_op_type("Reshape");
    p->set_name(unique(core.name() + "_Reshape"));
    p->add_input(y);
    p->add_input(shape);
    *g_->add_node() = core;
    // Keep the order topological: the Reshape (in p's slot, p still points to
    // it) moves behind the three nodes just added.
    for (int i = g_->node_size() - 4; i + 1 < g_->node_size(); ++i) g_->mutable_node()->SwapElements(i, i + 1);
  }

  // layer::Sequential's fused ConvReluMaxPool, written as the Conv, Relu and
  // MaxPool it stands for.
  void emit_conv_relu_pool(const TapeNode& n) {
    if (used_[&n].count(1))
      throw Error(SINGA_UNIMPLEMENTED, "to_onnx: the Indices of a fused ConvReluMaxPool cannot be exported");
    const std::string base = "ConvReluMaxPool_" + std::to_string(node_index(n));
    const std::string conv_out = unique(base + "_conv"), relu_out = unique(base + "_relu");
    ::onnx::NodeProto* conv = g_->add_node();
    conv->set_op_type("Conv");
    conv->set_name(unique(base + "_Conv"));
    for (size_t i = 0; i < n.inputs.size(); ++i) conv->add_input(name_of_input(n.inputs[i]));
    while (conv->input_size() > 0 && conv->input(conv->input_size() - 1).empty()) conv->mutable_input()->RemoveLast();
    conv->add_output(conv_out);
    ::onnx::NodeProto* relu = g_->add_node();
    relu->set_op_type("Relu");
    relu->set_name(unique(base + "_Relu"));
    relu->add_input(conv_out);
    relu->add_output(relu_out);
    ::onnx::NodeProto* pool = g_->add_node();
    pool->set_op_type("MaxPool");
    pool->set_name(unique(base + "_MaxPool"));
    pool->add_input(relu_out);
    pool->add_output(value_name(n, 0));
    for (const auto& a : n.proto.attribute()) {
      if (a.name() == "pool_kernel_shape" || a.name() == "pool_strides") {
        ::onnx::AttributeProto* p = pool->add_attribute();
        *p = a;
        p->set_name(a.name() == "pool_kernel_shape" ? "kernel_shape" : "strides");
      } else {
        *conv->add_attribute() = a;
      }
    }
  }

  void describe(::onnx::ValueInfoProto* vi, const std::string& name, const Tensor& t, bool batch_dim) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.dtype());
    auto* sh = tt->mutable_shape();
    for (int i = 0; i < t.ndim(); ++i) {
      auto* d = sh->add_dim();
      if (i == 0 && batch_dim)
        d->set_dim_param("batch");
      else
        d->set_dim_value(t.shape()[size_t(i)]);
    }
  }

  std::string unique(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
    taken_.insert(name);
    return name;
  }

  void check(::onnx::ModelProto& m) {
    try {
      ::onnx::checker::check_model(m);
      ::onnx::ModelProto copy = m;
      ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(),
                                           ::onnx::ShapeInferenceOptions(true, 1, true));
    } catch (const std::exception& e) {
      throw Error(SINGA_INTERNAL, std::string("to_onnx: the exported model does not validate: ") + e.what());
    }
  }

  const std::vector<Variable>& inputs_;
  const std::vector<Variable>& outputs_;
  const ExportOptions& opt_;
  ::onnx::GraphProto* g_ = nullptr;
  int64_t batch_ = -1;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<const void*> input_set_, initialized_;
  std::unordered_set<const TapeNode*> seen_;
  std::vector<const TapeNode*> order_;
  std::unordered_map<const TapeNode*, std::set<int>> used_;
  std::map<std::pair<const TapeNode*, size_t>, std::string> out_names_;
  std::unordered_map<const TapeNode*, size_t> index_;
  std::set<std::string> taken_;
};

}  // namespace

::onnx::ModelProto to_onnx(const std::vector<Variable>& inputs, const std::vector<Variable>& outputs,
                           const ExportOptions& options) {
  return Tracer(inputs, outputs, options).trace();
}

::onnx::ModelProto to_onnx(const std::vector<Variable>& inputs, const std::vector<Variable>& outputs, int64_t opset) {
  ExportOptions o;
  o.opset = opset;
  return to_onnx(inputs, outputs, o);
}

void save_model(const ::onnx::ModelProto& model, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !model.SerializeToOstream(&f) || !f.flush())
    throw Error(SINGA_INVALID_ARGUMENT, "cannot write model file '" + path + "'");
}

}  // namespace onnx
}  // namespace singa
