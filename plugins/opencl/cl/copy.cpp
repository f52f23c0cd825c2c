#include "sources.hpp"

namespace singa {
namespace opencl {

// Data movement for any element size (1, 2, 4, 8 bytes: uchar..ulong):
// Concat's block copies and Transpose's gather.
const char* const kCopySource = R"CLC(
// Input of Concat viewed as [outer, block]: row o lands at
// o * out_block + at in the output.
#define CONCAT(T, NAME)                                                                               \
  __kernel void NAME(IN(T, x), OUT(T, y), const int outer, const int block, const int out_block,      \
                     const int at) {                                                                  \
    const int i = get_global_id(0);                                                                   \
    if (i >= outer * block) return;                                                                   \
    const int o = i / block, r = i % block;                                                           \
    AT(y)[(long)o * out_block + at + r] = AT(x)[i];                                                   \
  }
CONCAT(uchar, concat_1)
CONCAT(ushort, concat_2)
CONCAT(uint, concat_4)
CONCAT(ulong, concat_8)

// Output item i (row-major over the output dims od) reads the input at
// sum(index[a] * is[a]), is the input strides permuted to output order.
#define TRANSPOSE(T, NAME)                                                                            \
  __kernel void NAME(IN(T, x), OUT(T, y), const int n, const int rank, const int8 od_v,              \
                     const int8 is_v) {                                                               \
    const int i = get_global_id(0);                                                                   \
    if (i >= n) return;                                                                               \
    UNPACK8(od_v, od);                                                                                \
    UNPACK8(is_v, is);                                                                                \
    int rem = i, off = 0;                                                                             \
    for (int a = rank - 1; a >= 0; --a) {                                                             \
      off += (rem % od[a]) * is[a];                                                                   \
      rem /= od[a];                                                                                   \
    }                                                                                                 \
    AT(y)[i] = AT(x)[off];                                                                            \
  }
TRANSPOSE(uchar, transpose_1)
TRANSPOSE(ushort, transpose_2)
TRANSPOSE(uint, transpose_4)
TRANSPOSE(ulong, transpose_8)
)CLC";

}  // namespace opencl
}  // namespace singa
