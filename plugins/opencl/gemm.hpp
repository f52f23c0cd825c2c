// gemm.hpp - one strided, batched matrix product on the device (the
// gemm_tiled / gemm_simple kernels of cl/gemm.cpp), shared by Gemm, MatMul
// and Conv. See cl/gemm.cpp for the meaning of every stride.
#ifndef SINGA_OPENCL_GEMM_HPP
#define SINGA_OPENCL_GEMM_HPP

#include "ops_common.hpp"

namespace singa {
namespace opencl {

struct GemmCall {
  Buf a{}, b{}, bias{}, c{};
  cl_int M = 0, N = 0, K = 0;
  cl_int sam = 0, sak = 1, sbk = 0, sbn = 1, srm = 0, srn = 0;
  cl_float alpha = 1.0f, beta = 0.0f;  // beta 0: no bias (bias may be any buffer)
  // batch = nb1 * nb2 products; C of product z at z * M * N.
  cl_int nb1 = 1, nb2 = 1;
  cl_int sa1 = 0, sa2 = 0, sb1 = 0, sb2 = 0, sr1 = 0, sr2 = 0;
};

void gemm(const NodeKernel& k, DeviceEnv& env, const GemmCall& g);

}  // namespace opencl
}  // namespace singa

#endif
