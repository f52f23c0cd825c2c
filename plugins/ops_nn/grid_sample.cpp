// GridSample (opset 16): samples a 4-D input at the normalised (x, y)
// locations of a flow-field grid, with bilinear, nearest or bicubic
// interpolation and zeros, border or reflection padding. The coordinate
// conventions are those of torch.nn.functional.grid_sample, which the ONNX
// operator was defined after.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

enum class Interp { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

template <class A>
struct Sampler {
  Interp interp;
  Padding padding;
  bool align_corners;
  int64_t h, w;
  const A* plane;  // one (n, c) image, row-major h x w

  // Grid coordinate in [-1, 1] -> pixel coordinate. With align_corners -1 and 1
  // are the centres of the corner pixels, otherwise their outer edges.
  A unnormalize(A g, int64_t size) const {
    return align_corners ? (g + A(1)) / A(2) * A(size - 1) : ((g + A(1)) * A(size) - A(1)) / A(2);
  }

  // Folds v back into [lo2/2, hi2/2] by mirroring at the bounds (given doubled
  // so that half-pixel bounds stay integral).
  static A reflect(A v, A lo2, A hi2) {
    if (lo2 == hi2) return A(0);
    A lo = lo2 / A(2), span = (hi2 - lo2) / A(2);
    v = std::fabs(v - lo);
    A extra = std::fmod(v, span);
    int64_t flips = int64_t(std::floor(v / span));
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
  }

  static A clip(A v, int64_t size) { return std::min(std::max(v, A(0)), A(size - 1)); }

  // Keeps a far-away coordinate in a range where integer conversion is
  // defined, without changing which taps it reads: beyond `margin` pixels
  // outside the image every tap reads zero or the border. Reflection is
  // periodic, so there the coordinate moves by whole periods instead.
  A tame(A v, int64_t size, A margin) const {
    if (padding == Padding::kReflection && std::isfinite(v)) {
      A lo = align_corners ? A(0) : A(-0.5);
      A period = align_corners ? A(2 * (size - 1)) : A(2 * size);
      if (period > A(0) && std::fabs(v) > A(4) * period) v = lo + std::fmod(v - lo, period);
      return v;
    }
    return std::min(std::max(v, -margin), A(size - 1) + margin);
  }

  // Applies the padding mode to a source coordinate.
  A pad_coord(A v, int64_t size) const {
    if (padding == Padding::kBorder) return clip(v, size);
    if (padding == Padding::kReflection) {
      v = align_corners ? reflect(v, A(0), A(2 * (size - 1))) : reflect(v, A(-1), A(2 * size - 1));
      return clip(v, size);
    }
    return v;
  }

  A at(int64_t y, int64_t x) const { return (y >= 0 && y < h && x >= 0 && x < w) ? plane[y * w + x] : A(0); }

  // Bicubic taps outside the image go through the padding mode one by one.
  A at_padded(int64_t y, int64_t x) const {
    if (padding == Padding::kZeros) return at(y, x);
    A py = pad_coord(A(y), h), px = pad_coord(A(x), w);
    return at(int64_t(std::nearbyint(py)), int64_t(std::nearbyint(px)));
  }

  // Keys' cubic convolution kernel with a = -0.75 (the value torch uses).
  static void cubic_weights(A t, A wt[4]) {
    const A a = A(-0.75);
    auto near = [&](A x) { return ((a + A(2)) * x - (a + A(3))) * x * x + A(1); };
    auto far = [&](A x) { return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a; };
    wt[0] = far(t + A(1));
    wt[1] = near(t);
    wt[2] = near(A(1) - t);
    wt[3] = far(A(2) - t);
  }

