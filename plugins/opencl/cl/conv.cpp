#include "sources.hpp"

namespace singa {
namespace opencl {

// im2col for 1-D to 3-D windows (dims right-aligned in .x=D, .y=H, .z=W;
// unused leading dims are 1). For images [n0, n0+count) of X [N, C, D, H, W]
// it writes col[(n - n0)][c*KD*KH*KW + kidx][p] for output position p, zero
// where the tap falls in the padding, so that Conv becomes W x col.
const char* const kConvSource = R"CLC(
__kernel void im2col(IN(float, x), OUT(float, col), const int count, const int C, const int4 in, const int4 out,
                     const int4 k, const int4 s, const int4 d, const int4 pb) {
  // Work item (p, row, n): output position, column-matrix row, image.
  const int p = get_global_id(0), row = get_global_id(1), n = get_global_id(2);
  const int P = out.x * out.y * out.z;
  const int ksz = k.x * k.y * k.z;
  if (p >= P || row >= C * ksz || n >= count) return;
  const int c = row / ksz, kidx = row - c * ksz;
  const int kw = kidx % k.z, kh = (kidx / k.z) % k.y, kd = kidx / (k.z * k.y);
  const int ow = p % out.z, oh = (p / out.z) % out.y, od = p / (out.z * out.y);
  const int iw = ow * s.z - pb.z + kw * d.z;
  const int ih = oh * s.y - pb.y + kh * d.y;
  const int id = od * s.x - pb.x + kd * d.x;
  float v = 0.0f;
  if (iw >= 0 && iw < in.z && ih >= 0 && ih < in.y && id >= 0 && id < in.x)
    v = AT(x)[(((long)n * C + c) * in.x + id) * in.y * in.z + ih * in.z + iw];
  AT(col)[((long)n * C * ksz + row) * P + p] = v;
}

// The same matrix, one (image, row) per work item walking every output
// position in order: no divisions and sequential writes, for CPU devices
// (on GPUs neighbouring items would write far apart).
__kernel void im2col_rows(IN(float, x), OUT(float, col), const int count, const int C, const int4 in, const int4 out,
                          const int4 k, const int4 s, const int4 d, const int4 pb) {
  const int row = get_global_id(0), n = get_global_id(1);
  const int ksz = k.x * k.y * k.z;
  if (row >= C * ksz || n >= count) return;
  const int c = row / ksz, kidx = row - c * ksz;
  const int kw = kidx % k.z, kh = (kidx / k.z) % k.y, kd = kidx / (k.z * k.y);
  __global const float* xp = AT(x) + ((long)n * C + c) * in.x * in.y * in.z;
  __global float* cp = AT(col) + ((long)n * C * ksz + row) * out.x * out.y * out.z;
  for (int od = 0; od < out.x; ++od) {
    const int id = od * s.x - pb.x + kd * d.x;
    const bool din = id >= 0 && id < in.x;
    for (int oh = 0; oh < out.y; ++oh) {
      const int ih = oh * s.y - pb.y + kh * d.y;
      const bool hin = din && ih >= 0 && ih < in.y;
      __global const float* rp = xp + (id * in.y + ih) * in.z;
      int iw = -pb.z + kw * d.z;
      for (int ow = 0; ow < out.z; ++ow, iw += s.z) *cp++ = (hin && iw >= 0 && iw < in.z) ? rp[iw] : 0.0f;
    }
  }
}
)CLC";

}  // namespace opencl
}  // namespace singa
