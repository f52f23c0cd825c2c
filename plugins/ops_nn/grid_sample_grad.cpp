// GridSampleGrad (ai.singa): (dY, X, grid) -> (dX, dgrid), the backward of
// GridSample (grid_sample.cpp) with the forward node's attributes plus
// onnx_opset. It replays the forward's sampling, which is separable: along
// each spatial dim a coordinate gives up to 4 taps (index, weight), and a
// sample is the sum over tap combinations of the weights' product times X.
// dX scatters dY with those products; dgrid differentiates the weights with
// respect to the coordinate (times d coordinate / d grid, which the padding
// modes make 0 where clamped and -1 where reflected an odd number of times).
// Both of the forward's samplers are mirrored: the torch-style 2-D one
// (opset 16, and opset 20+ in 2-D except cubic with border/reflection) and
// the N-D one of ONNX's reference.
#include "nn_common.hpp"
#include "register.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

enum class Interp { kLinear, kNearest, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// One dim's taps for one grid point.
struct Taps {
  int n = 0;
  int64_t idx[4];  // -1 reads zero
  double w[4];     // weight
  double dw[4];    // d weight / d coordinate
  double dv = 0;   // d coordinate / d grid value
};

void cubic(double t, double* w, double* dw) {
  const double a = -0.75;
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  auto dnear = [&](double x) { return 3 * (a + 2) * x * x - 2 * (a + 3) * x; };
  auto dfar = [&](double x) { return 3 * a * x * x - 10 * a * x + 8 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
  dw[0] = dfar(t + 1);
  dw[1] = dnear(t);
  dw[2] = -dnear(1 - t);
  dw[3] = -dfar(2 - t);
}

// ONNX reference's reflection into [lo, hi]; *d gets its slope (+-1).
double reflect_into(double v, double lo, double hi, double* d) {
  const double range = hi - lo;
  *d = 1;
  if (!(range > 0)) {
    *d = 0;
    return lo;
  }
  if (v < lo) {
    const double m = std::fmod(lo - v, 2 * range);
    *d = m < range ? -1 : 1;
    return m < range ? lo + m : hi - (m - range);
  }
  if (v > hi) {
    const double m = std::fmod(v - hi, 2 * range);
    *d = m < range ? -1 : 1;
    return m < range ? hi - m : lo + (m - range);
  }
  return v;
}

class GridSampleGrad : public NodeKernel {
 public:
  explicit GridSampleGrad(const sdk::Node& node)
      : NodeKernel(node), nd_(node.attr_int("onnx_opset", 16) >= 20) {
    const std::string mode = node.attr_string("mode", nd_ ? "linear" : "bilinear");
    if (mode == "bilinear" || mode == "linear") interp_ = Interp::kLinear;
    else if (mode == "nearest") interp_ = Interp::kNearest;
    else if (mode == "bicubic" || mode == "cubic") interp_ = Interp::kCubic;
    else fail("attribute mode must be bilinear/linear, nearest or bicubic/cubic, got '" + mode + "'");
    const std::string pad = node.attr_string("padding_mode", "zeros");
    if (pad == "zeros") padding_ = Padding::kZeros;
    else if (pad == "border") padding_ = Padding::kBorder;
    else if (pad == "reflection") padding_ = Padding::kReflection;
    else fail("attribute padding_mode must be zeros, border or reflection, got '" + pad + "'");
    align_corners_ = node.attr_int("align_corners", 0) == 1;
    want_[0] = node.has_output(0);
    want_[1] = node.has_output(1);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), grid = required(ctx, 2, "grid");
    const Shape xs = x.shape(), gs = grid.shape();
    SINGA_CHECK(xs.size() >= 3 && xs.size() <= 10 && gs.size() == xs.size() && gs[0] == xs[0] &&
                    gs.back() == int64_t(xs.size() - 2),
                "X " + shape_str(xs) + " and grid " + shape_str(gs) + " do not fit GridSample");
    check(x.dtype() == grid.dtype() && dy.dtype() == x.dtype(), "dY, X and grid must have one type");
    const size_t r = xs.size() - 2;
    const int64_t N = xs[0], C = xs[1];
    std::vector<int64_t> dims(xs.begin() + 2, xs.end());
    int64_t vol = 1;
    for (int64_t d : dims) vol *= d;
    const int64_t points = sdk::numel(gs) / std::max<int64_t>(1, N * int64_t(r));
    SINGA_CHECK(dy.numel() == N * C * points, "dY " + shape_str(dy.shape()) + " does not match the sampled output");
    // The forward's choice of sampler (grid_sample.cpp's compute).
    const bool torch2d = !nd_ || (r == 2 && (interp_ != Interp::kCubic || padding_ == Padding::kZeros));
    sdk::Tensor dx, dg;
    if (want_[0]) dx = ctx.output(0, xs, x.dl_dtype());
    if (want_[1]) dg = ctx.output(1, gs, grid.dl_dtype());
    dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T *py = dy.data<T>(), *px = x.data<T>(), *pg = grid.data<T>();
      T* pdx = want_[0] ? dx.data<T>() : nullptr;
      T* pdg = want_[1] ? dg.data<T>() : nullptr;
      if (pdx) std::fill(pdx, pdx + x.numel(), T(0));
      if (pdg) std::fill(pdg, pdg + grid.numel(), T(0));
      ctx.parallel_for(N, 1, [&](int64_t nb, int64_t ne) {
        std::vector<Taps> taps(r);
        for (int64_t n = nb; n < ne; ++n)
          for (int64_t p = 0; p < points; ++p) {
            const T* g = pg + (n * points + p) * int64_t(r);
            bool zero = false;
            for (size_t i = 0; i < r && !zero; ++i)
              zero = !(torch2d ? taps_torch(double(g[r - 1 - i]), dims[i], taps[i])
                               : taps_nd(double(g[r - 1 - i]), dims[i], taps[i]));
            if (zero) continue;
            std::vector<double> dcoord(r, 0.0);
            for (int64_t c = 0; c < C; ++c) {
              const double gy = double(py[(n * C + c) * points + p]);
              const T* vx = px + (n * C + c) * vol;
              T* vdx = pdx ? pdx + (n * C + c) * vol : nullptr;
              each_combination(taps, dims, [&](int64_t at, const int* sel) {
                double wprod = 1;
                for (size_t i = 0; i < r; ++i) wprod *= taps[i].w[sel[i]];
                if (vdx) vdx[at] += T(gy * wprod);
                if (!pdg) return;
                const double v = double(vx[at]);
                for (size_t i = 0; i < r; ++i) {
                  double d = taps[i].dw[sel[i]];
                  for (size_t j = 0; j < r; ++j)
                    if (j != i) d *= taps[j].w[sel[j]];
                  dcoord[i] += gy * v * d;
                }
              });
            }
            if (pdg)
              for (size_t i = 0; i < r; ++i) pdg[(n * points + p) * int64_t(r) + int64_t(r - 1 - i)] += T(dcoord[i] * taps[i].dv);
          }
      });
    });
  }

 private:
  // Calls f(flat index, selection) for every tap combination that reads X.
  template <class F>
  static void each_combination(const std::vector<Taps>& taps, const std::vector<int64_t>& dims, F&& f) {
    const size_t r = taps.size();
    int sel[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (;;) {
      int64_t at = 0;
      bool zero = false;
      for (size_t i = 0; i < r; ++i) {
        const int64_t k = taps[i].idx[sel[i]];
        if (k < 0) zero = true;
        at = at * dims[i] + k;
      }
      if (!zero) f(at, sel);
      size_t i = r;
      while (i > 0 && ++sel[i - 1] == taps[i - 1].n) sel[--i] = 0;
      if (i == 0) break;
    }
  }

  // Grid value -> pixel coordinate, and its slope.
  double unnormalize(double g, int64_t size, double* slope) const {
    *slope = align_corners_ ? double(size - 1) / 2 : double(size) / 2;
    return align_corners_ ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
  }

  // Fills the linear or cubic taps from a coordinate v; index(k) maps tap k.
  template <class Index>
  void fill(double v, Taps& t, Index&& index) const {
    const double f = std::floor(v), frac = v - f;
    const int64_t k0 = int64_t(f);
    if (interp_ == Interp::kLinear) {
      t.n = 2;
      t.idx[0] = index(k0);
      t.idx[1] = index(k0 + 1);
      t.w[0] = 1 - frac;
      t.w[1] = frac;
      t.dw[0] = -1;
      t.dw[1] = 1;
    } else {
      t.n = 4;
      for (int j = 0; j < 4; ++j) t.idx[j] = index(k0 - 1 + j);
      cubic(frac, t.w, t.dw);
    }
  }

  // The torch-style 2-D sampler (grid_sample.cpp's Sampler). False: the
  // sample is zero.
  bool taps_torch(double g, int64_t size, Taps& t) const {
    double a;
    double v = unnormalize(g, size, &a);
    if (std::isnan(v)) return false;
    auto in_range = [&](int64_t k) { return k >= 0 && k < size ? k : int64_t(-1); };
    if (interp_ == Interp::kCubic) {
      if (padding_ == Padding::kReflection && !std::isfinite(v)) return false;
      double s = 1;
      v = tame(v, size, 4, &s);
      t.dv = a * s;
      fill(v, t, [&](int64_t k) {
        if (padding_ == Padding::kZeros) return in_range(k);
        double unused;
        return in_range(int64_t(std::nearbyint(pad_coord(double(k), size, &unused))));
      });
      return true;
    }
    double s = 1;
    v = pad_coord(v, size, &s);
    if (!std::isfinite(v)) return false;
    double s2 = 1;
    v = tame(v, size, 2, &s2);
    t.dv = a * s * s2;
    if (interp_ == Interp::kNearest) {
      t.n = 1;
      t.idx[0] = in_range(int64_t(std::nearbyint(v)));
      t.w[0] = 1;
      t.dw[0] = 0;
      return true;
    }
    fill(v, t, in_range);
    return true;
  }

  double tame(double v, int64_t size, double margin, double* s) const {
    if (padding_ == Padding::kReflection && std::isfinite(v)) {
      const double lo = align_corners_ ? 0 : -0.5, period = align_corners_ ? 2.0 * double(size - 1) : 2.0 * double(size);
      if (period > 0 && std::fabs(v) > 4 * period) v = lo + std::fmod(v - lo, period);
      return v;
    }
    const double c = std::min(std::max(v, -margin), double(size - 1) + margin);
    if (c != v) *s = 0;
    return c;
  }

  // Sampler::pad_coord with its slope.
  double pad_coord(double v, int64_t size, double* s) const {
    *s = 1;
    if (padding_ == Padding::kZeros) return v;
    if (padding_ == Padding::kReflection) {
      const double lo2 = align_corners_ ? 0 : -1, hi2 = align_corners_ ? 2.0 * double(size - 1) : 2.0 * double(size) - 1;
      if (lo2 == hi2) {
        v = 0;
        *s = 0;
      } else {
        const double lo = lo2 / 2, span = (hi2 - lo2) / 2;
        const double sign = v - lo < 0 ? -1 : 1;
        const double u = std::fabs(v - lo), extra = std::fmod(u, span);
        const int64_t flips = int64_t(std::floor(u / span));
        v = flips % 2 == 0 ? extra + lo : span - extra + lo;
        *s = flips % 2 == 0 ? sign : -sign;
      }
    }
    const double c = std::min(std::max(v, 0.0), double(size - 1));
    if (c != v) *s = 0;
    return c;
  }

  // The N-D sampler of ONNX's reference (grid_sample.cpp's NdSampler).
  bool taps_nd(double g, int64_t size, Taps& t) const {
    double a;
    double v = unnormalize(g, size, &a);
    if (std::isnan(v)) return false;
    const double lo = align_corners_ ? 0 : -0.5, hi = align_corners_ ? double(size - 1) : double(size) - 0.5;
    if (interp_ == Interp::kNearest) v = std::nearbyint(v);
    double s = 1;
    if (v < lo || v > hi) {
      if (padding_ == Padding::kBorder) {
        v = std::min(std::max(v, 0.0), double(size - 1));
        s = 0;
      } else if (padding_ == Padding::kReflection) {
        v = std::isfinite(v) ? reflect_into(v, lo, hi, &s) : 0;
      }
    }
    if (!std::isfinite(v)) return false;
    const double c = std::min(std::max(v, -4.0), double(size + 3));
    if (c != v) s = 0;
    v = c;
    t.dv = a * s;
    auto index = [&](int64_t k) -> int64_t {
      if (k >= 0 && k < size) return k;
      if (padding_ == Padding::kZeros) return -1;
      if (padding_ == Padding::kBorder) return k < 0 ? 0 : size - 1;
      double unused;
      const double rk = reflect_into(double(k), lo, hi, &unused);
      return std::min<int64_t>(std::max<int64_t>(int64_t(rk), 0), size - 1);
    };
    if (interp_ == Interp::kNearest) {
      t.n = 1;
      t.idx[0] = index(int64_t(v));
      t.w[0] = 1;
      t.dw[0] = 0;
      return true;
    }
    fill(v, t, index);
    return true;
  }

  bool nd_;
  Interp interp_ = Interp::kLinear;
  Padding padding_ = Padding::kZeros;
  bool align_corners_ = false;
  bool want_[2] = {true, true};
};

}  // namespace

void register_grid_sample_grad(sdk::Registrar& reg) {
  const uint64_t types = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE);
  reg.kernel<GridSampleGrad>("ai.singa", "GridSampleGrad", 1, 1, "cpu", {{"T", 1, types}});
}

}  // namespace nn
}  // namespace singa
