// RoiAlign (opsets 10-15, 16-17): pools each region of interest into an
// output_height x output_width grid by averaging (or taking the max of)
// bilinear samples on a regular sub-grid of every bin.
//
// Opset 10 has no coordinate_transformation_mode and behaves as
// "output_half_pixel" (no half-pixel shift, regions at least 1x1); opset 16
// adds the attribute with default "half_pixel".
//
// The backward (X only: ONNX marks rois and batch_indices non-differentiable)
// replays the same samples and scatters dY with their bilinear weights: an
// average bin spreads dY / count over all of its taps, a max bin routes dY to
// the one weighted tap that won (the first, on ties).
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

// Bilinear sample position: four flat offsets into a channel plane and weights.
struct Sample {
  int64_t off[4];
  double w[4];
};

class RoiAlign : public KernelBase {
 public:
  explicit RoiAlign(const Node& node) : KernelBase(node) {
    std::string mode = node.attr_string("mode", "avg");
    if (mode == "max") max_ = true;
    else if (mode != "avg") node.fail("attribute 'mode' must be avg or max, got '" + mode + "'");
    out_h_ = node.attr_int("output_height", 1);
    out_w_ = node.attr_int("output_width", 1);
    sampling_ = node.attr_int("sampling_ratio", 0);
    scale_ = double(node.attr_float("spatial_scale", 1.f));
    if (out_h_ < 1 || out_w_ < 1)
      node.fail("output_height and output_width must be positive, got " + std::to_string(out_h_) + "x" +
                std::to_string(out_w_));
    if (sampling_ < 0) node.fail("sampling_ratio must not be negative, got " + std::to_string(sampling_));
    if (node.opset() >= 16) {
      std::string ct = node.attr_string("coordinate_transformation_mode", "half_pixel");
      if (ct == "half_pixel") half_pixel_ = true;
      else if (ct != "output_half_pixel")
        node.fail("attribute 'coordinate_transformation_mode' must be half_pixel or output_half_pixel, got '" + ct +
                  "'");
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "X"), rois = required(ctx, 1, "rois"), bi = required(ctx, 2, "batch_indices");
    const std::vector<int64_t> batch = checked_batch(x, rois, bi);
    const int64_t c = x.dim(1), nroi = rois.dim(0);
    Tensor y = ctx.output(0, {nroi, c, out_h_, out_w_}, x.dl_dtype());
    if (y.numel() == 0) return;
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      run<T>(ctx, x, rois, batch, y);
    }, sdk::kFloatTypes);
  }

  // Inputs: X, rois, batch_indices, Y, dY; output 0: dX.
  void backward(Context& ctx) const {
    Tensor x = required(ctx, 0, "X"), rois = required(ctx, 1, "rois"), bi = required(ctx, 2, "batch_indices");
    const std::vector<int64_t> batch = checked_batch(x, rois, bi);
    Tensor dy = ctx.input(4);
    Tensor dx = ctx.output(0, x.shape(), x.dl_dtype());
    const Shape ys{rois.dim(0), x.dim(1), out_h_, out_w_};
    if (dy.present())
      SINGA_CHECK(dy.shape() == ys && dy.dtype() == x.dtype(),
                  "the gradient of Y must have shape " + shape_str(ys) + " and X's type, got " + shape_str(dy.shape()));
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      run_backward<T>(ctx, x, rois, batch, dy, dx);
    }, sdk::kFloatTypes);
  }

 private:
  // Checks X, rois and batch_indices; returns the batch indices.
  std::vector<int64_t> checked_batch(const Tensor& x, const Tensor& rois, const Tensor& bi) const {
    SINGA_CHECK(x.ndim() == 4, "X must have shape [N, C, H, W], got " + shape_str(x.shape()));
    SINGA_CHECK(rois.ndim() == 2 && rois.dim(1) == 4,
                "rois must have shape [num_rois, 4], got " + shape_str(rois.shape()));
    check(rois.dtype() == x.dtype(), "rois must have the element type of X");
    SINGA_CHECK(bi.ndim() == 1 && bi.dim(0) == rois.dim(0), "batch_indices must have shape [num_rois] = [" +
                                                                std::to_string(rois.dim(0)) + "], got " +
                                                                shape_str(bi.shape()));
    const std::vector<int64_t> batch = read_index_tensor(bi);
    const int64_t n = x.dim(0);
    for (size_t i = 0; i < batch.size(); ++i)
      SINGA_CHECK(batch[i] >= 0 && batch[i] < n, "batch_indices[" + std::to_string(i) +
                                                     "] = " + std::to_string(batch[i]) +
                                                     " is out of range for batch size " + std::to_string(n));
    return batch;
  }

  template <typename T>
  static double as_double(T v) {
    if constexpr (std::is_arithmetic<T>::value) return double(v);
    else return double(float(v));
  }

  template <typename T>
  void run(const Context& ctx, const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch,
           const Tensor& y) const {
    const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), nroi = rois.dim(0);
    const T* px = x.data<T>();
    const T* pr = rois.data<T>();
    T* py = y.data<T>();
    const int64_t plane = h * w, bins = out_h_ * out_w_;
    ctx.parallel_for(nroi, 1, [&](int64_t rb, int64_t re) {
      std::vector<Sample> samples;
      std::vector<int64_t> bin_start(size_t(bins + 1));
      for (int64_t r = rb; r < re; ++r) {
        double count = sample_roi(pr + 4 * r, h, w, samples, bin_start);
        const T* img = px + batch[size_t(r)] * c * plane;
        for (int64_t ch = 0; ch < c; ++ch) {
          const T* p = img + ch * plane;
          T* out = py + (r * c + ch) * bins;
          for (int64_t b = 0; b < bins; ++b) {
            double acc = max_ ? -std::numeric_limits<double>::infinity() : 0.0;
            for (int64_t s = bin_start[size_t(b)]; s < bin_start[size_t(b + 1)]; ++s) {
              const Sample& sm = samples[size_t(s)];
              if (max_) {
                for (int k = 0; k < 4; ++k) acc = std::max(acc, sm.w[k] * as_double(p[sm.off[k]]));
              } else {
                for (int k = 0; k < 4; ++k) acc += sm.w[k] * as_double(p[sm.off[k]]);
              }
            }
            if (!max_) acc /= count;
            else if (bin_start[size_t(b)] == bin_start[size_t(b + 1)]) acc = 0.0;
            out[b] = T(static_cast<std::conditional_t<std::is_arithmetic<T>::value, T, float>>(acc));
          }
        }
      }
    });
  }

  // dX: per region, the samples are laid out once, then every channel plane
  // scatters on its own (planes of one image never overlap, so the channels
  // run in parallel; regions are serial because they may share an image).
  template <typename T>
  void run_backward(const Context& ctx, const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch,
                    const Tensor& dy, const Tensor& dx) const {
    const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), nroi = rois.dim(0);
    const int64_t plane = h * w, bins = out_h_ * out_w_;
    std::vector<double> acc(size_t(x.numel()), 0.0);
    if (dy.present() && dy.numel() > 0) {
      const T* px = x.data<T>();
      const T* pr = rois.data<T>();
      const T* pg = dy.data<T>();
      std::vector<Sample> samples;
      std::vector<int64_t> bin_start(size_t(bins + 1));
      for (int64_t r = 0; r < nroi; ++r) {
        const double count = sample_roi(pr + 4 * r, h, w, samples, bin_start);
        const int64_t img = batch[size_t(r)] * c * plane;
        ctx.parallel_for(c, 1, [&](int64_t cb, int64_t ce) {
          for (int64_t ch = cb; ch < ce; ++ch) {
            const T* p = px + img + ch * plane;
            double* d = acc.data() + img + ch * plane;
            const T* g = pg + (r * c + ch) * bins;
            for (int64_t b = 0; b < bins; ++b) {
              const double gb = as_double(g[b]);
              const int64_t s0 = bin_start[size_t(b)], s1 = bin_start[size_t(b + 1)];
              if (gb == 0.0 || s0 == s1) continue;
              if (!max_) {
                for (int64_t s = s0; s < s1; ++s)
                  for (int k = 0; k < 4; ++k) d[samples[size_t(s)].off[k]] += gb * samples[size_t(s)].w[k] / count;
                continue;
              }
              // The forward's std::max keeps the first of equal values.
              double best = -std::numeric_limits<double>::infinity();
              int64_t at = -1;
              double weight = 0.0;
              for (int64_t s = s0; s < s1; ++s)
                for (int k = 0; k < 4; ++k) {
                  const Sample& sm = samples[size_t(s)];
                  const double v = sm.w[k] * as_double(p[sm.off[k]]);
                  if (best < v) {
                    best = v;
                    at = sm.off[k];
                    weight = sm.w[k];
                  }
                }
              if (at >= 0) d[at] += gb * weight;
            }
          }
        });
      }
    }
    T* out = dx.data<T>();
    for (size_t i = 0; i < acc.size(); ++i)
      out[i] = T(static_cast<std::conditional_t<std::is_arithmetic<T>::value, T, float>>(acc[i]));
  }

  // Fills the samples of every bin of one region (bin b owns samples
  // [bin_start[b], bin_start[b+1])) and returns the per-bin divisor.
  template <typename T>
  double sample_roi(const T* roi, int64_t h, int64_t w, std::vector<Sample>& samples,
                    std::vector<int64_t>& bin_start) const {
    const double off = half_pixel_ ? 0.5 : 0.0;
    const double x0 = as_double(roi[0]) * scale_ - off, y0 = as_double(roi[1]) * scale_ - off;
    const double x1 = as_double(roi[2]) * scale_ - off, y1 = as_double(roi[3]) * scale_ - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half_pixel_) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(out_h_), bw = rw / double(out_w_);
    const int64_t gh = sampling_ > 0 ? sampling_ : grid(rh / double(out_h_));
    const int64_t gw = sampling_ > 0 ? sampling_ : grid(rw / double(out_w_));
    if (double(gh) * double(gw) * double(out_h_) * double(out_w_) > double(kMaxSamples))
      fail("a region needs " + std::to_string(gh) + " x " + std::to_string(gw) + " samples per bin over " +
           std::to_string(out_h_) + " x " + std::to_string(out_w_) + " bins, more than " + std::to_string(kMaxSamples));
    samples.clear();
    for (int64_t ph = 0; ph < out_h_; ++ph)
      for (int64_t pw = 0; pw < out_w_; ++pw) {
        bin_start[size_t(ph * out_w_ + pw)] = int64_t(samples.size());
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            const double xx = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
            samples.push_back(bilinear(yy, xx, h, w));
          }
        }
      }
    bin_start[size_t(out_h_ * out_w_)] = int64_t(samples.size());
    return double(std::max<int64_t>(gh * gw, 1));
  }

  // The adaptive sampling grid along one axis: ceil(bin size), none for a
  // region whose coordinates are not finite; the caller refuses grids past
  // kMaxSamples (a region of 1e30 pixels would ask for that many).
  static int64_t grid(double bin) {
    if (!(bin > 0)) return 0;  // NaN too
    return bin < double(kMaxSamples) ? int64_t(std::ceil(bin)) : kMaxSamples + 1;
  }
  static constexpr int64_t kMaxSamples = int64_t(1) << 22;  // per region: 256 MiB of samples

  // Samples more than one pixel outside the image (or at a NaN coordinate)
  // contribute zero; others clamp to the border.
  static Sample bilinear(double y, double x, int64_t h, int64_t w) {
    Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
    if (!(y >= -1.0 && y <= double(h) && x >= -1.0 && x <= double(w)) || h == 0 || w == 0) return s;
    y = std::max(y, 0.0);
    x = std::max(x, 0.0);
    int64_t ylo = int64_t(y), xlo = int64_t(x), yhi, xhi;
    if (ylo >= h - 1) {
      ylo = yhi = h - 1;
      y = double(ylo);
    } else {
      yhi = ylo + 1;
    }
    if (xlo >= w - 1) {
      xlo = xhi = w - 1;
      x = double(xlo);
    } else {
      xhi = xlo + 1;
    }
    const double ly = y - double(ylo), lx = x - double(xlo), hy = 1.0 - ly, hx = 1.0 - lx;
    s.off[0] = ylo * w + xlo;
    s.off[1] = ylo * w + xhi;
    s.off[2] = yhi * w + xlo;
    s.off[3] = yhi * w + xhi;
    s.w[0] = hy * hx;
    s.w[1] = hy * lx;
    s.w[2] = ly * hx;
    s.w[3] = ly * lx;
    return s;
  }

  bool max_ = false, half_pixel_ = false;
  int64_t out_h_ = 1, out_w_ = 1, sampling_ = 0;
  double scale_ = 1.0;
};

}  // namespace

void register_roi_align(sdk::Registrar& reg) {
  const uint64_t f = sdk::kFloatTypes;
  reg.kernel<RoiAlign>("", "RoiAlign", 10, 15, "cpu", {{"T1", 0, f}, {"T2", 2, kInt64}}, 0, input_bit(2));
  reg.kernel<RoiAlign>("", "RoiAlign", 16, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, f}, {"T2", 2, kInt64}}, 0, input_bit(2));
  // 22 adds bfloat16 (not handled here).
  reg.kernel<RoiAlign>("", "RoiAlign", 22, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, f}, {"T2", 2, kInt64}}, 0, input_bit(2));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
