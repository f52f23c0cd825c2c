// Resize (opsets 10, 11-12, 13-17) and its deprecated form Upsample (7-8, 9).
//
// Every axis is resampled independently: for each output coordinate the
// coordinate transformation gives a position in the input, and the mode gives
// a small set of (input index, weight) taps around it. Nearest mode is then a
// pure gather (exact for every dtype); linear and cubic apply the taps one
// axis at a time in double, which equals the n-linear / n-cubic product of
// the spec because the per-axis weights do not depend on the other axes.
#include "common.hpp"
#include "registry.hpp"
#include "resize_f32.hpp"

#include <half_convert_f32.hpp>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kTfHalfPixelForNN,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize
};
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };
enum class Round { kPreferFloor, kPreferCeil, kFloor, kCeil };

// The taps of one axis: output coordinate o uses taps [o*ntaps, (o+1)*ntaps),
// or the extrapolation value when outside[o] (tf_crop_and_resize only).
struct AxisMap {
  int64_t in = 0, out = 0;
  int ntaps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;
  bool identity() const {
    if (in != out) return false;
    for (int64_t o = 0; o < out; ++o) {
      if (outside[size_t(o)]) return false;
      for (int k = 0; k < ntaps; ++k) {
        size_t t = size_t(o * ntaps + k);
        if (w[t] != 0.0 && (idx[t] != o || w[t] != 1.0)) return false;
      }
    }
    return true;
  }
};

template <typename T>
double to_double(T v) {
  if constexpr (std::is_arithmetic<T>::value) return static_cast<double>(v);
  else return static_cast<double>(static_cast<float>(v));
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same<T, bool>::value) return v != 0.0;
  else if constexpr (std::is_integral<T>::value) return static_cast<T>(std::nearbyint(v));
  else if constexpr (std::is_arithmetic<T>::value) return static_cast<T>(v);
  else return T(static_cast<float>(v));
}

// A float tensor (scales, roi) read on the host.
std::vector<double> read_floats(const Tensor& t, const char* what) {
  std::vector<double> v(size_t(t.numel()));
  int32_t dt = t.dtype();
  if ((sdk::bit(dt) & sdk::kFloatTypes) == 0)
    sdk::fail(std::string("input '") + what + "' must hold floats, got " + sdk::dtype_name(dt));
  sdk::dispatch(
      dt,
      [&](auto tag) {
        using T = decltype(tag);
        const T* p = t.data<T>();
        for (size_t i = 0; i < v.size(); ++i) v[i] = to_double(p[i]);
      },
      sdk::kFloatTypes);
  return v;
}

