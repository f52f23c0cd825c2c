// line_aligned.hpp - scratch buffers whose data starts on a 64-byte cache line.
// A large std::vector's data lies 16 bytes into its pages (malloc's header on
// an mmap'd block), so a kernel that loads one 16-float vector per pixel
// touches two lines per load: the depthwise stencils ran twice as slow.
#ifndef SINGA_PLUGINS_COMMON_LINE_ALIGNED_HPP
#define SINGA_PLUGINS_COMMON_LINE_ALIGNED_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace singa {
namespace fast {

// Grows `v` to hold `n` floats from a 64-byte boundary on; returns that start.
inline float* line_aligned(std::vector<float>& v, size_t n) {
  constexpr size_t kLine = 64, kSlack = kLine / sizeof(float);
  if (v.size() < n + kSlack) v.resize(n + kSlack);
  const auto at = reinterpret_cast<uintptr_t>(v.data());
  return v.data() + (kLine - at % kLine) % kLine / sizeof(float);
}

}  // namespace fast
}  // namespace singa
#endif
