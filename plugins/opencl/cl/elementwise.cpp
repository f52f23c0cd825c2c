#include "sources.hpp"

namespace singa {
namespace opencl {

// Binary ops (numpy broadcasting through coalesced dims/strides), unary
// activations selected by an op code, and a fill.
const char* const kElementwiseSource = R"CLC(
inline float binop(const int op, const float a, const float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    default: return pow(a, b);
  }
}

__kernel void binary_same(IN(float, a), IN(float, b), OUT(float, y), const int n, const int op) {
  const int i = get_global_id(0);
  if (i >= n) return;
  AT(y)[i] = binop(op, AT(a)[i], AT(b)[i]);
}

// b is one value repeated (a scalar or a shape of ones).
__kernel void binary_scalar_b(IN(float, a), IN(float, b), OUT(float, y), const int n, const int op) {
  const int i = get_global_id(0);
  if (i >= n) return;
  AT(y)[i] = binop(op, AT(a)[i], AT(b)[0]);
}

__kernel void binary_bcast(IN(float, a), IN(float, b), OUT(float, y), const int n, const int rank, const int8 dims_v,
                           const int8 sa_v, const int8 sb_v, const int op) {
  const int i = get_global_id(0);
  if (i >= n) return;
  UNPACK8(dims_v, dims);
  UNPACK8(sa_v, sa);
  UNPACK8(sb_v, sb);
  int rem = i, oa = 0, ob = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int idx = rem % dims[d];
    rem /= dims[d];
    oa += idx * sa[d];
    ob += idx * sb[d];
  }
  AT(y)[i] = binop(op, AT(a)[oa], AT(b)[ob]);
}

// x and y may be the same buffer (in place): each element is read before it
// is written, by the same work item.
__kernel void unary(IN(float, x), OUT(float, y), const int n, const int op, const float alpha, const float beta) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const float v = AT(x)[i];
  float r;
  switch (op) {
    case 0: r = v > 0.0f ? v : 0.0f; break;                                      // Relu
    case 1: r = v >= 0.0f ? 1.0f / (1.0f + exp(-v)) : exp(v) / (1.0f + exp(v)); break;  // Sigmoid
    case 2: r = tanh(v); break;                                                  // Tanh
    case 3: r = v >= 0.0f ? v : alpha * v; break;                                // LeakyRelu
    case 4: r = v >= 0.0f ? v : alpha * (exp(v) - 1.0f); break;                  // Elu
    case 5: r = exp(v); break;
    case 6: r = log(v); break;
    case 7: r = sqrt(v); break;
    case 8: r = -v; break;
    case 9: r = fabs(v); break;
    case 10: r = isnan(v) ? v : fmin(fmax(v, alpha), beta); break;               // Clip
    default: r = v; break;
  }
  AT(y)[i] = r;
}

__kernel void fill(OUT(float, y), const int n, const float value) {
  const int i = get_global_id(0);
  if (i < n) AT(y)[i] = value;
}
)CLC";

}  // namespace opencl
}  // namespace singa
