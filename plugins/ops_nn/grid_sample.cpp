// GridSample: samples the input at the normalised locations of a flow-field
// grid, with zeros, border or reflection padding. Opset 16 is 2-D only, with
// modes bilinear, nearest and bicubic, and follows
// torch.nn.functional.grid_sample, which the ONNX operator was defined after.
// Opset 20 takes any number of spatial dims and renames the modes linear,
// nearest and cubic; it follows ONNX's reference implementation (coordinates
// padded first, then every tap padded again), which for 2-D gives torch's
// results except for cubic with border or reflection padding.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace singa {
namespace nn {
namespace {

enum class Interp { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

// Keys' cubic convolution weights with a = -0.75 (the value torch uses) for
// the taps at -1, 0, 1 and 2 from the fraction t.
template <class A>
void cubic_weights(A t, A* wt) {
  const A a = A(-0.75);
  auto near = [&](A x) { return ((a + A(2)) * x - (a + A(3))) * x * x + A(1); };
  auto far = [&](A x) { return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a; };
  wt[0] = far(t + A(1));
  wt[1] = near(t);
  wt[2] = near(A(1) - t);
  wt[3] = far(A(2) - t);
}

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

// Reflects v into [lo, hi] by mirroring at the bounds, as many times as it
// takes (ONNX reference's _gs_reflect, without its loop over periods).
template <class A>
A reflect_into(A v, A lo, A hi) {
  const A range = hi - lo;
  if (!(range > A(0))) return lo;
  if (v < lo) {
    const A m = std::fmod(lo - v, A(2) * range);
    return m < range ? lo + m : hi - (m - range);
  }
  if (v > hi) {
    const A m = std::fmod(v - hi, A(2) * range);
    return m < range ? hi - m : lo + (m - range);
  }
  return v;
}

// The opset-20 sampler over any number of spatial dims (X's order, slowest
// first); grid points list their coordinates fastest dim first (x, y, ...).
template <class A>
struct NdSampler {
  Interp interp;
  Padding padding;
  bool align_corners;
  std::vector<int64_t> dims;  // spatial dims of X
  const A* volume;            // one (n, c) volume, row-major

  A lo(size_t i) const { return align_corners ? A(0) : A(-0.5); }
  A hi(size_t i) const { return align_corners ? A(dims[i] - 1) : A(dims[i]) - A(0.5); }

  // A tap index along dim i through the padding: -1 reads zero.
  int64_t pad_index(int64_t k, size_t i) const {
    const int64_t d = dims[i];
    if (k >= 0 && k < d) return k;
    if (padding == Padding::kZeros) return -1;
    if (padding == Padding::kBorder) return k < 0 ? 0 : d - 1;
    const A r = reflect_into(A(k), lo(i), hi(i));
    return std::min<int64_t>(std::max<int64_t>(int64_t(r), 0), d - 1);
  }

