// ReverseSequence: reverses the first seq_len[b] steps along the time axis of
// each batch entry b; later steps are copied unchanged.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

class ReverseSequence : public KernelBase {
 public:
  explicit ReverseSequence(const Node& node)
      : KernelBase(node), batch_axis_(node.attr_int("batch_axis", 1)), time_axis_(node.attr_int("time_axis", 0)) {
    bool ok = (batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0);
    if (!ok)
      sdk::fail("batch_axis and time_axis must be 0 and 1 in some order, got " + std::to_string(batch_axis_) + " and " +
                std::to_string(time_axis_));
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input"), lens_t = required(ctx, 1, "sequence_lens");
    const Shape in = x.shape();
    SINGA_CHECK(in.size() >= 2, "input must have rank >= 2, got shape " + shape_str(in));
    const int64_t batch = in[size_t(batch_axis_)], steps = in[size_t(time_axis_)];
    std::vector<int64_t> lens = read_ints(lens_t, "sequence_lens");
    SINGA_CHECK(int64_t(lens.size()) == batch, "sequence_lens has " + std::to_string(lens.size()) +
                                                   " entries for batch size " + std::to_string(batch));
    for (int64_t l : lens)
      if (l < 0 || l > steps)
        fail("sequence length " + std::to_string(l) + " is outside [0, " + std::to_string(steps) + "]");
    Tensor y = ctx.output(0, in, x.dl_dtype());
    int64_t inner = 1;
    for (size_t d = 2; d < in.size(); ++d) inner *= in[d];
    const size_t chunk = size_t(inner) * elem_size(x);
    if (chunk == 0) return;
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    auto offset = [&](int64_t t, int64_t b) { return size_t(time_axis_ == 0 ? t * batch + b : b * steps + t) * chunk; };
    ctx.parallel_for(batch * steps, std::max<int64_t>(1, int64_t(65536 / chunk)), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t b = i / steps, t = i % steps, len = lens[size_t(b)];
        const int64_t from = t < len ? len - 1 - t : t;
        std::memcpy(dst + offset(t, b), src + offset(from, b), chunk);
      }
    });
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

void register_reverse_sequence(sdk::Registrar& reg) {
  reg.kernel<ReverseSequence>("", "ReverseSequence", 10, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
