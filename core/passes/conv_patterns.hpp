// conv_patterns.hpp - tests and edits on Conv nodes shared by the passes
// that fuse several Convs into one ai.singa node (fuse_inverted_residual.cpp).
#ifndef SINGA_CORE_PASSES_CONV_PATTERNS_HPP
#define SINGA_CORE_PASSES_CONV_PATTERNS_HPP

#include "graph_edit.hpp"

#include <string>

namespace singa {
namespace passes {

// The domain of singa's own fused ops (plugins/ops_nn).
constexpr const char* kFusedDomain = "ai.singa";

// An INTS attribute that is absent, or holds `count` values all `want`.
bool ints_all(const ::onnx::AttributeProto* a, int64_t want, size_t count);

// The Conv's weights: a float initializer of rank 4 (else null).
const Tensor* conv_weights(const graph::Graph& g, const graph::Node& n);

// A value of element type float.
bool float_value(const graph::Graph& g, int v);

// A plain float Conv with one output, constant weights of rank 4, a
// constant bias if any, no auto_pad and no dilation: the common ground of
// the fusable Convs.
bool plain_conv(const graph::Graph& g, const graph::Node& n);

// An ai.singa ConvAdd (fuse_conv_add.cpp): a Conv plus a summand Z.
bool is_conv_add(const graph::Node& n);

// A plain_conv with a 1x1 kernel, no padding and one group.
bool pointwise_conv(const graph::Graph& g, const graph::Node& n);

// The value is [N, c, H, W] with c known (a model whose shapes disagree
// keeps its nodes, to fail there with Conv's own message).
bool has_channels(const graph::Graph& g, int v, int64_t c);

// Values a and b have the same static shape of rank 4: equal sizes, or one
// symbolic name on both (what an elementwise Add of them needs no broadcast for).
bool same_4d_shape(const graph::Graph& g, int a, int b);

// Copies the Conv's fused activation attributes (fuse_activation.cpp) to
// `to` under `prefix`.
void move_activation(const graph::Node& from, ::onnx::NodeProto& to, const std::string& prefix);

}  // namespace passes
}  // namespace singa
#endif
