// conv_relu_pool.hpp - the attributes and shapes of ConvReluMaxPool (domain
// "ai.singa", opset 1), the training path's fusion of Conv -> Relu -> MaxPool
// (layer::Sequential makes it; the exporter writes the three ONNX nodes
// back). Shared by the forward kernel (ops_nn) and its gradient (ops_grad).
//
//   ConvReluMaxPool(X, W, B?) -> (Y, Indices?)
//     attributes: Conv's (kernel_shape, strides, pads, dilations, auto_pad,
//     group) and the pool's window, `pool_kernel_shape` and `pool_strides`
//     (no padding, no dilation, floor mode);
//     Y = MaxPool(Relu(Conv(X, W, B))), Indices = MaxPool's Indices of the
//     pre-activation conv output (row-major in [N, M, OH, OW]).
//   ConvReluMaxPoolGrad(dY, Indices, Y, X, W) -> (dX, dW, dB), domain
//     "ai.singa.grad", with the forward node's attributes.
//
// Why a fused op: the conv output of a small CNN (the seed CNN's first conv:
// 64 x 20 x 24 x 24 floats, 3 MB per batch) is written and read back four
// times by separate Relu, MaxPool, MaxPoolGrad and ReluGrad passes, each
// bound by memory traffic. Fused, each image's conv output is pooled while
// it is in cache, and the backward pass rebuilds each image's gradient
// (Relu's mask is Y > 0: the pooled maximum is the window's) where the conv
// gradient reads it. Relu commutes with the maximum, so the pooled values are
// exactly MaxPool(Relu(...))'s.
#ifndef SINGA_OPS_NN_CONV_RELU_POOL_HPP
#define SINGA_OPS_NN_CONV_RELU_POOL_HPP

#include "nn_common.hpp"
#include "spatial.hpp"

#include <string>
#include <vector>

namespace singa {
namespace nn {

constexpr const char* kFusedDomain = "ai.singa";

struct ConvReluPoolShape {
  Geometry conv, pool;
  int64_t N = 0, C = 0, M = 0, Cg = 0, group = 1;
  Shape conv_out, out;  // [N, M, OH, OW] and [N, M, PH, PW]
  int64_t conv_plane() const { return conv.out_size(); }
  int64_t pool_plane() const { return pool.out_size(); }
  // The usual 2x2 / stride-2 windows, which have AVX-512 code (pool_f32.hpp).
  bool two_by_two() const { return pool.k[1] == 2 && pool.k[2] == 2 && pool.s[1] == 2 && pool.s[2] == 2; }
};

class ConvReluPoolAttrs {
 public:
  ConvReluPoolAttrs(const sdk::Node& node, const NodeKernel& k)
      : conv_(node, k),
        group_(node.attr_int("group", 1)),
        pool_k_(node.attr_ints("pool_kernel_shape")),
        pool_s_(node.attr_ints("pool_strides")) {
    if (group_ < 1) k.fail("attribute group must be positive, got " + std::to_string(group_));
    if (pool_k_.size() != 2) k.fail("attribute pool_kernel_shape must hold 2 values, got " + shape_str(pool_k_));
    if (pool_s_.empty()) pool_s_ = pool_k_;
    if (pool_s_.size() != 2) k.fail("attribute pool_strides must hold 2 values, got " + shape_str(pool_s_));
    for (size_t i = 0; i < 2; ++i)
      if (pool_k_[i] < 1 || pool_s_[i] < 1)
        k.fail("pool_kernel_shape " + shape_str(pool_k_) + " and pool_strides " + shape_str(pool_s_) +
               " must be positive");
  }

  // X [N, C, H, W] and W [M, C / group, KH, KW] resolved, or k.fail().
  ConvReluPoolShape resolve(const Shape& xs, const Shape& ws, const NodeKernel& k) const {
    ConvReluPoolShape s;
    k.check(xs.size() == 4, "X must be [N, C, H, W], got " + shape_str(xs));
    k.check(ws.size() == 4, "W must be [M, C / group, KH, KW], got " + shape_str(ws));
    s.N = xs[0], s.C = xs[1], s.M = ws[0], s.Cg = ws[1], s.group = group_;
    k.check(s.Cg * group_ == s.C && s.M % group_ == 0,
            "X " + shape_str(xs) + " and W " + shape_str(ws) + " do not fit group " + std::to_string(group_));
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!conv_.kernel_shape.empty())
      k.check(conv_.kernel_shape == kernel,
              "attribute kernel_shape " + shape_str(conv_.kernel_shape) + " does not match W " + shape_str(ws));
    s.conv = window_geometry(conv_, std::vector<int64_t>(xs.begin() + 2, xs.end()), kernel, k);
    const std::vector<int64_t> conv_dims = s.conv.out_dims();
    WindowAttrs pool;
    pool.kernel_shape = pool_k_;
    pool.strides = pool_s_;
    s.pool = window_geometry(pool, conv_dims, pool_k_, k);
    s.conv_out = {s.N, s.M, conv_dims[0], conv_dims[1]};
    s.out = {s.N, s.M, s.pool.out[1], s.pool.out[2]};
    return s;
  }

 private:
  WindowAttrs conv_;
  int64_t group_;
  std::vector<int64_t> pool_k_, pool_s_;
};

}  // namespace nn
}  // namespace singa
#endif
