#include "sources.hpp"

namespace singa {
namespace opencl {

// Windowed pooling over 1 to 3 spatial dims (right-aligned in .x=D, .y=H,
// .z=W), one output element per work item, over `planes` = N*C planes.
// A window's taps along one axis are start + t*d for t in [tb, te), the ones
// inside [lo, hi).
const char* const kPoolSource = R"CLC(
inline int2 taps(const int o, const int s, const int pb, const int d, const int k, const int lo, const int hi) {
  const int start = o * s - pb;
  int tb = 0, te = k;
  if (start < lo) tb = (lo - start + d - 1) / d;
  if (start + (k - 1) * d >= hi) te = hi > start ? (hi - start + d - 1) / d : 0;
  if (te < tb) te = tb;
  return (int2)(tb, te);
}

#define POOL_ARGS const int planes, const int4 in, const int4 out, const int4 k, const int4 s, const int4 d, \
                  const int4 pb, const int4 pe

#define POOL_POSITION                                                                  \
  const int i = get_global_id(0);                                                      \
  const int outsz = out.x * out.y * out.z;                                             \
  if (i >= planes * outsz) return;                                                     \
  const int plane = i / outsz, o = i % outsz;                                          \
  const int ow = o % out.z, oh = (o / out.z) % out.y, od = o / (out.z * out.y);        \
  const int insz = in.x * in.y * in.z;                                                 \
  const int2 td = taps(od, s.x, pb.x, d.x, k.x, 0, in.x);                              \
  const int2 th = taps(oh, s.y, pb.y, d.y, k.y, 0, in.y);                              \
  const int2 tw = taps(ow, s.z, pb.z, d.z, k.z, 0, in.z);                              \
  __global const float* xp = AT(x) + (long)plane * insz

// Indices (when with_idx) as ONNX stores them: flat over the whole input,
// the in-plane part row-major, or column-major with storage_order=1.
__kernel void maxpool(IN(float, x), OUT(float, y), OUT(long, idx), const int with_idx, const int column_major, POOL_ARGS) {
  POOL_POSITION;
  float best = -INFINITY;
  int best_at = -1;
  for (int kd = td.x; kd < td.y; ++kd)
    for (int kh = th.x; kh < th.y; ++kh) {
      const int row = ((od * s.x - pb.x + kd * d.x) * in.y + (oh * s.y - pb.y + kh * d.y)) * in.z;
      for (int kw = tw.x; kw < tw.y; ++kw) {
        const int at = row + ow * s.z - pb.z + kw * d.z;
        const float v = xp[at];
        if (best_at < 0 || v > best) { best = v; best_at = at; }
      }
    }
  AT(y)[i] = best;
  if (with_idx) {
    long flat = -1;
    if (best_at >= 0) {
      int within = best_at;
      if (column_major) {
        const int iw = best_at % in.z, ih = (best_at / in.z) % in.y, id = best_at / (in.z * in.y);
        within = id + ih * in.x + iw * in.x * in.y;
      }
      flat = (long)plane * insz + within;
    }
    AT(idx)[i] = flat;
  }
}

// count_include_pad: the divisor counts taps inside the padded extent
// [-pad_begin, in + pad_end) (a ceil_mode window hanging past it does not).
__kernel void avgpool(IN(float, x), OUT(float, y), const int count_include_pad, POOL_ARGS) {
  POOL_POSITION;
  float sum = 0.0f;
  for (int kd = td.x; kd < td.y; ++kd)
    for (int kh = th.x; kh < th.y; ++kh) {
      const int row = ((od * s.x - pb.x + kd * d.x) * in.y + (oh * s.y - pb.y + kh * d.y)) * in.z;
      for (int kw = tw.x; kw < tw.y; ++kw) sum += xp[row + ow * s.z - pb.z + kw * d.z];
    }
  int count = (td.y - td.x) * (th.y - th.x) * (tw.y - tw.x);
  if (count_include_pad) {
    const int2 pd = taps(od, s.x, pb.x, d.x, k.x, -pb.x, in.x + pe.x);
    const int2 ph = taps(oh, s.y, pb.y, d.y, k.y, -pb.y, in.y + pe.y);
    const int2 pw = taps(ow, s.z, pb.z, d.z, k.z, -pb.z, in.z + pe.z);
    count = (pd.y - pd.x) * (ph.y - ph.x) * (pw.y - pw.x);
  }
  AT(y)[i] = count > 0 ? sum / (float)count : 0.0f;
}

// One plane per work item: mean (is_max 0) or max (1) over `size` values.
__kernel void global_pool(IN(float, x), OUT(float, y), const int planes, const int size, const int is_max) {
  const int p = get_global_id(0);
  if (p >= planes) return;
  __global const float* xp = AT(x) + (long)p * size;
  float acc = is_max ? -INFINITY : 0.0f;
  for (int j = 0; j < size; ++j) acc = is_max ? fmax(acc, xp[j]) : acc + xp[j];
  AT(y)[p] = is_max ? acc : acc / (float)size;
}
)CLC";

}  // namespace opencl
}  // namespace singa