  // g: the grid point's coordinates (x first). idx/wt: scratch of 4 per dim.
  A sample(const A* g, int64_t* idx, A* wt) const {
    const size_t nd = dims.size();
    const int taps = interp == Interp::kNearest ? 1 : interp == Interp::kBilinear ? 2 : 4;
    for (size_t i = 0; i < nd; ++i) {
      const int64_t d = dims[i];
      const A gn = g[nd - 1 - i];
      A v = align_corners ? (gn + A(1)) / A(2) * A(d - 1) : ((gn + A(1)) * A(d) - A(1)) / A(2);
      if (std::isnan(v)) return A(0);
      if (interp == Interp::kNearest) v = std::nearbyint(v);  // half to even, as torch since 2.1
      if (v < lo(i) || v > hi(i)) {
        if (padding == Padding::kBorder)
          v = std::min(std::max(v, A(0)), A(d - 1));
        else if (padding == Padding::kReflection)
          v = std::isfinite(v) ? reflect_into(v, lo(i), hi(i)) : A(0);
      }
      if (!std::isfinite(v)) return A(0);
      // Far outside, every tap reads zero or the border: clamping keeps the
      // integer conversion defined without changing what is read.
      v = std::min(std::max(v, A(-4)), A(d + 3));
      int64_t* ix = idx + 4 * i;
      A* w = wt + 4 * i;
      if (interp == Interp::kNearest) {
        ix[0] = pad_index(int64_t(v), i);
        w[0] = A(1);
        continue;
      }
      const A f = std::floor(v);
      const int64_t k0 = int64_t(f);
      const A t = v - f;
      if (interp == Interp::kBilinear) {
        ix[0] = pad_index(k0, i);
        ix[1] = pad_index(k0 + 1, i);
        w[0] = A(1) - t;
        w[1] = t;
      } else {
        for (int j = 0; j < 4; ++j) ix[j] = pad_index(k0 - 1 + j, i);
        cubic_weights(t, w);
      }
    }
    // Sum over every combination of taps (last dim fastest).
    int sel[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    A sum = A(0);
    for (;;) {
      A wprod = A(1);
      int64_t at = 0;
      bool zero = false;
      for (size_t i = 0; i < nd; ++i) {
        const int64_t k = idx[4 * i + size_t(sel[i])];
        if (k < 0) zero = true;
        at = at * dims[i] + k;
        wprod *= wt[4 * i + size_t(sel[i])];
      }
      if (!zero) sum += wprod * volume[at];
      size_t i = nd;
      while (i > 0 && ++sel[i - 1] == taps) sel[--i] = 0;
      if (i == 0) break;
    }
    return sum;
  }
};

class GridSample : public NodeKernel {
 public:
  explicit GridSample(const sdk::Node& node) : NodeKernel(node), nd_(node.opset() >= 20) {
    std::string mode = node.attr_string("mode", nd_ ? "linear" : "bilinear");
    if (mode == (nd_ ? "linear" : "bilinear")) interp_ = Interp::kBilinear;
    else if (mode == "nearest") interp_ = Interp::kNearest;
    else if (mode == (nd_ ? "cubic" : "bicubic")) interp_ = Interp::kBicubic;
    else
      node.fail(std::string("attribute mode must be ") + (nd_ ? "linear, nearest or cubic" : "bilinear, nearest or bicubic") +
                ", got '" + mode + "'");
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
    // In 2-D the torch-style sampler gives the reference's results (and is
    // faster) except for cubic with border or reflection padding.
    if (nd_ && !(ctx.input(0).present() && ctx.input(0).ndim() == 4 &&
                 (interp_ != Interp::kBicubic || padding_ == Padding::kZeros)))
      return compute_nd(ctx);
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor grid = required(ctx, 1, "grid");
    SINGA_CHECK(x.ndim() == 4, "X must be 4-D (N, C, H, W), got shape " + shape_str(x.shape()));
    SINGA_CHECK(grid.ndim() == 4 && grid.dim(3) == 2 && grid.dim(0) == x.dim(0),
                "grid must have shape (N, H_out, W_out, 2) with N = " + std::to_string(x.dim(0)) + ", got " +
                    shape_str(grid.shape()));
    int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    int64_t ho = grid.dim(1), wo = grid.dim(2);
    SINGA_CHECK((h > 0 && w > 0) || n * c == 0, "X has an empty spatial extent " + shape_str(x.shape()));
    sdk::Tensor y = ctx.output(0, {n, c, ho, wo}, x.dl_dtype());
    int64_t out_plane = ho * wo;
    each_volume(ctx, x, grid, y, c, h * w, out_plane, 2, [&](const auto* plane, const auto* g, auto* dst) {
      using A = std::remove_const_t<std::remove_pointer_t<decltype(plane)>>;
      using T = std::remove_pointer_t<decltype(dst)>;
      Sampler<A> s{interp_, padding_, align_corners_, h, w, plane};
      for (int64_t i = 0; i < out_plane; ++i)
        dst[i] = from_acc<T>(s.sample(to_acc<A>(g[2 * i]), to_acc<A>(g[2 * i + 1])));
    });
  }

