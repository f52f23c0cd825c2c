// logical_common.hpp - shape handling and the binary loop of the ops_logical pack.
#ifndef SINGA_OPS_LOGICAL_COMMON_HPP
#define SINGA_OPS_LOGICAL_COMMON_HPP

#include <singa/kernel.hpp>
#include <algorithm>
#include <string>
#include <type_traits>

#include "broadcast.hpp"

namespace singa {
namespace ops {
namespace logical {

using sdk::Shape;

constexpr uint64_t kBool = sdk::bit(SINGA_ONNX_BOOL);
constexpr uint64_t kBf16 = sdk::bit(SINGA_ONNX_BFLOAT16);

// Errors are raised with sdk::fail and plain messages: the host prefixes
// every kernel error with the model, node name and op type.

// half and bfloat16 compare as float; the rest as themselves.
template <typename T> inline auto as_cmp(T v) {
  if constexpr (std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value)
    return static_cast<float>(v);
  else
    return v;
}

// The shapes of a binary op's operands as the broadcaster should see them.
struct BinaryShapes {
  Shape a, b, out;
};

// Opsets 1-6 of the binary logical/comparison ops broadcast only B onto A, and
// only when broadcast=1: B's dims line up with A's starting at `axis`
// (default: B is a suffix of A). Opset 7+ broadcast both ways, numpy style.
class BinaryForm {
 public:
  BinaryForm(const sdk::Node& node, bool legacy) : legacy_(legacy) {
    if (!legacy) return;
    broadcast_ = node.attr_int("broadcast", 0) != 0;
    has_axis_ = node.has_attr("axis");
    axis_ = node.attr_int("axis", 0);
  }

  BinaryShapes shapes(const Shape& a, const Shape& b) const {
    if (!legacy_) return {a, b, broadcast_shapes({a, b})};
    if (!broadcast_) {
      if (a != b) sdk::fail("shapes " + shape_str(a) + " and " + shape_str(b) + " differ and attribute broadcast is 0");
      return {a, b, a};
    }
    const int64_t ra = int64_t(a.size()), rb = int64_t(b.size());
    int64_t start = has_axis_ ? (axis_ < 0 ? axis_ + ra : axis_) : ra - rb;
    if (rb > ra || start < 0 || start + rb > ra)
      sdk::fail("B of shape " + shape_str(b) + " cannot broadcast onto A of shape " + shape_str(a) + " at axis " +
                std::to_string(has_axis_ ? axis_ : start));
    Shape bb(size_t(ra), 1);
    for (int64_t i = 0; i < rb; ++i) {
      int64_t d = b[size_t(i)], target = a[size_t(start + i)];
      if (d != target && d != 1)
        sdk::fail("B of shape " + shape_str(b) + " cannot broadcast onto A of shape " + shape_str(a));
      bb[size_t(start + i)] = d;
    }
    return {a, bb, a};
  }

 private:
  bool legacy_ = false, broadcast_ = false, has_axis_ = false;
  int64_t axis_ = 0;
};

// Calls f(out_offset, in_offsets, in_steps, n) like Broadcaster::run_rows,
// in parallel, with rows longer than kPiece cut into pieces: same-shape or
// scalar operands coalesce into one row, which would otherwise run on one thread.
template <size_t N, typename F>
void run_pieces(const sdk::Context& ctx, const Broadcaster<N>& bc, F&& f) {
  constexpr int64_t kPiece = 16384;
  const int64_t inner = bc.inner();
  if (inner <= kPiece) {
    const int64_t grain = std::max<int64_t>(1, kPiece / std::max<int64_t>(1, inner));
    ctx.parallel_for(bc.rows(), grain, [&](int64_t rb, int64_t re) { bc.run_rows(rb, re, f); });
    return;
  }
  const int64_t per_row = (inner + kPiece - 1) / kPiece;
  ctx.parallel_for(bc.rows() * per_row, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t r = t / per_row, b = (t % per_row) * kPiece, len = std::min(kPiece, inner - b);
      bc.run_rows(r, r + 1, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t) {
        int64_t moved[N];
        for (size_t k = 0; k < N; ++k) moved[k] = off[k] + b * st[k];
        f(o + b, moved, st, len);
      });
    }
  });
}

// z = op(x, y) over broadcast operands, parallel over output rows.
template <typename TOut, typename TA, typename TB, typename Op>
void binary_apply(const sdk::Context& ctx, const BinaryShapes& s, const TA* pa, const TB* pb, TOut* po, Op op) {
  if (sdk::numel(s.out) == 0) return;
  Broadcaster<2> bc(s.out, {s.a, s.b});
  run_pieces(ctx, bc, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
    const TA* x = pa + off[0];
    const TB* y = pb + off[1];
    TOut* z = po + o;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], y[i]);
    } else if (st[0] == 1) {
      const TB yv = y[0];
      for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], yv);
    } else if (st[1] == 1) {
      const TA xv = x[0];
      for (int64_t i = 0; i < n; ++i) z[i] = op(xv, y[i]);
    } else {
      const TOut v = op(x[0], y[0]);
      for (int64_t i = 0; i < n; ++i) z[i] = v;
    }
  });
}

void register_compare(sdk::Registrar& reg);
void register_boolean(sdk::Registrar& reg);
void register_where(sdk::Registrar& reg);
void register_cast_half_compare(sdk::Registrar& reg);

}  // namespace logical
}  // namespace ops
}  // namespace singa
#endif
