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

constexpr size_t kLineBytes = 64;
// The floats line_aligned adds to a buffer so that n of them fit after its first line boundary.
constexpr size_t kLineSlack = kLineBytes / sizeof(float);

// The first 64-byte boundary at or after p.
template <class F>
F* line_start(F* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  return p + (kLineBytes - at % kLineBytes) % kLineBytes / sizeof(float);
}

// Grows `v` to hold `n` floats from a 64-byte boundary on; returns that start.
inline float* line_aligned(std::vector<float>& v, size_t n) {
  if (v.size() < n + kLineSlack) v.resize(n + kLineSlack);
  return line_start(v.data());
}

}  // namespace fast
}  // namespace singa
#endif
