#include "sources.hpp"

namespace singa {
namespace opencl {

// C[z] = alpha * A[z] B[z] + beta * R[z] for a batch of z, where
//   A[z](m, k) = A[a0 + m*sam + k*sak],  B[z](k, n) = B[b0 + k*sbk + n*sbn],
//   R[z](m, n) = R[r0 + m*srm + n*srn]  (the bias, any broadcast via 0 strides),
//   C[z] is contiguous M x N at z*M*N,
// and the batch offsets a0, b0, r0 come from z = z1*nb2 + z2 through two
// stride pairs (two coalesced broadcast batch dims; the host loops over more).
// Strides express transposes, so one kernel serves Gemm, MatMul and Conv.
//
// gemm_tiled: a 64x64 tile of C per 16x16 work group, each work item 4x4
// outputs strided by 16 (so neighbouring items touch neighbouring columns),
// K walked in slices of 16 staged in local memory.
const char* const kGemmSource = R"CLC(
#define TS 64
#define TK 16
#define WPT 4
#define RTS 16

#define GEMM_ARGS                                                                                           \
  IN(float, A), IN(float, B), IN(float, R), OUT(float, C), const int M, const int N, const int K,           \
      const int sam, const int sak, const int sbk, const int sbn, const int srm, const int srn,             \
      const float alpha, const float beta, const int nb2, const int sa1, const int sa2, const int sb1,      \
      const int sb2, const int sr1, const int sr2

#define GEMM_BATCH                                                                                          \
  const int z = get_global_id(2);                                                                           \
  const int z1 = z / nb2, z2 = z - z1 * nb2;                                                                \
  __global const float* a = AT(A) + z1 * sa1 + z2 * sa2;                                                    \
  __global const float* b = AT(B) + z1 * sb1 + z2 * sb2;                                                    \
  __global const float* r = AT(R) + z1 * sr1 + z2 * sr2;                                                    \
  __global float* c = AT(C) + (long)z * M * N

__kernel __attribute__((reqd_work_group_size(RTS, RTS, 1))) void gemm_tiled(GEMM_ARGS) {
  GEMM_BATCH;
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int n0 = get_group_id(0) * TS, m0 = get_group_id(1) * TS;
  const int lid = ty * RTS + tx;
  __local float As[TK][TS];
  __local float Bs[TK][TS];
  float acc[WPT][WPT];
  for (int i = 0; i < WPT; ++i)
    for (int j = 0; j < WPT; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += TK) {
    for (int l = 0; l < (TS * TK) / (RTS * RTS); ++l) {
      const int e = lid + l * RTS * RTS;
      // A: consecutive items take consecutive k when A is k-contiguous,
      // consecutive m otherwise (a transposed A).
      int mm, kk;
      if (sak == 1) { kk = e % TK; mm = e / TK; } else { mm = e % TS; kk = e / TS; }
      const int m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < K) ? a[m * sam + k * sak] : 0.0f;
      int nn, kb;
      if (sbn == 1) { nn = e % TS; kb = e / TS; } else { kb = e % TK; nn = e / TK; }
      const int n = n0 + nn, kq = k0 + kb;
      Bs[kb][nn] = (n < N && kq < K) ? b[kq * sbk + n * sbn] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; ++kk) {
      float bv[WPT];
      for (int j = 0; j < WPT; ++j) bv[j] = Bs[kk][tx + j * RTS];
      for (int i = 0; i < WPT; ++i) {
        const float av = As[kk][ty + i * RTS];
        for (int j = 0; j < WPT; ++j) acc[i][j] = mad(av, bv[j], acc[i][j]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < WPT; ++i) {
    const int m = m0 + ty + i * RTS;
    if (m >= M) continue;
    for (int j = 0; j < WPT; ++j) {
      const int n = n0 + tx + j * RTS;
      if (n >= N) continue;
      float v = alpha * acc[i][j];
      if (beta != 0.0f) v += beta * r[m * srm + n * srn];
      c[m * N + n] = v;
    }
  }
}

// 4 rows x 8 columns of C per work item, B read as float8 along n (needs
// sbn == 1), no local memory and no barriers: for CPU devices, where
// explicit vectors beat staging tiles through (emulated) local memory.
inline float8 load_row8(__global const float* p, const int count) {
  if (count >= 8) return vload8(0, p);
  float t[8];
  for (int j = 0; j < 8; ++j) t[j] = j < count ? p[j] : 0.0f;
  return vload8(0, t);
}

inline void store_row8(__global float* c, __global const float* r, const int srn, const float8 v, const int count,
                       const float alpha, const float beta) {
  float t[8];
  vstore8(v, 0, t);
  for (int j = 0; j < count && j < 8; ++j) {
    float y = alpha * t[j];
    if (beta != 0.0f) y += beta * r[j * srn];
    c[j] = y;
  }
}

__kernel void gemm_vec(GEMM_ARGS) {
  GEMM_BATCH;
  const int n0 = get_global_id(0) * 8, m0 = get_global_id(1) * 4;
  if (n0 >= N || m0 >= M) return;
  const int cols = min(8, N - n0), rows = min(4, M - m0);
  // Rows past M re-read row m0 (valid memory) and are never stored.
  __global const float* a0 = a + m0 * sam;
  __global const float* a1 = a + (rows > 1 ? m0 + 1 : m0) * sam;
  __global const float* a2 = a + (rows > 2 ? m0 + 2 : m0) * sam;
  __global const float* a3 = a + (rows > 3 ? m0 + 3 : m0) * sam;
  float8 c0 = (float8)(0.0f), c1 = (float8)(0.0f), c2 = (float8)(0.0f), c3 = (float8)(0.0f);
  for (int k = 0; k < K; ++k) {
    const float8 bv = load_row8(b + k * sbk + n0, cols);
    const int ak = k * sak;
    c0 = mad((float8)(a0[ak]), bv, c0);
    c1 = mad((float8)(a1[ak]), bv, c1);
    c2 = mad((float8)(a2[ak]), bv, c2);
    c3 = mad((float8)(a3[ak]), bv, c3);
  }
  const float8 acc[4] = {c0, c1, c2, c3};
  for (int i = 0; i < rows; ++i)
    store_row8(c + (m0 + i) * N + n0, r + (m0 + i) * srm + n0 * srn, srn, acc[i], cols, alpha, beta);
}

// One output per work item: for thin products (M or N small), where a
// 64x64 tile would mostly compute padding, and devices with small groups.
__kernel void gemm_simple(GEMM_ARGS) {
  GEMM_BATCH;
  const int n = get_global_id(0), m = get_global_id(1);
  if (n >= N || m >= M) return;
  __global const float* ap = a + m * sam;
  __global const float* bp = b + n * sbn;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = mad(ap[k * sak], bp[k * sbk], acc);
  float v = alpha * acc;
  if (beta != 0.0f) v += beta * r[m * srm + n * srn];
  c[m * N + n] = v;
}
)CLC";

}  // namespace opencl
}  // namespace singa
