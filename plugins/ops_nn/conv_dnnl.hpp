// conv_dnnl.hpp - float32 2-D Conv through oneDNN, planned once at create
// time for the input shape shape inference gave: oneDNN picks its blocked
// weight layout and the weights are reordered into it once; bias and the
// fused activation ride in the primitive. Activations stay NCHW between ops,
// so each run reorders the input in and the output out when oneDNN prefers a
// blocked layout for them (cheap next to the convolution itself). The output
// channels (groups, for grouped convs) are split into one part per core, run
// on the runtime's pool with oneDNN itself single-threaded.
#ifndef SINGA_OPS_NN_CONV_DNNL_HPP
#define SINGA_OPS_NN_CONV_DNNL_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

#include <memory>

namespace singa {
namespace nn {

using ops::FusedActivation;

class DnnlConv {
 public:
  // Null when oneDNN cannot take the node (not 2-D, not float, shape unknown, ...).
  static std::unique_ptr<DnnlConv> plan(const Shape& x, const sdk::Tensor& w, const sdk::Tensor& b, const Geometry& g,
                                        int64_t group, const FusedActivation& act);
  ~DnnlConv();
  const Shape& input_shape() const { return x_; }
  const Shape& output_shape() const { return y_; }
  // x and y are NCHW of input_shape()/output_shape().
  void run(const sdk::Context& ctx, const float* x, float* y) const;

 private:
  DnnlConv() = default;
  struct State;
  std::unique_ptr<State> s_;
  Shape x_, y_;
};

// Hands OpenBLAS the context's intra-op thread count (the --threads value).
void use_context_threads(const sdk::Context& ctx);

}  // namespace nn
}  // namespace singa
#endif
