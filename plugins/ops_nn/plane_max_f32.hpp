// plane_max_f32.hpp - GlobalMaxPool's float plane maximum.
#ifndef SINGA_OPS_NN_PLANE_MAX_F32_HPP
#define SINGA_OPS_NN_PLANE_MAX_F32_HPP

#include "../common/vec_math.hpp"  // SINGA_VEC_CLONES

#include <cstdint>

namespace singa {
namespace nn {

// A float plane's maximum in 16 independent lanes (one dependent compare per
// element left GlobalMaxPool at 2x ORT). Each lane keeps std::max's rule
// (a NaN in x[0] sticks, a later NaN is passed over), so the result is the
// scalar loop's.
SINGA_VEC_CLONES inline float plane_max_f32(const float* x, int64_t n) {
  constexpr int L = 16;
  float r = x[0];
  int64_t i = 1;
  if (n >= L + 1) {
    float acc[L];
    for (int l = 0; l < L; ++l) acc[l] = r;
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) acc[l] = acc[l] < x[i + l] ? x[i + l] : acc[l];
    for (int l = 0; l < L; ++l) r = r < acc[l] ? acc[l] : r;
  }
  for (; i < n; ++i) r = r < x[i] ? x[i] : r;
  return r;
}

}  // namespace nn
}  // namespace singa
#endif
