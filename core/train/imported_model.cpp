// An imported graph run node by node on the autograd tape.
#include "../autograd/tape.hpp"
#include "../autograd/grad_check.hpp"
#include "../onnx/rep_impl.hpp"
#include "cast.hpp"
#include "fuse.hpp"

#include <singa/layer.hpp>
#include <singa/op_versions.hpp>

#include <onnx/defs/schema.h>

namespace singa {
namespace layer {

namespace {

bool is_float(int32_t t) {
  return t == SINGA_ONNX_FLOAT || t == SINGA_ONNX_DOUBLE || t == SINGA_ONNX_FLOAT16 || t == SINGA_ONNX_BFLOAT16;
}

const graph::Graph& graph_of(const onnx::Rep& rep) { return rep.impl().exec->graph(); }

const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool all_equal(const ::onnx::AttributeProto* a, int64_t v) {
  if (!a) return true;
  for (int64_t x : a->ints())
    if (x != v) return false;
  return true;
}

// Value v feeds node `reader` only and is no graph output.
bool only_read_by(const graph::Graph& g, int v, size_t reader) {
  const graph::Value& val = g.values[size_t(v)];
  return !val.is_output && val.consumers.size() == 1 && size_t(val.consumers[0]) == reader;
}

bool is_op(const graph::Node& n, const char* op) {
  return n.proto.op_type() == op && (n.proto.domain().empty() || n.proto.domain() == "ai.onnx");
}

// Nodes i, i + 1, i + 2 as one ConvReluMaxPool (plugins/ops_nn/conv_relu_pool.hpp),
// or false: a 2-D Conv whose only reader is a Relu whose only reader is an
// unpadded, undilated, floor-mode MaxPool without Indices, all before `stop`.
bool conv_relu_pool_node(const graph::Graph& g, size_t i, size_t stop, ::onnx::NodeProto& fused) {
  if (i + 2 >= stop || !fuse_conv_blocks()) return false;
  const graph::Node &conv = g.nodes[i], &relu = g.nodes[i + 1], &pool = g.nodes[i + 2];
  if (!is_op(conv, "Conv") || !is_op(relu, "Relu") || !is_op(pool, "MaxPool")) return false;
  if (conv.outputs.size() != 1 || conv.inputs.empty() || conv.inputs[0] < 0) return false;
  const graph::Value& x = g.values[size_t(conv.inputs[0])];
  if (!x.rank_known || x.dims.size() != 4) return false;
  if (relu.inputs.empty() || relu.inputs[0] != conv.outputs[0] || !only_read_by(g, conv.outputs[0], i + 1))
    return false;
  if (pool.inputs.empty() || pool.inputs[0] != relu.outputs[0] || !only_read_by(g, relu.outputs[0], i + 2))
    return false;
  for (size_t k = 1; k < pool.outputs.size(); ++k) {  // Indices, if named, must be unread
    const int v = pool.outputs[k];
    if (v >= 0 && (g.values[size_t(v)].is_output || !g.values[size_t(v)].consumers.empty())) return false;
  }
  const ::onnx::AttributeProto* kernel = find_attr(pool.proto, "kernel_shape");
  const ::onnx::AttributeProto* strides = find_attr(pool.proto, "strides");
  const ::onnx::AttributeProto* pad = find_attr(pool.proto, "auto_pad");
  const ::onnx::AttributeProto* ceil = find_attr(pool.proto, "ceil_mode");
  if (!kernel || kernel->ints_size() != 2 || (strides && strides->ints_size() != 2)) return false;
  if (!all_equal(find_attr(pool.proto, "pads"), 0) || !all_equal(find_attr(pool.proto, "dilations"), 1)) return false;
  if ((ceil && ceil->i() != 0) || (pad && pad->s() != "NOTSET" && pad->s() != "VALID" && !pad->s().empty()))
    return false;
  fused.Clear();
  fused.set_op_type("ConvReluMaxPool");
  fused.set_domain(autograd::kFusedDomain);
  for (const auto& a : conv.proto.attribute()) *fused.add_attribute() = a;
  autograd::Attrs extra;
  std::vector<int64_t> k(kernel->ints().begin(), kernel->ints().end());
  extra.set("pool_kernel_shape", k)
      .set("pool_strides",
           strides ? std::vector<int64_t>(strides->ints().begin(), strides->ints().end()) : std::vector<int64_t>{1, 1});
  autograd::add_attrs(fused, extra);
  fused.add_output("y0");
  fused.add_output("y1");
  return true;
}

const ::onnx::OpSchema* schema_of(const graph::Node& n) {
  const std::string& d = n.proto.domain();
  return ::onnx::OpSchemaRegistry::Schema(n.proto.op_type(), int(n.opset), d == "ai.onnx" ? "" : d);
}

// The schema's formal input that input j of a node stands for (a variadic
// last one covers the rest), or null.
const ::onnx::OpSchema::FormalParameter* formal_input(const ::onnx::OpSchema* s, size_t j) {
  if (!s || s->inputs().empty()) return nullptr;
  const auto& in = s->inputs();
  if (j < in.size()) return &in[j];
  return in.back().GetOption() == ::onnx::OpSchema::Variadic ? &in.back() : nullptr;
}

bool is_running_statistic(const graph::Node& n, size_t j) { return is_op(n, "BatchNormalization") && (j == 3 || j == 4); }

// Whether a node may read a gradient through input j: so the schema says, or
// does not say (no schema, or a category left Unknown).
bool differentiable_input(const graph::Node& n, size_t j) {
  const auto* f = formal_input(schema_of(n), j);
  return !f || f->GetDifferentiationCategory() != ::onnx::OpSchema::NonDifferentiable;
}

// Whether input j of the node may be of element type `dtype` (true when no schema says).
bool admits(const ::onnx::OpSchema* s, size_t j, int32_t dtype) {
  const auto* f = formal_input(s, j);
  if (!f) return !s;
  const char* want = dtype == SINGA_ONNX_DOUBLE ? "tensor(double)" : "tensor(float)";
  for (const auto& t : f->GetTypes())
    if (t && *t == want) return true;
  return false;
}

}  // namespace

std::shared_ptr<onnx::Rep> ImportedModel::prepare_for_training(const std::string& path) {
  onnx::PrepareOptions o;
  o.optimize = false;
  return onnx::prepare(path, o);
}

ImportedModel::ImportedModel(std::shared_ptr<onnx::Rep> rep, int last_layers)
    : rep_(std::move(rep)), last_layers_(last_layers) {
  if (!rep_) throw Error(SINGA_INVALID_ARGUMENT, "ImportedModel: null Rep");
  const graph::Graph& g = graph_of(*rep_);
  for (const graph::Node& n : g.nodes) {
    if (!n.subgraphs.empty())
      throw Error(SINGA_UNIMPLEMENTED, g.source + ": " + n.label + ": control flow cannot be run on the autograd tape");
    // Graph passes may fuse nodes into forms no ONNX schema describes (and
    // no backward rule knows); training needs the graph as written.
    if (n.proto.domain().empty() || n.proto.domain() == "ai.onnx") {
      const auto* schema = ::onnx::OpSchemaRegistry::Schema(n.proto.op_type(), int(n.opset), "");
      // Only the version in force describes the node (ONNX 1.12 lacks e.g. ReduceMean-18).
      if (schema && schema->SinceVersion() != onnx::op_version_at("", n.proto.op_type(), n.opset)) schema = nullptr;
      try {
        if (schema) schema->Verify(n.proto);
      } catch (const std::exception& e) {
        throw Error(SINGA_INVALID_ARGUMENT, g.source + ": " + n.label +
                                                " was rewritten by graph optimisation; prepare the model with "
                                                "PrepareOptions::optimize = false to train it");
      }
    }
  }
  // Each float initializer is a parameter, a buffer or a constant (see layer.hpp).
  enum Role { kConstant, kParameter, kBuffer };
  std::vector<Role> role(g.values.size(), kConstant);
  std::vector<size_t> first_reader(g.values.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const int v = n.inputs[j];
      if (v < 0 || !g.values[size_t(v)].is_initializer) continue;
      first_reader[size_t(v)] = std::min(first_reader[size_t(v)], i);
      if (is_running_statistic(n, j))
        role[size_t(v)] = kBuffer;
      else if (role[size_t(v)] == kConstant && differentiable_input(n, j))
        role[size_t(v)] = kParameter;
    }
  }
  values_.resize(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const graph::Value& val = g.values[v];
    if (!val.is_initializer) continue;
    // A copy: training must not change what the Rep itself runs.
    const bool trainable = is_float(val.constant.dtype()) && role[v] == kParameter;
    values_[v] = autograd::Variable(val.constant.clone(), trainable, val.name);
    if (!is_float(val.constant.dtype()) || first_reader[v] == g.nodes.size()) continue;
    if (role[v] == kParameter) params_.push_back({val.name, values_[v], first_reader[v]});
    if (role[v] == kBuffer) buffers_.push_back({val.name, values_[v], first_reader[v]});
  }
}

ImportedModel::ImportedModel(std::shared_ptr<onnx::Rep> rep, const std::string& last_node)
    : ImportedModel(std::move(rep), 0) {
  set_last_node(last_node);
}

void ImportedModel::set_last_node(const std::string& name) {
  const graph::Graph& g = graph_of(*rep_);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].proto.name() == name) {
      last_layers_ = -int(g.nodes.size() - 1 - i);
      return;
    }
  throw Error(SINGA_INVALID_ARGUMENT, g.source + ": no node is named '" + name +
                                          "' (Rep::nodes() and `singa info --nodes` list them)");
}