 private:
  // Opset 20: X (N, C, D1, ..., Dr), grid (N, D1_out, ..., Dr_out, r).
  void compute_nd(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor grid = required(ctx, 1, "grid");
    const Shape xs = x.shape(), gs = grid.shape();
    SINGA_CHECK(xs.size() >= 3 && xs.size() <= 10,
                "X must be (N, C, D1, ..., Dr) with 1 to 8 spatial dims, got shape " + shape_str(xs));
    const size_t r = xs.size() - 2;
    SINGA_CHECK(gs.size() == r + 2 && gs[0] == xs[0] && gs[r + 1] == int64_t(r),
                "grid must have shape (N, D1_out, ..., D" + std::to_string(r) + "_out, " + std::to_string(r) +
                    ") with N = " + std::to_string(xs[0]) + " for X of shape " + shape_str(xs) + ", got " +
                    shape_str(gs));
    const int64_t n = xs[0], c = xs[1];
    std::vector<int64_t> dims(xs.begin() + 2, xs.end());
    int64_t vol = 1;
    for (int64_t d : dims) vol *= d;
    SINGA_CHECK(vol > 0 || n * c == 0, "X has an empty spatial extent " + shape_str(xs));
    Shape ys{n, c};
    ys.insert(ys.end(), gs.begin() + 1, gs.end() - 1);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const int64_t out_points = sdk::numel(ys) / std::max<int64_t>(1, n * c);
    if (sdk::numel(ys) == 0) return;
    each_volume(ctx, x, grid, y, c, vol, out_points, int64_t(r), [&](const auto* volume, const auto* g, auto* dst) {
      using A = std::remove_const_t<std::remove_pointer_t<decltype(volume)>>;
      using T = std::remove_pointer_t<decltype(dst)>;
      NdSampler<A> s{interp_, padding_, align_corners_, dims, volume};
      int64_t idx[4 * 8];  // NdSampler::sample's scratch: 4 per dim, at most 8 dims
      A wt[4 * 8], gp[8];
      for (int64_t i = 0; i < out_points; ++i) {
        for (size_t k = 0; k < r; ++k) gp[k] = to_acc<A>(g[i * int64_t(r) + int64_t(k)]);
        dst[i] = from_acc<T>(s.sample(gp, idx, wt));
      }
    });
  }

  // Runs sample(volume, g, dst) for each (n, c) volume of X: `vol` elements,
  // widened to the arithmetic type once per volume rather than once per tap;
  // g the `points` grid points of sample n, `r` coordinates each; dst the
  // volume's `points` outputs.
  template <class Sample>
  void each_volume(sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& grid, const sdk::Tensor& y, int64_t c,
                   int64_t vol, int64_t points, int64_t r, Sample&& sample) const {
    dispatch_real(x.dtype(), where(), [&](auto xtag) {
      using T = decltype(xtag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      dispatch_real(grid.dtype(), where(), [&](auto gtag) {
        using G = decltype(gtag);
        const G* pg = grid.data<G>();
        ctx.parallel_for(x.dim(0) * c, 1, [&](int64_t b, int64_t e) {
          std::vector<A> volume(static_cast<size_t>(vol));
          for (int64_t nc = b; nc < e; ++nc) {
            const T* src = px + nc * vol;
            for (int64_t i = 0; i < vol; ++i) volume[size_t(i)] = to_acc<A>(src[i]);
            const A* cv = volume.data();
            sample(cv, pg + (nc / c) * points * r, py + nc * points);
          }
        });
      });
    });
  }

  bool nd_;
  Interp interp_ = Interp::kBilinear;
  Padding padding_ = Padding::kZeros;
  bool align_corners_ = false;
};

}  // namespace

void register_grid_sample(sdk::Registrar& reg) {
  // Interpolation needs arithmetic, so of the types ONNX 1.12 lists for X only
  // the real ones are implemented.
  reg.kernel<GridSample>("", "GridSample", 16, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kRealTypes}, {"T2", 1, kRealTypes}});
  // 20: any number of spatial dims, modes renamed; 22 adds bfloat16 (taken
  // already). The integer and bool types 20 lists for X are not implemented.
  reg.kernel<GridSample>("", "GridSample", 20, 20, "cpu", {{"T1", 0, kRealTypes}, {"T2", 1, kRealTypes}});
  reg.kernel<GridSample>("", "GridSample", 22, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kRealTypes}, {"T2", 1, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