  A sample(A gx, A gy) const {
    A x = unnormalize(gx, w), y = unnormalize(gy, h);
    if (std::isnan(x) || std::isnan(y)) return A(0);
    if (interp == Interp::kBicubic) {
      if (padding == Padding::kReflection && !(std::isfinite(x) && std::isfinite(y))) return A(0);
      x = tame(x, w, A(4));
      y = tame(y, h, A(4));
      A x0 = std::floor(x), y0 = std::floor(y);
      A wx[4], wy[4];
      cubic_weights(x - x0, wx);
      cubic_weights(y - y0, wy);
      int64_t ix = int64_t(x0) - 1, iy = int64_t(y0) - 1;
      A sum = A(0);
      for (int j = 0; j < 4; ++j) {
        A row = A(0);
        for (int i = 0; i < 4; ++i) row += wx[i] * at_padded(iy + j, ix + i);
        sum += wy[j] * row;
      }
      return sum;
    }
    x = pad_coord(x, w);
    y = pad_coord(y, h);
    if (!(std::isfinite(x) && std::isfinite(y))) return A(0);
    x = tame(x, w, A(2));
    y = tame(y, h, A(2));
    if (interp == Interp::kNearest) return at(int64_t(std::nearbyint(y)), int64_t(std::nearbyint(x)));
    A x0 = std::floor(x), y0 = std::floor(y);
    A tx = x - x0, ty = y - y0;
    int64_t ix = int64_t(x0), iy = int64_t(y0);
    return (A(1) - ty) * ((A(1) - tx) * at(iy, ix) + tx * at(iy, ix + 1)) +
           ty * ((A(1) - tx) * at(iy + 1, ix) + tx * at(iy + 1, ix + 1));
  }
};

class GridSample : public NodeKernel {
 public:
  explicit GridSample(const sdk::Node& node) : NodeKernel(node) {
    std::string mode = node.attr_string("mode", "bilinear");
    if (mode == "bilinear") interp_ = Interp::kBilinear;
    else if (mode == "nearest") interp_ = Interp::kNearest;
    else if (mode == "bicubic") interp_ = Interp::kBicubic;
    else node.fail("attribute mode must be bilinear, nearest or bicubic, got '" + mode + "'");
    std::string pad = node.attr_string("padding_mode", "zeros");
    if (pad == "zeros") padding_ = Padding::kZeros;
    else if (pad == "border") padding_ = Padding::kBorder;
    else if (pad == "reflection") padding_ = Padding::kReflection;
    else node.fail("attribute padding_mode must be zeros, border or reflection, got '" + pad + "'");
    int64_t ac = node.attr_int("align_corners", 0);
    if (ac != 0 && ac != 1) node.fail("attribute align_corners must be 0 or 1, got " + std::to_string(ac));
    align_corners_ = ac == 1;
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor grid = required(ctx, 1, "grid");
    check(x.ndim() == 4, "X must be 4-D (N, C, H, W), got shape " + shape_str(x.shape()));
    check(grid.ndim() == 4 && grid.dim(3) == 2 && grid.dim(0) == x.dim(0),
          "grid must have shape (N, H_out, W_out, 2) with N = " + std::to_string(x.dim(0)) + ", got " +
              shape_str(grid.shape()));
    int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    int64_t ho = grid.dim(1), wo = grid.dim(2);
    check((h > 0 && w > 0) || n * c == 0, "X has an empty spatial extent " + shape_str(x.shape()));
    sdk::Tensor y = ctx.output(0, {n, c, ho, wo}, x.dl_dtype());
    int64_t out_plane = ho * wo;
    dispatch_real(x.dtype(), where(), [&](auto xtag) {
      using T = decltype(xtag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      dispatch_real(grid.dtype(), where(), [&](auto gtag) {
        using G = decltype(gtag);
        const G* pg = grid.data<G>();
        // Half-precision planes are widened once per plane, not once per tap.
        ctx.parallel_for(n * c, 1, [&](int64_t b, int64_t e) {
          std::vector<A> plane(size_t(h * w));
          for (int64_t nc = b; nc < e; ++nc) {
            const T* src = px + nc * h * w;
            for (int64_t i = 0; i < h * w; ++i) plane[size_t(i)] = to_acc<A>(src[i]);
            Sampler<A> s{interp_, padding_, align_corners_, h, w, plane.data()};
            const G* g = pg + (nc / c) * out_plane * 2;
            T* dst = py + nc * out_plane;
            for (int64_t i = 0; i < out_plane; ++i)
              dst[i] = from_acc<T>(s.sample(to_acc<A>(g[2 * i]), to_acc<A>(g[2 * i + 1])));
          }
        });
      });
    });
  }

 private:
  Interp interp_ = Interp::kBilinear;
  Padding padding_ = Padding::kZeros;
  bool align_corners_ = false;
};

}  // namespace

void register_grid_sample(sdk::Registrar& reg) {
  // Interpolation needs arithmetic, so of the types ONNX 1.12 lists for X only
  // the real ones are implemented.
  reg.kernel<GridSample>("", "GridSample", 16, 17, "cpu", {{"T1", 0, kRealTypes}, {"T2", 1, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
