// decode_webp.cpp - still WebP (lossy or lossless) through libwebp; alpha is
// not blended, only dropped. Animated files are not decoded.
#include "image.hpp"

#include <vector>

#include <webp/decode.h>

namespace singa {
namespace image {

bool decode_webp(const uint8_t* p, size_t n, Sink& sink) {
  int w = 0, h = 0;
  if (!WebPGetInfo(p, n, &w, &h) || w <= 0 || h <= 0 || w > kMaxSide || h > kMaxSide) return false;
  sink.start(h, w);
  std::vector<uint8_t> rgb(size_t(w) * size_t(h) * 3);
  if (!WebPDecodeRGBInto(p, n, rgb.data(), rgb.size(), w * 3)) return false;
  for (int y = 0; y < h; ++y) sink.row(y, rgb.data() + size_t(y) * size_t(w) * 3, 3);
  return true;
}

}  // namespace image
}  // namespace singa
