// scaled_add.cpp - an op pack built outside the singa tree, against nothing
// but the installed SDK headers (pkg-config: singa-sdk).
//
// com.example::ScaledAdd, opset 1 of the com.example domain:
//   inputs  A: T, B: T      (B has A's shape, or holds a single element)
//   output  C: T            C = A + alpha * B
//   attribute alpha: float, default 1.0
//   T: float or double
//
// It is trainable: `backward` below is its backward kernel, which the host
// finds on the kernel (Registrar::kernel sees the member) and runs in
// autograd's backward pass: dA = dC, dB = alpha * dC (summed when B holds a
// single element).
#include <singa/kernel.hpp>

#include <cmath>
#include <string>

namespace {

using singa::sdk::Context;
using singa::sdk::Node;
using singa::sdk::Shape;
using singa::sdk::Tensor;

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

class ScaledAdd {
 public:
  // Runs once per node when the model is prepared: attributes are read and
  // checked here, so compute never has to.
  explicit ScaledAdd(const Node& node) : alpha_(node.attr_float("alpha", 1.0f)), name_(node.name()) {
    if (node.num_inputs() != 2 || node.num_outputs() != 1) node.fail("expects inputs A, B and one output C");
    if (!std::isfinite(alpha_)) node.fail("attribute alpha must be finite, got " + std::to_string(alpha_));
  }

  // May run on several threads at once for different requests: it only reads
  // the members set by the constructor.
  void compute(Context& ctx) const {
    auto a = ctx.input(0), b = ctx.input(1);
    if (a.dtype() != b.dtype())
      singa::sdk::fail("ScaledAdd node '" + name_ + "': A is " + singa::sdk::dtype_name(a.dtype()) + " but B is " +
                       singa::sdk::dtype_name(b.dtype()));
    if (b.numel() != 1 && a.shape() != b.shape())
      singa::sdk::fail("ScaledAdd node '" + name_ + "': B has shape " + shape_str(b.shape()) +
                       "; it must have A's shape " + shape_str(a.shape()) + " or hold a single element");
    auto c = ctx.output(0, a.shape(), a.dtype());
    // The host has already checked T against the registered constraint.
    if (a.dtype() == SINGA_ONNX_DOUBLE) run<double>(ctx, a, b, c);
    else run<float>(ctx, a, b, c);
  }

  // Inputs: the forward inputs A, B, the forward output C, then dC (absent
  // when no gradient reached C). Outputs: dA and dB.
  void backward(Context& ctx) const {
    auto a = ctx.input(0), b = ctx.input(1);
    if (!ctx.has_input(3)) singa::sdk::fail("ScaledAdd node '" + name_ + "': backward without dC");
    auto dc = ctx.input(3);
    auto da = ctx.output(0, a.shape(), a.dtype());
    auto db = ctx.output(1, b.shape(), b.dtype());
    if (a.dtype() == SINGA_ONNX_DOUBLE) run_backward<double>(dc, da, db);
    else run_backward<float>(dc, da, db);
  }

  static constexpr uint64_t kTypes = singa::sdk::bit(SINGA_ONNX_FLOAT) | singa::sdk::bit(SINGA_ONNX_DOUBLE);

 private:
  template <typename T>
  void run(Context& ctx, const Tensor& a, const Tensor& b, const Tensor& c) const {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.data<T>();
    const T alpha = static_cast<T>(alpha_);
    const bool scalar_b = b.numel() == 1;
    // Ranges are disjoint, so the pool's threads never write the same element.
    ctx.parallel_for(a.numel(), 16384, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) pc[i] = pa[i] + alpha * pb[scalar_b ? 0 : i];
    });
  }

  template <typename T>
  void run_backward(const Tensor& dc, const Tensor& da, const Tensor& db) const {
    const T* g = dc.data<T>();
    T *ga = da.data<T>(), *gb = db.data<T>();
    const T alpha = static_cast<T>(alpha_);
    const bool scalar_b = db.numel() == 1;
    T sum = 0;
    for (int64_t i = 0; i < dc.numel(); ++i) {
      ga[i] = g[i];
      if (scalar_b) sum += alpha * g[i];
      else gb[i] = alpha * g[i];
    }
    if (scalar_b) gb[0] = sum;
  }

  float alpha_;
  std::string name_;
};

}  // namespace

SINGA_PLUGIN("example_custom_op", "1.0.0", "Worked example: com.example::ScaledAdd, C = A + alpha * B") {
  // One constraint per type parameter, at an input where it is seen: the host
  // refuses a node whose A is not float/double before create is called (B is
  // checked against A in compute). com.example opset 1 is the only version.
  reg.kernel<ScaledAdd>("com.example", "ScaledAdd", 1, 1, "cpu", {{"T", 0, ScaledAdd::kTypes}});
}
