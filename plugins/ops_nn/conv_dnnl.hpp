// conv_dnnl.hpp - float32 2-D Conv through oneDNN, planned once at create
// time for the input shape shape inference gave; bias and the fused
// activation ride in the primitive. The primitives, and the weights reordered
// into the layout oneDNN picks, are made on the first run at each thread
// count (the count is only known then). Activations are NCHW between ops,
// so each run reorders the input in and the output out when oneDNN prefers a
// blocked layout for them, except between Convs, where the blocked-layout
// pass keeps them in oneDNN's 16-channel blocks (BlockedLayout). At N
// threads the convolution is split into N parts (bands of output rows, or
// slices of output channels for weight-heavy layers) run on the runtime's
// pool, with oneDNN itself single-threaded; one thread runs it whole.
// 3x3 stride-1 convolutions with 16+ channels use oneDNN's Winograd code
// where it has one (SINGA_CONV_WINOGRAD=0: never).
#ifndef SINGA_OPS_NN_CONV_DNNL_HPP
#define SINGA_OPS_NN_CONV_DNNL_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

#include <memory>

namespace singa {
namespace nn {

using ops::FusedActivation;

struct DnnlConvPlan;

// Where a Conv's input and output are in oneDNN's 16-channel blocks
// (blocked16_f32.hpp) instead of NCHW: set on Convs whose neighbours keep
// that layout (plugins/ops_nn/passes/blocked_layout.cpp). Needs one group and a
// multiple of 16 channels on the blocked side; a ConvAdd's Z is laid out like
// its output.
struct BlockedLayout {
  bool in = false, out = false;
  // A ConvAdd's Z in blocks while Y is NCHW (the last sum of a residual
  // chain that a non-Conv reads): Z is added to the blocked result before
  // it moves to NCHW. Needs AVX-512 (unblock16_f32).
  bool z = false;
};

// Paths inside the oneDNN conv that options turn off to compare (conv.cpp
// reads them: cpu.dnnl_winograd, cpu.dnnl_unblock16,
// cpu.dnnl_winograd_part_mib).
struct DnnlSwitches {
  bool winograd = true;   // oneDNN's Winograd code for 3x3 convs that it pays on
  bool unblock16 = true;  // singa's own 16-channel unblocking of a band's output
  size_t winograd_part_bytes = size_t(16) << 20;  // transformed weights per output-channel slice
};

class DnnlConv {
 public:
  // Null when oneDNN cannot take the node (not 2-D, not float, shape unknown, ...).
  // `pool`: a MaxPool window over the conv output (a Conv with a fused
  // MaxPool), or null. A pooled plan pools each part's rows while they are in
  // oneDNN's 16-channel blocks (pool_blocked16_f32.hpp) and writes only the
  // pooled rows to NCHW; null when oneDNN would not write those blocks (the
  // caller then convolves and pools on its own).
  // `summand`: run() adds a tensor z of the output's shape before the
  // activation (ai.singa.cpu::ConvAdd); each part adds it while it moves its rows
  // to NCHW. Not with a pool.
  static std::unique_ptr<DnnlConv> plan(const Shape& x, const sdk::Tensor& w, const sdk::Tensor& b, const Geometry& g,
                                        int64_t group, const FusedActivation& act, const Geometry* pool = nullptr,
                                        bool summand = false, BlockedLayout layout = {},
                                        const DnnlSwitches& switches = {});
  ~DnnlConv();
  const Shape& input_shape() const { return x_; }
  const Shape& output_shape() const { return y_; }  // pooled, for a pooled plan
  // x and y are NCHW of input_shape()/output_shape(); w is the OIHW weights
  // the plan was made for (read only on the first run at a thread count);
  // z is the summand (NCHW, y's shape) of a plan made with one, else null.
  void run(const sdk::Context& ctx, const float* x, const float* w, float* y, const float* z = nullptr) const;

  struct State;  // opaque outside conv_dnnl.cpp

 private:
  DnnlConv() = default;
  const DnnlConvPlan& plan_for(int threads, const float* w) const;
  std::unique_ptr<State> s_;
  Shape x_, y_;
};

}  // namespace nn
}  // namespace singa
#endif