class Resize : public KernelBase {
 public:
  explicit Resize(const Node& node) : KernelBase(node), opset_(node.opset()), upsample_(node.op_type() == "Upsample") {
    std::string mode = node.attr_string("mode", "nearest");
    if (mode == "linear" || (mode == "bilinear" && upsample_ && opset_ < 9)) mode_ = Mode::kLinear;
    else if (mode == "cubic" && !upsample_ && opset_ >= 11) mode_ = Mode::kCubic;
    else if (mode != "nearest")
      node.fail("attribute 'mode' must be nearest, linear" + std::string(!upsample_ && opset_ >= 11 ? " or cubic" : "") +
                ", got '" + mode + "'");
    if (upsample_ && opset_ < 9) {
      if (!node.has_attr("scales")) node.fail("attribute 'scales' is required");
      for (float s : node.attr_floats("scales")) attr_scales_.push_back(double(s));
    }
    // Before opset 11 the input position is always x_out / scale and nearest
    // takes its floor.
    if (upsample_ || opset_ < 11) {
      coord_ = Coord::kAsymmetric;
      round_ = Round::kFloor;
      return;
    }
    std::string ct = node.attr_string("coordinate_transformation_mode", "half_pixel");
    if (ct == "half_pixel") coord_ = Coord::kHalfPixel;
    else if (ct == "half_pixel_symmetric" && opset_ >= 19) coord_ = Coord::kHalfPixelSymmetric;
    else if (ct == "pytorch_half_pixel") coord_ = Coord::kPytorchHalfPixel;
    else if (ct == "align_corners") coord_ = Coord::kAlignCorners;
    else if (ct == "asymmetric") coord_ = Coord::kAsymmetric;
    else if (ct == "tf_crop_and_resize") coord_ = Coord::kTfCropAndResize;
    else if (ct == "tf_half_pixel_for_nn") coord_ = Coord::kTfHalfPixelForNN;
    else node.fail("attribute 'coordinate_transformation_mode' has unknown value '" + ct + "'");
    std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") round_ = Round::kPreferFloor;
    else if (nm == "round_prefer_ceil") round_ = Round::kPreferCeil;
    else if (nm == "floor") round_ = Round::kFloor;
    else if (nm == "ceil") round_ = Round::kCeil;
    else node.fail("attribute 'nearest_mode' has unknown value '" + nm + "'");
    cubic_a_ = double(node.attr_float("cubic_coeff_a", -0.75f));
    exclude_outside_ = node.attr_int("exclude_outside", 0) != 0;
    extrapolation_ = double(node.attr_float("extrapolation_value", 0.f));
    if (opset_ >= 18) {
      // antialias only changes linear and cubic downscaling.
      antialias_ = node.attr_int("antialias", 0) != 0 && mode_ != Mode::kNearest;
      if (node.has_attr("axes")) {
        axes_ = node.attr_ints("axes");
        has_axes_ = true;
      }
      std::string kp = node.attr_string("keep_aspect_ratio_policy", "stretch");
      if (kp == "not_larger") policy_ = AspectPolicy::kNotLarger;
      else if (kp == "not_smaller") policy_ = AspectPolicy::kNotSmaller;
      else if (kp != "stretch")
        node.fail("attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or not_smaller, got '" + kp + "'");
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "X");
    const Shape in = x.shape();
    const size_t r = in.size();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    // The resized axes (all of them unless Resize-18's `axes` says otherwise).
    std::vector<size_t> axes = resized_axes(r);
    target(ctx, in, axes, scales, sizes);
    std::vector<double> roi = read_roi(ctx, r, axes);
    // keep_aspect_ratio_policy: one scale for every resized axis, the smallest
    // (not_larger) or largest (not_smaller) that sizes asks for.
    bool one_scale = !sizes.empty() && policy_ != AspectPolicy::kStretch;
    double common = 0.0;
    if (one_scale) {
      bool first = true;
      for (size_t d : axes) {
        SINGA_CHECK(in[d] > 0, "keep_aspect_ratio_policy cannot resize the empty axis " + std::to_string(d));
        check(sizes[d] >= 0, "sizes must not be negative");
        double s = double(sizes[d]) / double(in[d]);
        if (first || (policy_ == AspectPolicy::kNotLarger ? s < common : s > common)) common = s;
        first = false;
      }
      if (first) one_scale = false;  // no axes: nothing to resize
    }

    std::vector<AxisMap> maps(r);
    Shape out(r);
    std::vector<double> axis_scale(r), axis_width(r);
    for (size_t d = 0; d < r; ++d) {
      AxisMap& m = maps[d];
      m.in = in[d];
      double& scale = axis_scale[d];
      double& width = axis_width[d];
      if (one_scale) {
        bool resized = std::find(axes.begin(), axes.end(), d) != axes.end();
        scale = resized ? common : 1.0;
        width = scale * double(m.in);
        SINGA_CHECK(width < 9.0e18, "sizes give axis " + std::to_string(d) + " a size of " + std::to_string(width));
        m.out = resized ? int64_t(width + 0.5) : m.in;  // rounds half up
      } else if (!sizes.empty()) {
        m.out = sizes[d];
        SINGA_CHECK(m.out >= 0, "sizes " + ints_str(sizes) + " must not be negative");
        SINGA_CHECK(m.in > 0 || m.out == 0,
                    "cannot resize the empty axis " + std::to_string(d) + " to " + std::to_string(m.out));
        scale = m.in > 0 ? double(m.out) / double(m.in) : 1.0;
        width = double(m.out);
      } else {
        scale = scales[d];
        SINGA_CHECK(scale > 0,
                    "scales must be positive, got " + std::to_string(scale) + " on axis " + std::to_string(d));
        width = scale * double(m.in);
        // (an infinite or absurd size is undefined as an integer)
        SINGA_CHECK(width < 9.0e18, "scales give axis " + std::to_string(d) + " a size of " + std::to_string(width));
        m.out = int64_t(std::floor(width));
      }
      out[d] = m.out;
    }
    // The output first: its allocation checks the size against the memory
    // limit before the per-axis tables (as long as the output axes) are built.
    Tensor y = ctx.output(0, out, x.dl_dtype());
    for (size_t d = 0; d < r; ++d)
      build_axis(maps[d], axis_scale[d], axis_width[d], roi.empty() ? 0.0 : roi[d], roi.empty() ? 1.0 : roi[d + r]);
    if (y.numel() == 0) return;
    if (mode_ == Mode::kNearest) gather(ctx, x, y, maps);
    else if (!interpolate_planes_f32(ctx, x, y, maps)) interpolate(ctx, x, y, maps);
  }

