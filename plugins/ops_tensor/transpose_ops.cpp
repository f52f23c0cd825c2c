// Permutations of axes: Transpose, and DepthToSpace / SpaceToDepth, which are
// a reshape + transpose + reshape expressed as one 6-d strided copy.
#include "common.hpp"
#include "registry.hpp"
#include "transpose_blocked.hpp"

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
  if (transpose_blocked(ctx, out_shape, src_strides, src, dst, es)) return;
  strided_copy(ctx, out_shape, dst, contiguous_strides(out_shape), src, src_strides, es);
}

// DepthToSpace's inner step: one output row of w*b elements interleaves b
// source rows of w, spaced `cs` elements apart (out[i*b + j] = src[j*cs + i]).
// SpaceToDepth's is the reverse (deinterleave = true). Elements move as
// unsigned integers of their width, so every type of that width shares it.
template <typename E>
void interleave_rows(const E* src, int64_t cs, E* out, int64_t w, int64_t b, bool deinterleave) {
  if (b == 2) {
    const E* s0 = src;
    const E* s1 = src + cs;
    if (deinterleave) {
      E* o0 = out;
      E* o1 = out + cs;
      for (int64_t i = 0; i < w; ++i) o0[i] = s0[2 * i], o1[i] = s0[2 * i + 1];
    } else {
      for (int64_t i = 0; i < w; ++i) out[2 * i] = s0[i], out[2 * i + 1] = s1[i];
    }
    return;
  }
  for (int64_t j = 0; j < b; ++j)
    for (int64_t i = 0; i < w; ++i) {
      if (deinterleave)
        out[j * cs + i] = src[i * b + j];
      else
        out[i * b + j] = src[j * cs + i];
    }
}

// DepthToSpace / SpaceToDepth over rows: `rows` tasks, task r reading from
// src + src_off(r) and writing to dst + dst_off(r) (offsets in elements).
template <typename E, typename Off>
void block_rows(const Context& ctx, int64_t rows, int64_t w, int64_t b, int64_t cs, bool de, const void* src, void* dst,
                Off offsets) {
  const E* s = static_cast<const E*>(src);
  E* d = static_cast<E*>(dst);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, w * b));
  ctx.parallel_for(rows, grain, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      int64_t so, dof;
      offsets(r, &so, &dof);
      interleave_rows(s + so, cs, d + dof, w, b, de);
    }
  });
}

// Runs block_rows for element size `es` (1, 2, 4 or 8 bytes); false for others.
template <typename Off>
bool block_rows_by_size(const Context& ctx, size_t es, int64_t rows, int64_t w, int64_t b, int64_t cs, bool de,
                        const void* src, void* dst, Off offsets) {
  switch (es) {
    case 1: block_rows<uint8_t>(ctx, rows, w, b, cs, de, src, dst, offsets); return true;
    case 2: block_rows<uint16_t>(ctx, rows, w, b, cs, de, src, dst, offsets); return true;
    case 4: block_rows<uint32_t>(ctx, rows, w, b, cs, de, src, dst, offsets); return true;
    case 8: block_rows<uint64_t>(ctx, rows, w, b, cs, de, src, dst, offsets); return true;
    default: return false;
  }
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
    // Each output row (n, o, hh, b1) interleaves the b rows of channels ch(b1, 0..b-1).
    const int64_t cs = crd_ ? h * w : oc * h * w;  // elements between channels ch(b1, j) and ch(b1, j+1)
    const bool crd = crd_;
    auto offsets = [=](int64_t r, int64_t* so, int64_t* dof) {
      const int64_t b1 = r % b, hh = (r / b) % h, o = (r / (b * h)) % oc, nn = r / (b * h * oc);
      const int64_t ch = crd ? (o * b + b1) * b : b1 * b * oc + o;
      *so = ((nn * c + ch) * h + hh) * w;
      *dof = r * w * b;
    };
    if (sdk::numel(in) > 0 &&
        block_rows_by_size(ctx, elem_size(x), n * oc * h * b, w, b, cs, false, bytes(x), mutable_bytes(y), offsets))
      return;
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
    // The output's C is [b, b, c] (DCR) or [c, b, b] (CRD). Each input row
    // (n, ci, hh) deinterleaves into the b output rows of channels ch(b1, 0..b-1).
    const int64_t oh = h / b, ow = w / b;
    const int64_t cs = crd_ ? oh * ow : c * oh * ow;
    const bool crd = crd_;
    auto offsets = [=](int64_t r, int64_t* so, int64_t* dof) {
      const int64_t hh = r % h, ci = (r / h) % c, nn = r / (h * c);
      const int64_t b1 = hh % b, o = hh / b;
      const int64_t ch = crd ? (ci * b + b1) * b : b1 * b * c + ci;
      *so = r * w;
      *dof = ((nn * c * b * b + ch) * oh + o) * ow;
    };
    if (sdk::numel(in) > 0 &&
        block_rows_by_size(ctx, elem_size(x), n * c * h, ow, b, cs, true, bytes(x), mutable_bytes(y), offsets))
      return;
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
