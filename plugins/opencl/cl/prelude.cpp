#include "sources.hpp"

namespace singa {
namespace opencl {

// Every buffer travels as (pointer, element offset): a tensor may start
// inside its buffer (DLTensor byte_offset). AT() gives the tensor's start.
// Multi-dimensional index math unpacks int8 arguments into private arrays
// because OpenCL C 1.2 does not index vector components at run time.
const char* const kPreludeSource = R"CLC(
#define IN(T, p) __global const T* p##_b, const int p##_o
#define OUT(T, p) __global T* p##_b, const int p##_o
#define AT(p) (p##_b + p##_o)
#define UNPACK8(v, a) int a[8]; vstore8((v), 0, a)
)CLC";

}  // namespace opencl
}  // namespace singa
