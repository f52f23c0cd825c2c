// int8_lattice.hpp - the 8-bit integers behind float weights. A QDQ model's
// weights are DequantizeLinear(q8, scale, zero_point) of a constant; a host
// before SINGA_PASS_PRIORITY_QUANTIZED, or an exporter, may have folded it
// into a float constant, and the int8 fusions (QdqConv, QDQMatMul) want q8
// back. Per channel (an output
// channel of a Conv, a column of a MatMul's B) the floats must be exactly
// float(q) * s for one scale s and integers q spanning at most 256 values,
// element by element, so that the 8-bit copy loses nothing; a float model's
// weights almost never are, and are refused.
//
// Header-only: the ops_nn and ops_math passes and the unit test include it.
#ifndef SINGA_PLUGINS_COMMON_INT8_LATTICE_HPP
#define SINGA_PLUGINS_COMMON_INT8_LATTICE_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace singa {
namespace int8 {

// Where element k of channel c lies: at c * channel_stride + k * stride
// (a Conv's OIHW weights: channel_stride K, stride 1; a MatMul's B [K, N]
// by column: channel_stride 1, stride N).
struct ChannelView {
  int64_t channels = 0, count = 0, channel_stride = 0, stride = 1;
  int64_t at(int64_t c, int64_t k) const { return c * channel_stride + k * stride; }
  int64_t size() const { return channels * count; }
};

// Integers q (laid out as the view says) and a scale per channel:
// the weight at view.at(c, k) is float(q[view.at(c, k)]) * scale[c].
struct ChannelInts {
  ChannelView view;
  std::vector<int32_t> q;
  std::vector<float> scale;
};

namespace detail {

// Whether channel c is float(r) * s element by element with integers r
// spanning at most 256 values (what s8 holds with a zero point); fills q.
inline bool on_lattice(const float* w, const ChannelView& v, int64_t c, float s, int32_t* q) {
  if (!(s > 0.f) || !std::isnormal(s)) return false;
  float lo = 0.f, hi = 0.f;
  for (int64_t k = 0; k < v.count; ++k) {
    const float x = w[v.at(c, k)];
    const float r = std::nearbyint(x / s);
    if (!(std::fabs(r) <= 255.f) || r * s != x) return false;
    lo = k ? std::min(lo, r) : r;
    hi = k ? std::max(hi, r) : r;
    q[v.at(c, k)] = int32_t(r);
  }
  return hi - lo <= 255.f;
}

// The exact scale near `approx`, if any: `approx` itself, or the element of
// least magnitude `least` fixes its integer r, and least / r or a float up to two units in the last
// place from it (least itself was rounded once from r * s) is tried.
inline bool exact_scale(const float* w, const ChannelView& v, int64_t c, float least, float approx, int32_t* q,
                        float& scale) {
  if (!(approx > 0.f) || !std::isnormal(approx)) return false;
  if (on_lattice(w, v, c, approx, q)) return scale = approx, true;
  const float r = std::nearbyint(least / approx);
  if (r < 1.f || r > 255.f) return false;
  const float base = least / r;
  float lo = base, hi = base;
  if (on_lattice(w, v, c, base, q)) return scale = base, true;
  for (int step = 0; step < 2; ++step) {
    lo = std::nextafter(lo, 0.f), hi = std::nextafter(hi, 1e30f);
    for (float s : {lo, hi})
      if (on_lattice(w, v, c, s, q)) return scale = s, true;
  }
  return false;
}

// The smallest nonzero magnitude of channel c (0 when all are zero, -1 when
// one is not finite).
inline float least_magnitude(const float* w, const ChannelView& v, int64_t c) {
  float least = 0.f;
  for (int64_t k = 0; k < v.count; ++k) {
    const float x = std::fabs(w[v.at(c, k)]);
    if (!std::isfinite(x)) return -1.f;
    if (x > 0.f && (least == 0.f || x < least)) least = x;
  }
  return least;
}

// Channel c as integer multiples of one scale. Candidates, cheapest first
// (any that reproduces every element will do): the smallest magnitude as
// one step (a symmetric zero point), the whole tensor's smallest magnitude
// (a per-tensor scale seen through a channel of few values); then, after a
// sort, the smallest gap between two distinct values and the smallest
// magnitude, each divided by 1..4 (a zero point far from 0 leaves no value
// near 0; a channel may skip a step or two); then the smallest magnitude as
// any 5..255 steps.
inline bool channel_lattice(const float* w, const ChannelView& v, int64_t c, float tensor_least, int32_t* q,
                            float& scale) {
  const float least = least_magnitude(w, v, c);
  if (least < 0.f) return false;
  if (least == 0.f) {  // an all-zero channel: any scale
    for (int64_t k = 0; k < v.count; ++k) q[v.at(c, k)] = 0;
    return scale = 1.f, true;
  }
  if (exact_scale(w, v, c, least, least, q, scale) || exact_scale(w, v, c, least, tensor_least, q, scale))
    return true;
  std::vector<float> sorted(static_cast<size_t>(v.count));
  for (int64_t k = 0; k < v.count; ++k) sorted[size_t(k)] = w[v.at(c, k)];
  std::sort(sorted.begin(), sorted.end());
  float gap = 0.f;
  for (size_t k = 1; k < sorted.size(); ++k)
    if (sorted[k] > sorted[k - 1] && (gap == 0.f || sorted[k] - sorted[k - 1] < gap)) gap = sorted[k] - sorted[k - 1];
  for (float base : {gap, least})
    for (int d = 1; d <= 4; ++d)
      if (exact_scale(w, v, c, least, base / float(d), q, scale)) return true;
  for (int d = 5; d <= 255; ++d)
    if (exact_scale(w, v, c, least, least / float(d), q, scale)) return true;
  return false;
}

}  // namespace detail

// Recovers every channel of float weights `w` as integers times a scale;
// false (out unspecified) when some channel is not on such a lattice or
// holds a NaN or infinity.
inline bool lattice_from_float(const float* w, const ChannelView& v, ChannelInts& out) {
  if (v.channels <= 0 || v.count <= 0) return false;
  out.view = v;
  out.q.assign(static_cast<size_t>(v.size()), 0);
  out.scale.assign(static_cast<size_t>(v.channels), 1.f);
  float tensor_least = 0.f;
  for (int64_t c = 0; c < v.channels; ++c) {
    const float l = detail::least_magnitude(w, v, c);
    if (l < 0.f) return false;
    if (l > 0.f && (tensor_least == 0.f || l < tensor_least)) tensor_least = l;
  }
  for (int64_t c = 0; c < v.channels; ++c)
    if (!detail::channel_lattice(w, v, c, tensor_least, out.q.data(), out.scale[size_t(c)])) return false;
  return true;
}

// The integers as s8: stored = q + zp[c] with zp[c] chosen per channel to
// bring the channel into [-128, 127] (0 where it already fits, so that
// kernels without weight zero points can take it), laid out as w.view.
// False when a channel spans more than 256 values.
inline bool fit_s8(const ChannelInts& w, std::vector<int8_t>& stored, std::vector<int8_t>& zp) {
  const ChannelView& v = w.view;
  stored.assign(static_cast<size_t>(v.size()), 0);
  zp.assign(static_cast<size_t>(v.channels), 0);
  if (v.channels == 0 || v.count == 0) return true;
  // Per-channel ranges, walking memory in order (a MatMul's columns are
  // strided; rows of them are contiguous).
  std::vector<int32_t> lo(size_t(v.channels), 0), hi(size_t(v.channels), 0);
  const int32_t* q = w.q.data();
  if (v.channel_stride == 1) {
    for (int64_t c = 0; c < v.channels; ++c) lo[size_t(c)] = hi[size_t(c)] = q[v.at(c, 0)];
    for (int64_t k = 0; k < v.count; ++k) {
      const int32_t* row = q + k * v.stride;
      for (int64_t c = 0; c < v.channels; ++c) {
        lo[size_t(c)] = std::min(lo[size_t(c)], row[c]);
        hi[size_t(c)] = std::max(hi[size_t(c)], row[c]);
      }
    }
  } else {
    for (int64_t c = 0; c < v.channels; ++c) {
      const int32_t* p = q + v.at(c, 0);
      const int64_t step = v.stride;
      int32_t l = p[0], h = l;
      if (step == 1) {  // a Conv's channel: contiguous, vectorizes
        for (int64_t k = 0; k < v.count; ++k) {
          l = std::min(l, p[k]);
          h = std::max(h, p[k]);
        }
      } else {
        for (int64_t k = 0; k < v.count; ++k) {
          l = std::min(l, p[k * step]);
          h = std::max(h, p[k * step]);
        }
      }
      lo[size_t(c)] = l, hi[size_t(c)] = h;
    }
  }
  for (int64_t c = 0; c < v.channels; ++c) {
    const int32_t l = lo[size_t(c)], h = hi[size_t(c)];
    const int32_t z = h > 127 ? 127 - h : (l < -128 ? -128 - l : 0);
    if (l + z < -128 || h + z > 127) return false;
    zp[size_t(c)] = int8_t(z);  // q = stored - zp
  }
  int8_t* out = stored.data();
  if (v.channel_stride == 1) {
    for (int64_t k = 0; k < v.count; ++k) {
      const int32_t* row = q + k * v.stride;
      int8_t* to = out + k * v.stride;
      for (int64_t c = 0; c < v.channels; ++c) to[c] = int8_t(row[c] + zp[size_t(c)]);
    }
  } else {
    for (int64_t c = 0; c < v.channels; ++c) {
      const int32_t z = zp[size_t(c)], *p = q + v.at(c, 0);
      int8_t* to = out + v.at(c, 0);
      const int64_t step = v.stride;
      if (step == 1)
        for (int64_t k = 0; k < v.count; ++k) to[k] = int8_t(p[k] + z);
      else
        for (int64_t k = 0; k < v.count; ++k) to[k * step] = int8_t(p[k * step] + z);
    }
  }
  return true;
}

// Whether any channel needed a zero point.
inline bool any_zero_point(const std::vector<int8_t>& zp) {
  return std::any_of(zp.begin(), zp.end(), [](int8_t z) { return z != 0; });
}

}  // namespace int8
}  // namespace singa
#endif