 private:
  std::vector<size_t> resized_axes(size_t r) const {
    if (has_axes_) return distinct_axes(axes_, r);
    std::vector<size_t> axes;
    for (size_t d = 0; d < r; ++d) axes.push_back(d);
    return axes;
  }

  // Fills either scales or sizes (one per axis of X) from the attribute/inputs;
  // with `axes`, the inputs name only those axes and the others keep their size.
  void target(const Context& ctx, const Shape& in, const std::vector<size_t>& axes, std::vector<double>& scales,
              std::vector<int64_t>& sizes) const {
    const size_t r = in.size();
    if (has_axes_) {
      std::vector<double> s;
      std::vector<int64_t> z;
      if (ctx.has_input(2)) s = read_floats(ctx.input(2), "scales");
      if (ctx.has_input(3)) z = read_ints(ctx.input(3), "sizes");
      check(s.empty() || z.empty(), "only one of 'scales' and 'sizes' may be given");
      check(!s.empty() || !z.empty(), "one of 'scales' and 'sizes' must be given");
      const size_t n = s.empty() ? z.size() : s.size();
      SINGA_CHECK(n == axes.size(), std::string(s.empty() ? "sizes" : "scales") +
                                        " must have one entry per axis in axes " + ints_str(axes_) + ", got " +
                                        std::to_string(n));
      if (!s.empty()) {
        scales.assign(r, 1.0);
        for (size_t i = 0; i < axes.size(); ++i) scales[axes[i]] = s[i];
      } else {
        sizes = in;
        for (size_t i = 0; i < axes.size(); ++i) sizes[axes[i]] = z[i];
      }
      return;
    }
    if (upsample_ && opset_ < 9) {
      scales = attr_scales_;
    } else if (upsample_ || opset_ < 11) {
      scales = read_floats(required(ctx, 1, "scales"), "scales");
    } else {
      if (ctx.has_input(2)) scales = read_floats(ctx.input(2), "scales");
      if (ctx.has_input(3)) sizes = read_ints(ctx.input(3), "sizes");
      check(scales.empty() || sizes.empty(), "only one of 'scales' and 'sizes' may be given");
      check(!scales.empty() || !sizes.empty(), "one of 'scales' and 'sizes' must be given");
      SINGA_CHECK(sizes.empty() || sizes.size() == r,
                  "sizes " + ints_str(sizes) + " must have one entry per axis of X (rank " + std::to_string(r) + ")");
    }
    SINGA_CHECK(!sizes.empty() || scales.size() == r, "scales must have one entry per axis of X (rank " +
                                                          std::to_string(r) + "), got " +
                                                          std::to_string(scales.size()));
  }

