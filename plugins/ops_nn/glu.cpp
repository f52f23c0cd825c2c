// ai.singa.cpu Glu: a gated linear unit, X split into two equal halves a and b
// along `axis` and Y = a * sigmoid(b) (attribute gate = 1; gate = 0 gates
// the other way, Y = b * sigmoid(a)). passes/fuse_glu.cpp makes it from the
// Split -> Sigmoid -> Mul that torch exports for nn.GLU, so the halves are
// read once and no Split copies or Sigmoid result go through memory.
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"

#include <cpu_domain.hpp>
#include <unary_f32.hpp>

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

// y = v * sigmoid(g) over n floats, in blocks small enough that the sigmoid
// written into y is still in cache when the product reads it back.
void glu_f32(const float* v, const float* g, float* y, int64_t n) {
  constexpr int64_t kBlock = 1024;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    float* yb = y + i0;
    if (!vec::unary_run(vec::UnaryKind::kSigmoid, vec::UnaryType::kFloat, vec::UnaryParams(), g + i0, yb, m))
      for (int64_t i = 0; i < m; ++i) yb[i] = 1.f / (1.f + std::exp(-g[i0 + i]));
    const float* vb = v + i0;
    for (int64_t i = 0; i < m; ++i) yb[i] *= vb[i];
  }
}

class Glu : public NodeKernel {
 public:
  explicit Glu(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", -1)), gate_(node.attr_int("gate", 1)) {
    check(gate_ == 0 || gate_ == 1, "attribute gate must be 0 or 1");
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = required(ctx, 0, "X");
    check(x.dtype() == SINGA_ONNX_FLOAT, "X must be float");
    Shape s = x.shape();
    const int64_t r = int64_t(s.size());
    const int64_t ax = axis_ < 0 ? axis_ + r : axis_;
    SINGA_CHECK(ax >= 0 && ax < r, "axis " + std::to_string(axis_) + " is out of range for X " + shape_str(s));
    SINGA_CHECK(s[size_t(ax)] % 2 == 0, "X " + shape_str(s) + " has an odd size on axis " + std::to_string(axis_));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < ax; ++d) outer *= s[size_t(d)];
    for (int64_t d = ax + 1; d < r; ++d) inner *= s[size_t(d)];
    s[size_t(ax)] /= 2;
    const int64_t half = s[size_t(ax)] * inner;  // floats per half per outer index
    sdk::Tensor y = ctx.output(0, s, x.dl_dtype());
    if (outer * half == 0) return;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const int64_t gv = gate_ ? half : 0, vv = gate_ ? 0 : half;  // offsets of the gate and the value
    // Parallel over (outer index, block of the half) so that one outer row or many split evenly.
    const int64_t block = std::max<int64_t>(1, std::min<int64_t>(half, 16384));
    const int64_t per = (half + block - 1) / block;
    ctx.parallel_for(outer * per, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / per, b0 = (t % per) * block, n = std::min(block, half - b0);
        const float* row = px + o * 2 * half;
        glu_f32(row + vv + b0, row + gv + b0, py + o * half + b0, n);
      }
    });
  }

 private:
  int64_t axis_, gate_;
};

}  // namespace

void register_glu(sdk::Registrar& reg) {
  reg.kernel<Glu>(ops::kCpuDomain, "Glu", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
