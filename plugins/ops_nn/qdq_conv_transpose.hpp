// qdq_conv_transpose.hpp - the NCHW <-> NHWC conversions around oneDNN's
// int8 convolutions (conv_integer_dnnl.cpp), whose fast kernels read and
// write channels-last: 16 x 16 tiles transposed in registers (SSE2 unpacks
// for bytes, AVX-512 for floats where the CPU has it), the edges element by
// element. oneDNN's own reorders for these took longer than the int8
// convolutions themselves (ResNet-50's QDQ form, at one thread).
#ifndef SINGA_OPS_NN_QDQ_CONV_TRANSPOSE_HPP
#define SINGA_OPS_NN_QDQ_CONV_TRANSPOSE_HPP

#include <cstdint>

namespace singa {
namespace nn {

// out[j * out_stride + i] = in[i * in_stride + j] for i < rows, j < cols
// (one byte per element: u8 or s8).
void transpose_bytes(const void* in, int64_t in_stride, void* out, int64_t out_stride, int64_t rows, int64_t cols);
// The same for floats.
void transpose_floats(const float* in, int64_t in_stride, float* out, int64_t out_stride, int64_t rows, int64_t cols);

}  // namespace nn
}  // namespace singa
#endif