  std::vector<double> read_roi(const Context& ctx, size_t r, const std::vector<size_t>& axes) const {
    if (coord_ != Coord::kTfCropAndResize) return {};
    check(ctx.has_input(1) && ctx.input(1).numel() > 0, "tf_crop_and_resize needs the 'roi' input");
    std::vector<double> roi = read_floats(ctx.input(1), "roi");
    const size_t n = axes.size();
    SINGA_CHECK(roi.size() == 2 * n, "roi must have 2 * " + std::string(has_axes_ ? "len(axes)" : "rank") + " = " +
                                         std::to_string(2 * n) + " entries, got " + std::to_string(roi.size()));
    if (!has_axes_) return roi;
    std::vector<double> full(2 * r);
    for (size_t d = 0; d < r; ++d) {
      full[d] = 0.0;
      full[d + r] = 1.0;
    }
    for (size_t i = 0; i < n; ++i) {
      full[axes[i]] = roi[i];
      full[axes[i] + r] = roi[i + n];
    }
    return full;
  }

  // Position in the input of output coordinate o.
  double source(int64_t o, int64_t in, int64_t out, double scale, double width, double roi0, double roi1) const {
    const double x = double(o);
    switch (coord_) {
      case Coord::kHalfPixel: return (x + 0.5) / scale - 0.5;
      case Coord::kHalfPixelSymmetric: {
        // Centres the sampled span when the output size was rounded down.
        const double adjustment = double(out) / width, center = double(in) / 2;
        return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
      }
      case Coord::kTfHalfPixelForNN: return (x + 0.5) / scale;
      case Coord::kPytorchHalfPixel: return width == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
      case Coord::kAlignCorners: return width == 1.0 ? 0.0 : x * double(in - 1) / (width - 1.0);
      case Coord::kAsymmetric: return x / scale;
      case Coord::kTfCropAndResize: {
        double span = (roi1 - roi0) * double(in - 1);
        double p = width == 1.0 ? span / 2 : x * span / (width - 1.0);
        return p + roi0 * double(in - 1);
      }
    }
    return 0.0;
  }

