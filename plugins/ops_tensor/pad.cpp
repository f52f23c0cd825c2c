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

enum class PadMode { kConstant, kReflect, kEdge };

struct Run {
  int64_t out, len, src;  // src < 0: fill
};

class Pad : public KernelBase {
 public:
  explicit Pad(const Node& node) : KernelBase(node), opset_(node.opset()) {
    std::string mode = node.attr_string("mode", "constant");
    if (mode == "reflect") mode_ = PadMode::kReflect;
    else if (mode == "edge") mode_ = PadMode::kEdge;
    else if (mode != "constant") sdk::fail("attribute 'mode' must be constant, reflect or edge, got '" + mode + "'");
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
    check(pads.size() == 2 * r, "pads " + ints_str(pads) + " must have 2 * rank = " + std::to_string(2 * r) + " entries");
    char value[16] = {};
    fill_value(ctx, x, value);

    Shape out(r);
    std::vector<std::vector<int64_t>> maps(r);
    for (size_t d = 0; d < r; ++d) {
      out[d] = in[d] + pads[d] + pads[d + r];
      check(out[d] >= 0, "pads " + ints_str(pads) + " crop axis " + std::to_string(d) + " of size " +
                             std::to_string(in[d]) + " below zero");
      check(mode_ == PadMode::kConstant || in[d] > 0 || out[d] == 0,
            "cannot " + std::string(mode_ == PadMode::kReflect ? "reflect" : "edge") + "-pad the empty axis " +
                std::to_string(d));
      maps[d].resize(size_t(out[d]));
      for (int64_t o = 0; o < out[d]; ++o) maps[d][size_t(o)] = source(o - pads[d], in[d]);
    }
    Tensor y = ctx.output(0, out, x.dl_dtype());
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

  // The constant-mode fill element, in x's dtype.
  void fill_value(const Context& ctx, const Tensor& x, char* value) const {
    if (mode_ != PadMode::kConstant) return;
    if (opset_ >= 11) {
      if (!ctx.has_input(2)) return;  // zero bytes are 0 in every dtype
      Tensor v = ctx.input(2);
      check(v.numel() == 1, "constant_value must hold one element, got shape " + shape_str(v.shape()));
      check(v.dl_dtype() == x.dl_dtype(), "constant_value must have the element type of data");
      std::memcpy(value, v.data_ptr(), elem_size(v));
      return;
    }
    int32_t dt = x.dtype();
    check((sdk::bit(dt) & (sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL))) != 0,
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

}  // namespace

void register_pad(sdk::Registrar& reg) {
  reg.kernel<Pad>("", "Pad", 1, 1, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Pad>("", "Pad", 2, 10, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Pad>("", "Pad", 11, 17, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1) | input_bit(2));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
