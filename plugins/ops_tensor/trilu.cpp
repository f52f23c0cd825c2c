// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two axes and zeroes the rest (all-zero bytes are 0 in every dtype).
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

class Trilu : public KernelBase {
 public:
  explicit Trilu(const Node& node) : KernelBase(node), upper_(node.attr_int("upper", 1) != 0) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    SINGA_CHECK(x.ndim() >= 2, "input must have rank >= 2, got shape " + shape_str(x.shape()));
    Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    const int64_t rows = x.dim(-2), cols = x.dim(-1);
    // beyond +-(rows + cols) every k selects the same triangle; clamping keeps i + k from overflowing
    const int64_t k = std::clamp<int64_t>(ctx.has_input(1) ? read_scalar_int(ctx.input(1), "k") : 0, -(rows + cols),
                                          rows + cols);
    if (x.numel() == 0) return;
    const int64_t all_rows = x.numel() / cols;
    const size_t es = elem_size(x);
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    ctx.parallel_for(all_rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const int64_t i = row % rows;
        // kept columns [lo, hi), clamped to the row
        int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        int64_t hi = upper_ ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        if (hi < lo) hi = lo;
        const size_t base = size_t(row * cols) * es;
        std::memset(dst + base, 0, size_t(lo) * es);
        std::memcpy(dst + base + size_t(lo) * es, src + base + size_t(lo) * es, size_t(hi - lo) * es);
        std::memset(dst + base + size_t(hi) * es, 0, size_t(cols - hi) * es);
      }
    });
  }

 private:
  bool upper_;
};

}  // namespace

void register_trilu(sdk::Registrar& reg) {
  reg.kernel<Trilu>("", "Trilu", 14, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