  void build_axis(AxisMap& m, double scale, double width, double roi0, double roi1) const {
    if (m.out == 0) {  // nothing to sample (and a zero scale would give no kernel width)
      m.ntaps = 1;
      m.idx.clear();
      m.w.clear();
      m.outside.clear();
      return;
    }
    int n = mode_ == Mode::kCubic ? 4 : (mode_ == Mode::kLinear ? 2 : 1);
    // Antialiased downscaling widens the kernel by 1/scale: taps at offsets
    // [first, first + n) from the left neighbour.
    const double aa_scale = std::min(scale, 1.0);
    const bool aa = antialias_ && mode_ != Mode::kNearest && aa_scale < 1.0;
    int64_t first = -(n / 2 - 1);
    if (aa) {
      const double support = mode_ == Mode::kCubic ? 2.0 : 1.0;
      const double f = std::floor(-support / aa_scale) + 1;
      SINGA_CHECK(f > -1.0e6, "antialias with scale " + std::to_string(scale) + " needs too wide a kernel");
      first = int64_t(f);
      n = int(2 - 2 * first);
    }
    m.ntaps = n;
    m.idx.assign(size_t(m.out * n), 0);
    m.w.assign(size_t(m.out * n), 0.0);
    m.outside.assign(size_t(m.out), 0);
    for (int64_t o = 0; o < m.out; ++o) {
      double p = source(o, m.in, m.out, scale, width, roi0, roi1);
      if (coord_ == Coord::kTfCropAndResize && !(p >= 0 && p <= double(m.in - 1))) {  // NaN roi too
        m.outside[size_t(o)] = 1;
        continue;
      }
      // Every tap clamps to the axis, so a position further out than the
      // widest kernel reads what the edge does; clamping keeps the integer
      // conversion below defined for huge (or NaN) positions.
      p = std::isnan(p) ? 0.0 : std::clamp(p, -3.0, double(m.in) + 2.0);
      // Left neighbour i0 and ratio in (0, 1]: an exact hit counts as the
      // right end of the interval to its left.
      double f = std::floor(p);
      int64_t i0 = int64_t(f);
      double t = p - f;
      if (t == 0.0) {
        i0 -= 1;
        t = 1.0;
      }
      int64_t* idx = &m.idx[size_t(o * n)];
      double* w = &m.w[size_t(o * n)];
      if (mode_ == Mode::kNearest) {
        bool right;
        switch (round_) {
          case Round::kPreferFloor: right = t > 0.5; break;
          case Round::kPreferCeil: right = t >= 0.5; break;
          case Round::kFloor: right = t == 1.0; break;
          default: right = true; break;
        }
        idx[0] = std::clamp<int64_t>(right ? i0 + 1 : i0, 0, m.in - 1);
        w[0] = 1.0;
        continue;
      }
      const int64_t start = i0 + first;
      if (aa) {
        double sum = 0;
        for (int k = 0; k < n; ++k) {
          const double a = std::fabs(aa_scale * (double(first + k) - t));
          double c;
          if (mode_ == Mode::kLinear) {
            c = std::max(0.0, 1.0 - a);
          } else {
            const double A = cubic_a_;
            c = a <= 1 ? ((A + 2) * a - (A + 3)) * a * a + 1 : a < 2 ? ((A * a - 5 * A) * a + 8 * A) * a - 4 * A : 0.0;
          }
          w[k] = c;
          sum += c;
        }
        if (sum != 0)
          for (int k = 0; k < n; ++k) w[k] /= sum;
      } else if (mode_ == Mode::kLinear) {
        w[0] = 1.0 - t;
        w[1] = t;
      } else {
        const double a = cubic_a_, s = 1.0 - t;
        w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
        w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
        w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
        w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
      }
      if (exclude_outside_) {
        double sum = 0;
        for (int k = 0; k < n; ++k) {
          if (start + k < 0 || start + k >= m.in) w[k] = 0;
          sum += w[k];
        }
        if (sum != 0)
          for (int k = 0; k < n; ++k) w[k] /= sum;
      }
      for (int k = 0; k < n; ++k) idx[k] = std::clamp<int64_t>(start + k, 0, m.in - 1);
    }
  }

