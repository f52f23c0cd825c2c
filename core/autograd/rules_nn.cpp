// Backward rules of neural-network ops: most call a kernel of the
// "ai.singa.grad" domain (plugins/ops_grad) with the forward node's attributes.
#include "tape.hpp"

namespace singa {
namespace autograd {
namespace {

// An activation whose gradient kernel reads (dY, Y) or (dY, X).
void activation(const std::string& op, bool from_output) {
  register_rule("", op, [op, from_output](GradContext& c) {
    c.gx[0] = run_grad(op + "Grad", c.node.proto, {c.gy[0], from_output ? c.y[0] : c.x[0]}, {true})[0];
  });
}

// Softmax and LogSoftmax before opset 13 coerce the input to 2-D at `axis`
// (default 1); from 13 they work along one axis (default -1).
void softmax_like(const std::string& op) {
  register_rule("", op, [op](GradContext& c) {
    Attrs extra;
    if (c.node.opset < 13) extra.set("coerce_2d", int64_t(1)).set("axis", c.attr_int("axis", 1));
    c.gx[0] = run_grad(op + "Grad", c.node.proto, {c.gy[0], c.y[0]}, {true}, extra)[0];
  });
}

void conv_rule(GradContext& c) {
  bool has_b = c.x.size() > 2 && c.x[2].defined();
  std::vector<Tensor> g = run_grad("ConvGrad", c.node.proto, {c.gy[0], c.x[0], c.x[1]},
                                   {c.need[0], c.need[1], has_b && c.need[2]});
  for (size_t i = 0; i < g.size() && i < c.gx.size(); ++i)
    if (c.need[i]) c.gx[i] = g[i];
}

// The Indices output (1) of a pooling node: as recorded, or recomputed by
// running the forward node again with both outputs (less the attribute
// `drop`, if named).
Tensor forward_indices(GradContext& c, int64_t opset, const std::vector<Tensor>& inputs, const char* drop = nullptr) {
  if (c.y.size() > 1 && c.y[1].defined()) return c.y[1];
  ::onnx::NodeProto n = bare_node(c.node.proto);
  n.clear_output();
  n.add_output("y");
  n.add_output("i");
  for (int k = 0; drop && k < n.attribute_size(); ++k)
    if (n.attribute(k).name() == drop) {
      n.mutable_attribute()->DeleteSubrange(k, 1);
      break;
    }
  return call_op(n, opset, inputs)[1];
}

// The training path's Conv -> Relu -> MaxPool (layer::Sequential fuses it;
// plugins/ops_nn/conv_relu_pool.hpp): its gradient kernel reads the pooled
// output (Relu's mask) and the Indices of each window's maximum.
void conv_relu_pool_rule(GradContext& c) {
  Tensor idx = forward_indices(c, c.node.opset, c.x);
  const bool has_b = c.x.size() > 2 && c.x[2].defined();
  std::vector<Tensor> g = run_grad("ConvReluMaxPoolGrad", c.node.proto, {c.gy[0], idx, c.y[0], c.x[0], c.x[1]},
                                   {c.need[0], c.need[1], has_b && c.need[2]});
  for (size_t i = 0; i < g.size() && i < c.gx.size(); ++i)
    if (c.need[i]) c.gx[i] = g[i];
}

void maxpool_rule(GradContext& c) {
  if (c.y.size() > 1 && c.y[1].defined() && c.attr_int("storage_order", 0) != 0)
    throw Error(SINGA_UNIMPLEMENTED, "MaxPool with storage_order=1 Indices");
  // (Recomputed row-major: without storage_order, at an opset with Indices.)
  Tensor idx = forward_indices(c, std::max<int64_t>(c.node.opset, 8), {c.x[0]}, "storage_order");
  c.gx[0] = run_grad("MaxPoolGrad", c.node.proto, {c.gy[0], idx, c.x[0]}, {true})[0];
}

void batchnorm_rule(GradContext& c) {
  bool training = c.node.opset >= 14 && c.attr_int("training_mode", 0) != 0;
  std::vector<Tensor> g = run_grad("BatchNormalizationGrad", c.node.proto, {c.gy[0], c.x[0], c.x[1], c.x[3], c.x[4]},
                                   {c.need[0], c.need[1], c.need[2]}, Attrs().set("training_mode", int64_t(training)));
  for (size_t i = 0; i < 3; ++i)
    if (c.need[i]) c.gx[i] = g[i];
}

void dropout_rule(GradContext& c) {
  Tensor mask = c.y.size() > 1 ? c.y[1] : Tensor();
  bool training = c.x.size() > 2 && c.x[2].defined() && *c.x[2].data<bool>();
  if (!training) {
    c.gx[0] = c.gy[0];
    return;
  }
  if (!mask.defined()) throw Error(SINGA_UNIMPLEMENTED, "Dropout in training mode must be run with its mask output");
  double ratio = 0.5;
  if (c.x.size() > 1 && c.x[1].defined()) {
    Tensor r = run1("Cast", {c.x[1]}, Attrs().set("to", int64_t(SINGA_ONNX_DOUBLE)));
    ratio = *r.data<double>();
  }
  Tensor m = run1("Cast", {mask}, Attrs().set("to", int64_t(c.gy[0].dtype())));
  c.gx[0] = run1("Mul", {run1("Mul", {c.gy[0], m}), scalar(1.0 / (1.0 - ratio), c.gy[0].dtype())});
}

void sce_rule(GradContext& c) {
  Tensor logp = c.y.size() > 1 ? c.y[1] : Tensor();
  if (!logp.defined()) logp = run1("LogSoftmax", {c.x[0]}, Attrs().set("axis", int64_t(1)));
  std::vector<Tensor> in{c.gy[0], logp, c.x[1]};
  if (c.x.size() > 2 && c.x[2].defined()) in.push_back(c.x[2]);
  c.gx[0] = run_grad("SoftmaxCrossEntropyLossGrad", c.node.proto, in, {true})[0];
}

void global_avg_rule(GradContext& c) {
  const Shape& xs = c.x[0].shape();
  int64_t spatial = 1;
  for (size_t i = 2; i < xs.size(); ++i) spatial *= xs[i];
  Tensor g = run1("Mul", {c.gy[0], scalar(1.0 / double(spatial), c.gy[0].dtype())});
  c.gx[0] = run1("Expand", {g, int64s(xs)});
}

}  // namespace

void register_nn_rules() {
  activation("Relu", true);
  activation("Sigmoid", true);
  activation("Tanh", true);
  activation("LeakyRelu", false);
  activation("Elu", false);
  activation("Softplus", false);
  softmax_like("Softmax");
  softmax_like("LogSoftmax");
  register_rule("", "Conv", conv_rule);
  register_rule("", "MaxPool", maxpool_rule);
  register_rule(kFusedDomain, "ConvReluMaxPool", conv_relu_pool_rule);
  register_rule("", "AveragePool", [](GradContext& c) {
    c.gx[0] = run_grad("AveragePoolGrad", c.node.proto, {c.gy[0], c.x[0]}, {true})[0];
  });
  register_rule("", "GlobalAveragePool", global_avg_rule);
  register_rule("", "BatchNormalization", batchnorm_rule);
  register_rule("", "Dropout", dropout_rule);
  register_rule("", "SoftmaxCrossEntropyLoss", sce_rule);
}

}  // namespace autograd
}  // namespace singa