size_t ImportedModel::stop() const {
  const size_t count = graph_of(*rep_).nodes.size();
  if (last_layers_ >= 0) return count;
  return size_t(-last_layers_) >= count ? 0 : count - size_t(-last_layers_);
}

void ImportedModel::set_trainable(bool on) {
  for (auto& p : params_) p.var.set_requires_grad(on);
}

void ImportedModel::collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const {
  // State read only by nodes after the cut never takes part (no gradient, no update).
  const size_t end = stop();
  for (const auto& s : params_)
    if (s.first_reader < end) out.emplace_back(p + s.name, s.var);
  for (const auto& s : buffers_)
    if (s.first_reader < end) buf.emplace_back(p + s.name, s.var);
}

void ImportedModel::to(int32_t dtype) {
  detail::check_float_dtype(dtype, graph_of(*rep_).source);
  for (auto* states : {&params_, &buffers_})
    for (auto& s : *states) detail::cast_variable(s.var, dtype);
  dtype_ = dtype;
}

Variable ImportedModel::forward(const Variable& x) {
  auto out = forward_all({x});
  if (out.empty()) throw Error(SINGA_INVALID_ARGUMENT, "ImportedModel: the model produced no output");
  return out[0];
}

std::vector<Variable> ImportedModel::forward_all(const std::vector<Variable>& inputs) {
  const graph::Graph& g = graph_of(*rep_);
  if (inputs.size() != g.inputs.size())
    throw Error(SINGA_INVALID_ARGUMENT, g.source + ": the model takes " + std::to_string(g.inputs.size()) +
                                            " inputs, got " + std::to_string(inputs.size()));
  std::vector<Variable> env = values_;
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(g.inputs[i])] = inputs[i];
  const size_t count = g.nodes.size();
  if (last_layers_ < 0 && size_t(-last_layers_) >= count)
    throw Error(SINGA_INVALID_ARGUMENT, g.source + ": last_layers " + std::to_string(last_layers_) +
                                            " leaves no node of " + std::to_string(count) + " to run");
  const size_t stop = this->stop();
  // After to(): the other float type, where it meets the graph, is cast to dtype_.
  const int32_t other = dtype_ == SINGA_ONNX_DOUBLE ? SINGA_ONNX_FLOAT : SINGA_ONNX_DOUBLE;
  autograd::check_gradients(g, stop, env);  // before any node runs: name the ops without a gradient
  for (size_t i = 0; i < stop; ++i) {
    const graph::Node& n = g.nodes[i];
    std::vector<Variable> in(n.inputs.size());
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      int v = n.inputs[j];
      if (v < 0) continue;
      in[j] = env[size_t(v)];
      if (!in[j].defined())
        throw Error(SINGA_INTERNAL,
                    g.source + ": " + n.label + ": input '" + g.values[size_t(v)].name + "' is not available");
    }
    ::onnx::NodeProto node = autograd::bare_node(n.proto);
    int64_t opset = n.opset;
    if (dtype_) {
      const ::onnx::OpSchema* schema = schema_of(n);
      for (size_t j = 0; j < in.size(); ++j)
        if (in[j].defined() && in[j].dtype() == other && admits(schema, j, dtype_))
          in[j] = autograd::apply1("Cast", {in[j]}, autograd::Attrs().set("to", int64_t(dtype_)));
      if (is_op(n, "Cast"))
        for (auto& a : *node.mutable_attribute())
          if (a.name() == "to" && a.i() == other) a.set_i(dtype_);
    }
    ::onnx::NodeProto fused;
    if (conv_relu_pool_node(g, i, stop, fused)) {
      // Conv -> Relu -> MaxPool as one op; the MaxPool's output is its
      // output, Indices only when a backward pass will read them.
      bool grad = false;
      for (const Variable& v : in) grad = grad || (v.defined() && v.requires_grad());
      if (!autograd::recording() || !grad) fused.mutable_output()->RemoveLast();
      std::vector<Variable> out;
      try {
        out = autograd::apply_node(fused, 1, in);
      } catch (const Error& e) {
        throw Error(e.code(), g.source + ": " + n.label + " (fused with the Relu and MaxPool after it): " + e.what());
      }
      const int v = g.nodes[i + 2].outputs[0];
      out[0].set_name(g.values[size_t(v)].name);
      env[size_t(v)] = out[0];
      i += 2;
      continue;
    }
    bool bn_training = training_ && n.proto.op_type() == "BatchNormalization" && n.proto.domain().empty() &&
                       n.outputs.size() == 1 && n.inputs.size() == 5 && g.values[size_t(n.inputs[3])].is_initializer &&
                       g.values[size_t(n.inputs[4])].is_initializer;
    if (bn_training) {
      // Batch statistics while training; the running ones are updated in place.
      ::onnx::NodeProto t;
      t.set_op_type("BatchNormalization");
      for (const auto& a : n.proto.attribute())
        if (a.name() == "epsilon" || a.name() == "momentum") *t.add_attribute() = a;
      autograd::add_attrs(t, autograd::Attrs().set("training_mode", int64_t(1)));
      t.add_output("y0");
      t.add_output("y1");
      t.add_output("y2");
      node = t;
      opset = 15;
    }
    std::vector<Variable> out;
    try {
      out = autograd::apply_node(node, opset, in);
    } catch (const Error& e) {
      throw Error(e.code(), g.source + ": " + n.label + ": " + e.what());
    }
    if (bn_training) {
      env[size_t(n.inputs[3])].set_data(out[1].data());
      env[size_t(n.inputs[4])].set_data(out[2].data());
      out.resize(1);
    }
    for (size_t k = 0; k < n.outputs.size() && k < out.size(); ++k)
      if (n.outputs[k] >= 0) {
        if (out[k].defined()) out[k].set_name(g.values[size_t(n.outputs[k])].name);
        env[size_t(n.outputs[k])] = out[k];
      }
  }
  std::vector<Variable> result;
  if (stop < count) {
    for (int v : g.nodes[stop - 1].outputs)
      if (v >= 0 && env[size_t(v)].defined()) result.push_back(env[size_t(v)]);
  } else {
    for (int v : g.outputs) result.push_back(env[size_t(v)]);
  }
  return result;
}

}  // namespace layer
}  // namespace singa
