// unfold_f32.hpp - the float unfolding that feeds fast::sgemm in Conv and
// ConvGrad. AVX-512 code (unfold_f32.cpp): call only where fast::avx512()
// holds. Serial: callers run one image per task. The runs along the output
// width are short (8-32 floats for small images), so they are copied with
// vector loads and masked stores rather than memcpy calls.
//
// Two layouts of the unfolded windows of output positions [p0, p0 + cols):
//   columns  (im2col): one row per (channel, kd, kh, kw), one column per
//            output position, as im2col.hpp;
//   rows     (im2row): one row per output position, one column per
//            (kd, kh, kw, channel), read from a channels-last copy of the
//            input so that (kw, channel) runs are contiguous copies. ConvGrad
//            multiplies dY by it to get dW with the taps channel-minor.
#ifndef SINGA_OPS_NN_UNFOLD_F32_HPP
#define SINGA_OPS_NN_UNFOLD_F32_HPP

#include "spatial.hpp"

namespace singa {
namespace nn {

// Output positions to unfold at once for `width` floats per position within
// `budget` floats: whole output rows when they fit, which the unfolding
// copies fastest.
inline int64_t unfold_chunk(const Geometry& g, int64_t width, int64_t budget) {
  const int64_t P = g.out_size(), OW = g.out[2];
  const int64_t c = budget / (width > 0 ? width : 1);
  if (c >= P) return P > 0 ? P : 1;
  if (c >= OW) return c / OW * OW;
  return c > 0 ? c : 1;
}

// x: `channels` planes of g.in; col: (channels * k_size) x cols.
void im2col_f32(const float* x, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* col);

// The adjoint of im2col_f32: dx (channels planes of g.in) += col folded back.
void col2im_add_f32(const float* col, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* dx);

// planes [channels x size] -> [size x channels].
void to_channels_last_f32(const float* x, int64_t channels, int64_t size, float* out);

// xt: g.in positions x `channels` (channels-last); rows: cols x (k_size *
// channels), the taps ordered (kd, kh, kw, channel).
void im2row_f32(const float* xt, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* rows);

}  // namespace nn
}  // namespace singa
#endif