  // Nearest: every output element copies one input element (or the
  // extrapolation value), so bytes move without conversion.
  void gather(const Context& ctx, const Tensor& x, const Tensor& y, const std::vector<AxisMap>& maps) const {
    const size_t r = maps.size(), es = elem_size(x);
    char fill[16] = {};
    if (coord_ == Coord::kTfCropAndResize) {
      SINGA_CHECK((sdk::bit(x.dtype()) & sdk::kNumericTypes) != 0,
                  std::string("extrapolation for element type ") + sdk::dtype_name(x.dtype()) + " is not supported");
      sdk::dispatch(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T v = from_double<T>(extrapolation_);
        std::memcpy(fill, &v, sizeof(T));
      });
    }
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    if (r == 0) {
      std::memcpy(dst, src, es);
      return;
    }
    const Shape in_strides = contiguous_strides(x.shape());
    const AxisMap& last = maps[r - 1];
    const int64_t inner = last.out, rows = y.numel() / inner;
    const bool crop = coord_ == Coord::kTfCropAndResize;
    const int64_t factor = crop ? 0 : whole_upsample_factor(last.idx, last.in, last.out);
    ctx.parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t rb, int64_t re) {
      int64_t prev = -1;
      for (int64_t row = rb; row < re; ++row) {
        char* drow = dst + size_t(row * inner) * es;
        int64_t rem = row, soff = 0;
        bool outside = false;
        for (size_t d = r - 1; d-- > 0;) {
          int64_t o = rem % maps[d].out;
          rem /= maps[d].out;
          outside = outside || maps[d].outside[size_t(o)];
          soff += maps[d].idx[size_t(o)] * in_strides[d];
        }
        // Without extrapolation, a typed gather (a memcpy call per element
        // cost most of the time), or the previous row when it read the same one.
        if (!crop && row > rb && soff == prev) {
          std::memcpy(drow, drow - size_t(inner) * es, size_t(inner) * es);
          continue;
        }
        prev = soff;
        if (factor && es == 4) {
          repeat_row(reinterpret_cast<const uint32_t*>(src) + soff, last.in, factor, reinterpret_cast<uint32_t*>(drow));
          continue;
        }
        if (!crop && es == 4) {
          gather_row(reinterpret_cast<const uint32_t*>(src) + soff, last.idx.data(), inner,
                     reinterpret_cast<uint32_t*>(drow));
          continue;
        }
        if (!crop && es == 2) {
          gather_row(reinterpret_cast<const uint16_t*>(src) + soff, last.idx.data(), inner,
                     reinterpret_cast<uint16_t*>(drow));
          continue;
        }
        for (int64_t o = 0; o < inner; ++o) {
          const char* s = (outside || last.outside[size_t(o)]) ? fill : src + size_t(soff + last.idx[size_t(o)]) * es;
          std::memcpy(drow + size_t(o) * es, s, es);
        }
      }
    });
  }

  // Float linear / cubic that changes only the last two axes (no
  // extrapolation): resize_f32.hpp's rows, in parallel over the output rows
  // of all planes. float16 runs the same rows on a float32 copy of the input
  // and rounds the float32 result once (the generic pass goes through
  // double; the two may differ by one unit in the last place of the half).
  // Returns false where the generic pass has to run.
  bool interpolate_planes_f32(const Context& ctx, const Tensor& x, const Tensor& y,
                              const std::vector<AxisMap>& maps) const {
    const size_t r = maps.size();
    const bool half_io = x.dtype() == SINGA_ONNX_FLOAT16;
    if ((x.dtype() != SINGA_ONNX_FLOAT && !half_io) || r < 2 || coord_ == Coord::kTfCropAndResize) return false;
    for (size_t d = 0; d + 2 < r; ++d)
      if (!maps[d].identity()) return false;
    auto taps = [](const AxisMap& m) {
      AxisTapsF t;
      t.in = m.in, t.out = m.out, t.ntaps = m.ntaps, t.idx = m.idx;
      t.w.assign(m.w.begin(), m.w.end());
      return t;
    };
    const AxisTapsF h = taps(maps[r - 2]), w = taps(maps[r - 1]);
    if (h.in == 0 || w.in == 0) return false;
    const int64_t rows = y.numel() / w.out, plane_in = h.in * w.in;
    std::vector<float> xf, yf;
    if (half_io) {
      xf.resize(size_t(x.numel()));
      yf.resize(size_t(y.numel()));
      const uint16_t* hx = reinterpret_cast<const uint16_t*>(x.data<sdk::half>());
      ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) { vec::f16_to_f32(hx + b, xf.data() + b, e - b); });
    }
    const float* px = half_io ? xf.data() : x.data<float>();
    float* py = half_io ? yf.data() : y.data<float>();
    const int64_t per_row = std::max<int64_t>(1, h.ntaps * w.in + w.ntaps * w.out);
    ctx.parallel_for(rows, std::max<int64_t>(1, 16384 / per_row), [&](int64_t b, int64_t e) {
      std::vector<float> buf(size_t(w.in));
      for (int64_t row = b; row < e; ++row)
        resize_row_f32(px + (row / h.out) * plane_in, h, w, row % h.out, buf.data(), py + row * w.out);
    });
    if (half_io) {
      uint16_t* hy = reinterpret_cast<uint16_t*>(y.data<sdk::half>());
      ctx.parallel_for(y.numel(), 16384, [&](int64_t b, int64_t e) { vec::f32_to_f16(yf.data() + b, hy + b, e - b); });
    }
    return true;
  }

  // Linear / cubic: one pass per axis that changes, innermost first, on a
  // double buffer.
  void interpolate(const Context& ctx, const Tensor& x, const Tensor& y, const std::vector<AxisMap>& maps) const {
    const int32_t dt = x.dtype();
    SINGA_CHECK((sdk::bit(dt) & sdk::kNumericTypes) != 0,
                std::string("linear/cubic resize of element type ") + sdk::dtype_name(dt) + " is not supported");
    Shape cur = x.shape();
    std::vector<double> buf(size_t(x.numel()));
    sdk::dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = to_double(p[i]);
    }, sdk::kNumericTypes);
    for (size_t d = maps.size(); d-- > 0;) {
      const AxisMap& m = maps[d];
      if (m.identity()) continue;
      int64_t outer = 1, inner = 1;
      for (size_t k = 0; k < d; ++k) outer *= cur[k];
      for (size_t k = d + 1; k < cur.size(); ++k) inner *= cur[k];
      std::vector<double> next(size_t(outer * m.out * inner));
      const double* src = buf.data();
      double* dst = next.data();
      ctx.parallel_for(outer * m.out, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          const int64_t ob = row / m.out, o = row % m.out;
          double* drow = dst + row * inner;
          if (m.outside[size_t(o)]) {
            std::fill(drow, drow + inner, extrapolation_);
            continue;
          }
          std::fill(drow, drow + inner, 0.0);
          for (int k = 0; k < m.ntaps; ++k) {
            const double w = m.w[size_t(o * m.ntaps + k)];
            if (w == 0.0) continue;
            const double* srow = src + (ob * m.in + m.idx[size_t(o * m.ntaps + k)]) * inner;
            for (int64_t i = 0; i < inner; ++i) drow[i] += w * srow[i];
          }
        }
      });
      buf.swap(next);
      cur[d] = m.out;
    }
    sdk::dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      T* p = y.data<T>();
      for (size_t i = 0; i < buf.size(); ++i) p[i] = from_double<T>(buf[i]);
    }, sdk::kNumericTypes);
  }

  int64_t opset_;
  bool upsample_;
  Mode mode_ = Mode::kNearest;
  Coord coord_ = Coord::kHalfPixel;
  Round round_ = Round::kPreferFloor;
  double cubic_a_ = -0.75;
  bool exclude_outside_ = false;
  double extrapolation_ = 0.0;
  std::vector<double> attr_scales_;
  bool antialias_ = false;
  bool has_axes_ = false;
  std::vector<int64_t> axes_;
  AspectPolicy policy_ = AspectPolicy::kStretch;
};

}  // namespace

void register_resize(sdk::Registrar& reg) {
  const uint64_t f = sdk::kFloatTypes;
  reg.kernel<Resize>("", "Upsample", 7, 8, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Resize>("", "Upsample", 9, 9, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
  reg.kernel<Resize>("", "Resize", 10, 10, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
  reg.kernel<Resize>("", "Resize", 11, 12, "cpu", {{"T1", 0, kMoveTypes}, {"T2", 1, f}}, 0,
                     input_bit(1) | input_bit(2) | input_bit(3));
  reg.kernel<Resize>("", "Resize", 13, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kMoveTypes}, {"T2", 1, f}}, 0,
                     input_bit(1) | input_bit(2) | input_bit(3));
  // 18: antialias, axes, keep_aspect_ratio_policy; 19: half_pixel_symmetric.
  for (int v : {18, 19})
    reg.kernel<Resize>("", "Resize", v, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kMoveTypes}, {"T2", 1, f}}, 0,
                       input_bit(1) | input_bit(2) | input_bit(3));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
