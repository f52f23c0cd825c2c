// kernels_math.hpp - elementwise math, comparisons, casts and reductions
// (kernels_math.cu). Element types are chosen at run time (DType); each
// launcher lists the types it implements and answers cudaErrorInvalidValue
// for others, which the registrations never send. Every launcher queues work
// on `stream` and returns the launch status.
#ifndef SINGA_CUDA_KERNELS_MATH_HPP
#define SINGA_CUDA_KERNELS_MATH_HPP

#include "kernels.hpp"

namespace singa {
namespace cuda {

// One-input math, y = f(x), with the CPU kernels' formulas (ops_math/unary.cpp,
// ops_nn/activations.cpp). alpha and beta are the op's attributes: LeakyRelu,
// Elu, Celu, ThresholdedRelu (alpha), Selu (alpha, gamma = beta),
// HardSigmoid (alpha, beta); kDivBy divides by alpha (Mean).
enum class MathOp {
  kAbs, kNeg, kSign,  // also int32, int64
  kExp, kLog, kSqrt, kReciprocal, kFloor, kCeil, kRound, kErf,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh,
  kSoftplus, kSoftsign, kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid, kHardSwish, kThresholdedRelu,
  kDivBy,
};
// T: float, double (and int32, int64 where noted). y may alias x.
cudaError_t launch_math(MathOp op, DType t, const void* x, void* y, int64_t n, double alpha, double beta,
                        cudaStream_t stream);

// Clip to [lo, hi]; lo and hi point to one host value of the element type,
// or are null for an open side. T: float, double, int32, int64.
cudaError_t launch_clip(DType t, const void* x, void* y, int64_t n, const void* lo, const void* hi, cudaStream_t stream);

// Broadcast binary math. kPow: base float/double, exponent float, double,
// int32 or int64 (tb). kMax, kMin (NaN wins, as numpy), kPRelu (b is the
// slope): ta == tb, float, double, int32, int64.
enum class BinaryMath { kPow, kMax, kMin, kPRelu };
cudaError_t launch_binary_math(BinaryMath op, DType ta, DType tb, const void* a, const void* b, void* y,
                               const BroadcastPlan& plan, cudaStream_t stream);

// y (bool bytes 0/1) = a op b, broadcast. T: float, double, int32, int64,
// bool (compared as truth values).
enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };
cudaError_t launch_compare(CompareOp op, DType t, const void* a, const void* b, uint8_t* y, const BroadcastPlan& plan,
                           cudaStream_t stream);

// Bool tensors: any nonzero byte is true; results are 0/1.
enum class LogicOp { kAnd, kOr, kXor };
cudaError_t launch_logic(LogicOp op, const uint8_t* a, const uint8_t* b, uint8_t* y, const BroadcastPlan& plan,
                         cudaStream_t stream);
cudaError_t launch_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream);

// out = cond ? x : y over a three-input plan (strides[0] cond, [1] x,
// [2] y); elements of `elem_size` bytes (1, 2, 4 or 8).
cudaError_t launch_where(size_t elem_size, const uint8_t* cond, const void* x, const void* y, void* out,
                         const BroadcastPlan& plan, cudaStream_t stream);

// Cast between float, double, int8, uint8, int32, int64 and bool, as the
// CPU's Cast: float to integer saturates (NaN -> 0), to bool is x != 0.
cudaError_t launch_cast(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t stream);

// Reductions over any set of axes. The host merges adjacent dims of the same
// kind: output element o walks the kept dims (row-major) for its base offset,
// then `count` elements over the reduced dims.
constexpr int kMaxReduceDims = 8;
struct ReducePlan {
  int64_t outputs = 0, count = 0;
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxReduceDims] = {}, kept_strides[kMaxReduceDims] = {};
  int64_t red_dims[kMaxReduceDims] = {}, red_strides[kMaxReduceDims] = {};
};
// Accumulation as the CPU (ops_reduce/reduce.cpp): floats in double,
// integers in 64 bits; Max/Min let NaN win. T: float, double, int32, int64.
enum class ReduceOp { kSum, kMean, kProd, kMax, kMin, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };
cudaError_t launch_reduce(ReduceOp op, DType t, const void* x, void* y, const ReducePlan& plan, cudaStream_t stream);

// ArgMax / ArgMin along the middle axis of [outer, n, inner]: the first
// extreme (the last with select_last), NaN counting as the extreme.
// T: float, double, int32, int64.
cudaError_t launch_arg_extreme(bool is_max, bool select_last, DType t, const void* x, int64_t* y, int64_t outer,
                               int64_t n, int64_t inner, cudaStream_t stream);

}  // namespace cuda
}  // namespace singa

#endif
