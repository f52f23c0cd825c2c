// Pad in constant, reflect and edge modes. Pads are attributes until opset 10
// ("paddings" in opset 1) and inputs from 11; negative pads crop.
//
// Each output coordinate maps to a source coordinate per axis (or to "fill"
// in constant mode). The innermost axis is cut into runs that are either a
// contiguous source copy or a fill, so the common case is a few memcpys per row.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct Run {
  int64_t out, len, src;  // src < 0: fill
};

class Pad : public KernelBase {
 public:
  explicit Pad(const Node& node) : KernelBase(node), opset_(node.opset()) {
    std::string mode = node.attr_string("mode", "constant");
    if (mode == "reflect") mode_ = PadMode::kReflect;
    else if (mode == "edge") mode_ = PadMode::kEdge;
    else if (mode == "wrap" && opset_ >= 19) mode_ = PadMode::kWrap;
    else if (mode != "constant")
      sdk::fail("attribute 'mode' must be constant, reflect, edge" + std::string(opset_ >= 19 ? " or wrap" : "") +
                ", got '" + mode + "'");
    if (opset_ < 11) {
      const char* name = opset_ < 2 ? "paddings" : "pads";
      if (!node.has_attr(name)) sdk::fail(std::string("attribute '") + name + "' is required");
      attr_pads_ = node.attr_ints(name);
      attr_value_ = node.attr_float("value", 0.f);
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    const Shape in = x.shape();
    const size_t r = in.size(), es = elem_size(x);
    std::vector<int64_t> pads = opset_ < 11 ? attr_pads_ : read_ints(required(ctx, 1, "pads"), "pads");
    if (opset_ >= 18 && ctx.has_input(3)) pads = spread_over_axes(pads, read_ints(ctx.input(3), "axes"), r);
    SINGA_CHECK(pads.size() == 2 * r,
                "pads " + ints_str(pads) + " must have 2 * rank = " + std::to_string(2 * r) + " entries");
    char value[16] = {};
    fill_value(ctx, x, value);

    Shape out(r), lo(r), kept(r), pre(r);
    for (size_t d = 0; d < r; ++d) {
      const int64_t begin = pads[d], end = pads[d + r], lim = int64_t(1) << 61;
      SINGA_CHECK(begin > -lim && begin < lim && end > -lim && end < lim,
                  "pads " + ints_str(pads) + " are out of range");
      out[d] = in[d] + begin + end;
      SINGA_CHECK(out[d] >= 0, "pads " + ints_str(pads) + " crop axis " + std::to_string(d) + " of size " +
                                   std::to_string(in[d]) + " below zero");
      // Negative pads crop first; the padding then extends what is left,
      // [lo, lo + kept) of the input (as the reference does).
      lo[d] = std::max<int64_t>(-begin, 0);
      kept[d] = in[d] - lo[d] - std::max<int64_t>(-end, 0);
      pre[d] = std::max<int64_t>(begin, 0);
      SINGA_CHECK(mode_ == PadMode::kConstant || kept[d] > 0 || out[d] == 0,
                  "cannot " + std::string(mode_name()) + "-pad axis " + std::to_string(d) +
                      ": nothing is left of it after cropping");
    }
    // The output first: its allocation checks the size before the per-axis
    // maps (as long as the output axes) are built.
    Tensor y = ctx.output(0, out, x.dl_dtype());
    std::vector<std::vector<int64_t>> maps(r);
    for (size_t d = 0; d < r && y.numel() > 0; ++d) {
      maps[d].resize(size_t(out[d]));
      for (int64_t o = 0; o < out[d]; ++o) {
        int64_t s = kept[d] > 0 ? source(o - pre[d], kept[d]) : -1;
        maps[d][size_t(o)] = s < 0 ? -1 : lo[d] + s;
      }
    }
    if (y.numel() == 0) return;
    if (r == 0) {
      std::memcpy(y.data_ptr(), x.data_ptr(), es);
      return;
    }

    const int64_t inner = out[r - 1];
    std::vector<Run> runs;
    for (int64_t o = 0; o < inner; ++o) {
      int64_t s = maps[r - 1][size_t(o)];
      if (!runs.empty()) {
        Run& last = runs.back();
        bool extends = s < 0 ? last.src < 0 : (last.src >= 0 && s == last.src + last.len);
        if (extends) {
          ++last.len;
          continue;
        }
      }
      runs.push_back({o, 1, s});
    }
    const Shape in_strides = contiguous_strides(in);
    const int64_t rows = y.numel() / inner;
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    ctx.parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t rb, int64_t re) {
      for (int64_t row = rb; row < re; ++row) {
        char* drow = dst + size_t(row * inner) * es;
        int64_t rem = row, soff = 0;
        bool fill_row = false;
        for (size_t d = r - 1; d-- > 0;) {
          int64_t s = maps[d][size_t(rem % out[d])];
          rem /= out[d];
          if (s < 0) fill_row = true;
          soff += s * in_strides[d];
        }
        if (fill_row) {
          fill_elems(drow, value, inner, es);
          continue;
        }
        for (const Run& run : runs) {
          if (run.src < 0)
            fill_elems(drow + size_t(run.out) * es, value, run.len, es);
          else
            std::memcpy(drow + size_t(run.out) * es, src + size_t(soff + run.src) * es, size_t(run.len) * es);
        }
      }
    });
  }

 private:
  // Source index along an axis of size n for padded coordinate i, or -1 (fill).
  int64_t source(int64_t i, int64_t n) const {
    if (i >= 0 && i < n) return i;
    switch (mode_) {
      case PadMode::kConstant: return -1;
      case PadMode::kEdge: return i < 0 ? 0 : n - 1;
      case PadMode::kWrap: {
        int64_t m = i % n;
        return m < 0 ? m + n : m;
      }
      case PadMode::kReflect: {
        if (n == 1) return 0;
        const int64_t period = 2 * (n - 1);
        int64_t m = i % period;
        if (m < 0) m += period;
        return m < n ? m : period - m;
      }
    }
    return -1;
  }

  const char* mode_name() const {
    switch (mode_) {
      case PadMode::kReflect: return "reflect";
      case PadMode::kEdge: return "edge";
      case PadMode::kWrap: return "wrap";
      default: return "constant";
    }
  }

  // Pad-18's `axes`: pads holds begin/end pairs for those axes only.
  std::vector<int64_t> spread_over_axes(const std::vector<int64_t>& pads, const std::vector<int64_t>& axes,
                                        size_t r) const {
    SINGA_CHECK(pads.size() == 2 * axes.size(), "pads " + ints_str(pads) +
                                                    " must have 2 * len(axes) = " + std::to_string(2 * axes.size()) +
                                                    " entries for axes " + ints_str(axes));
    std::vector<int64_t> full(2 * r, 0);
    const std::vector<size_t> named = distinct_axes(axes, r);
    for (size_t i = 0; i < named.size(); ++i) {
      const size_t a = named[i];
      full[a] = pads[i];
      full[a + r] = pads[i + axes.size()];
    }
    return full;
  }

  // The constant-mode fill element, in x's dtype.
  void fill_value(const Context& ctx, const Tensor& x, char* value) const {
    if (mode_ != PadMode::kConstant) return;
    if (opset_ >= 11) {
      if (!ctx.has_input(2)) return;  // zero bytes are 0 in every dtype
      Tensor v = ctx.input(2);
      SINGA_CHECK(v.numel() == 1, "constant_value must hold one element, got shape " + shape_str(v.shape()));
      check(v.dl_dtype() == x.dl_dtype(), "constant_value must have the element type of data");
      std::memcpy(value, v.data_ptr(), elem_size(v));
      return;
    }
    int32_t dt = x.dtype();
    SINGA_CHECK((sdk::bit(dt) & (sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL))) != 0,
                std::string("constant padding of element type ") + sdk::dtype_name(dt) + " is not supported");
    sdk::dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      T v = T(attr_value_);
      std::memcpy(value, &v, sizeof(T));
    });
  }

  int64_t opset_;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> attr_pads_;
  float attr_value_ = 0.f;
};

