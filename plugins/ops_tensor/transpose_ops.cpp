// Permutations of axes: Transpose, and DepthToSpace / SpaceToDepth, which are
// a reshape + transpose + reshape expressed as one 6-d strided copy.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

// Copies `src` viewed as `in_shape` (contiguous) to a contiguous output whose
// axis k is input axis perm[k].
void permute_copy(const Context& ctx, const Shape& in_shape, const std::vector<int64_t>& perm, const char* src, char* dst,
                  size_t es) {
  Shape in_strides = contiguous_strides(in_shape);
  Shape out_shape(perm.size()), src_strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    out_shape[k] = in_shape[size_t(perm[k])];
    src_strides[k] = in_strides[size_t(perm[k])];
  }
  strided_copy(ctx, out_shape, dst, contiguous_strides(out_shape), src, src_strides, es);
}

class Transpose : public KernelBase {
 public:
  explicit Transpose(const Node& node) : KernelBase(node), has_perm_(node.has_attr("perm")), perm_(node.attr_ints("perm")) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    Shape in = x.shape();
    size_t r = in.size();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(r);
      for (size_t i = 0; i < r; ++i) perm[i] = int64_t(r - 1 - i);
    }
    SINGA_CHECK(perm.size() == r, "perm " + ints_str(perm) + " does not match input rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      p = normalize_axis(p, int64_t(r), "perm entry");
      SINGA_CHECK(!seen[size_t(p)], "perm " + ints_str(perm_) + " is not a permutation");
      seen[size_t(p)] = true;
    }
    Shape out(r);
    for (size_t k = 0; k < r; ++k) out[k] = in[size_t(perm[k])];
    Tensor y = ctx.output(0, out, x.dl_dtype());
    permute_copy(ctx, in, perm, bytes(x), mutable_bytes(y), elem_size(x));
  }

 private:
  bool has_perm_;
  std::vector<int64_t> perm_;
};

class DepthToSpace : public KernelBase {
 public:
  explicit DepthToSpace(const Node& node) : KernelBase(node), block_(node.attr_int("blocksize", 0)) {
    if (block_ <= 0) sdk::fail("attribute 'blocksize' must be positive, got " + std::to_string(block_));
    std::string mode = node.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") sdk::fail("attribute 'mode' must be DCR or CRD, got '" + mode + "'");
    crd_ = mode == "CRD";
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    Shape in = x.shape();
    SINGA_CHECK(in.size() == 4, "input must be 4-d [N,C,H,W], got " + shape_str(in));
    const int64_t n = in[0], c = in[1], h = in[2], w = in[3], b = block_;
    SINGA_CHECK(c % (b * b) == 0,
                "channels " + std::to_string(c) + " are not divisible by blocksize^2 = " + std::to_string(b * b));
    const int64_t oc = c / (b * b);
    Tensor y = ctx.output(0, {n, oc, h * b, w * b}, x.dl_dtype());
    // DCR splits C as [b, b, oc], CRD as [oc, b, b]; both land in [n, oc, h, b, w, b].
    if (crd_)
      permute_copy(ctx, {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, bytes(x), mutable_bytes(y), elem_size(x));
    else
      permute_copy(ctx, {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, bytes(x), mutable_bytes(y), elem_size(x));
  }

 private:
  int64_t block_;
  bool crd_ = false;
};

class SpaceToDepth : public KernelBase {
 public:
  explicit SpaceToDepth(const Node& node) : KernelBase(node), block_(node.attr_int("blocksize", 0)) {
    if (block_ <= 0) sdk::fail("attribute 'blocksize' must be positive, got " + std::to_string(block_));
    // SpaceToDepth-28's `mode`: DCR (the only order before) or CRD.
    if (node.opset() >= 28) {
      std::string mode = node.attr_string("mode", "DCR");
      if (mode != "DCR" && mode != "CRD") sdk::fail("attribute 'mode' must be DCR or CRD, got '" + mode + "'");
      crd_ = mode == "CRD";
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    Shape in = x.shape();
    SINGA_CHECK(in.size() == 4, "input must be 4-d [N,C,H,W], got " + shape_str(in));
    const int64_t n = in[0], c = in[1], h = in[2], w = in[3], b = block_;
    SINGA_CHECK(h % b == 0 && w % b == 0, "spatial size " + std::to_string(h) + "x" + std::to_string(w) +
                                              " is not divisible by blocksize " + std::to_string(b));
    Tensor y = ctx.output(0, {n, c * b * b, h / b, w / b}, x.dl_dtype());
    // The output's C is [b, b, c] (DCR) or [c, b, b] (CRD).
    if (crd_)
      permute_copy(ctx, {n, c, h / b, b, w / b, b}, {0, 1, 3, 5, 2, 4}, bytes(x), mutable_bytes(y), elem_size(x));
    else
      permute_copy(ctx, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, bytes(x), mutable_bytes(y), elem_size(x));
  }

 private:
  int64_t block_;
  bool crd_ = false;
};

}  // namespace

void register_transpose_ops(sdk::Registrar& reg) {
  reg.kernel<Transpose>("", "Transpose", 1, 17, "cpu", {{"T", 0, kMoveTypes}});
  // 28: DepthToSpace unchanged (now a function), SpaceToDepth gains `mode`.
  reg.kernel<DepthToSpace>("", "DepthToSpace", 28, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<SpaceToDepth>("", "SpaceToDepth", 28, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}});
  // Later versions only add element types.
  for (int v : {21, 23, 24, 25})
    reg.kernel<Transpose>("", "Transpose", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes | sdk::kFloat8Types}});
  reg.kernel<DepthToSpace>("", "DepthToSpace", 1, 17, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<SpaceToDepth>("", "SpaceToDepth", 1, 17, "cpu", {{"T", 0, kMoveTypes}});
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