// CenterCropPad-18: crops or zero-pads the named axes (all by default) to
// `shape`, keeping the content centred (an odd difference puts the extra
// element at the end).
class CenterCropPad : public KernelBase {
 public:
  explicit CenterCropPad(const Node& node) : KernelBase(node) {
    if (node.has_attr("axes")) {
      axes_ = node.attr_ints("axes");
      has_axes_ = true;
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input_data");
    std::vector<int64_t> shape = read_ints(required(ctx, 1, "shape"), "shape");
    const Shape in = x.shape();
    const size_t r = in.size();
    std::vector<size_t> axes;
    if (has_axes_)
      axes = distinct_axes(axes_, r);
    else
      for (size_t d = 0; d < r; ++d) axes.push_back(d);
    SINGA_CHECK(shape.size() == axes.size(), "shape " + ints_str(shape) + " must have one entry per " +
                                                 (has_axes_ ? "axis in axes " + ints_str(axes_)
                                                            : "axis of the input (rank " + std::to_string(r) + ")"));
    Shape out = in, src_off(r, 0), dst_off(r, 0), copy = in;
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t d = axes[i];
      const int64_t want = shape[i];
      SINGA_CHECK(want >= 0, "shape " + ints_str(shape) + " must not be negative");
      out[d] = want;
      copy[d] = std::min(want, in[d]);
      if (want < in[d]) src_off[d] = (in[d] - want) / 2;
      else dst_off[d] = (want - in[d]) / 2;
    }
    Tensor y = ctx.output(0, out, x.dl_dtype());
    const size_t es = elem_size(x);
    if (y.numel() == 0) return;
    if (copy != out) std::memset(y.data_ptr(), 0, size_t(y.numel()) * es);
    if (sdk::numel(copy) == 0) return;
    const Shape xs = contiguous_strides(in), ys = contiguous_strides(out);
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d < r; ++d) {
      so += src_off[d] * xs[d];
      dof += dst_off[d] * ys[d];
    }
    strided_copy(ctx, copy, mutable_bytes(y) + size_t(dof) * es, ys, bytes(x) + size_t(so) * es, xs, es);
  }

 private:
  bool has_axes_ = false;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_pad(sdk::Registrar& reg) {
  reg.kernel<CenterCropPad>("", "CenterCropPad", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}},
                            0, input_bit(1));
  reg.kernel<Pad>("", "Pad", 1, 1, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Pad>("", "Pad", 2, 10, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Pad>("", "Pad", 11, 17, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1) | input_bit(2));
  // 18: optional `axes` input; 19: "wrap" mode; 21, 23-25 only add element
  // types (the new ones are not handled here).
  for (int v : {18, 19, 21, 23, 24, 25})
    reg.kernel<Pad>("", "Pad", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}}, 0,
                    input_bit(1) | input_bit(2) | input_bit(3));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
