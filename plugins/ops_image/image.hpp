// image.hpp - what the ImageDecoder kernel and the format decoders share.
// A decoder reads the encoded bytes, reports the image size to a Sink (which
// allocates the output, within the runtime's memory limit) and hands it the
// pixels row by row as 8-bit samples; the Sink converts each row to the
// requested pixel format. A decoder returns false for data it cannot decode.
#ifndef SINGA_OPS_IMAGE_IMAGE_HPP
#define SINGA_OPS_IMAGE_IMAGE_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace singa {
namespace image {

class Sink {
 public:
  virtual ~Sink() = default;
  // The image is `height` x `width` (both > 0); may throw (memory limit).
  virtual void start(int64_t height, int64_t width) = 0;
  // Row y, `width` pixels of `channels` samples: 1 gray, 2 gray+alpha,
  // 3 RGB, 4 RGBA (alpha is dropped).
  virtual void row(int64_t y, const uint8_t* src, int channels) = 0;
};

// Each checks its own signature first and returns false when it does not match.
bool is_jpeg(const uint8_t* p, size_t n);
bool is_png(const uint8_t* p, size_t n);
bool is_bmp(const uint8_t* p, size_t n);
bool is_pnm(const uint8_t* p, size_t n);
bool is_tiff(const uint8_t* p, size_t n);
bool is_webp(const uint8_t* p, size_t n);
bool is_jpeg2000(const uint8_t* p, size_t n);

bool decode_jpeg(const uint8_t* p, size_t n, Sink& sink);
bool decode_png(const uint8_t* p, size_t n, Sink& sink);
bool decode_bmp(const uint8_t* p, size_t n, Sink& sink);
bool decode_pnm(const uint8_t* p, size_t n, Sink& sink);
#ifdef SINGA_HAVE_TIFF
bool decode_tiff(const uint8_t* p, size_t n, Sink& sink);
#endif
#ifdef SINGA_HAVE_WEBP
bool decode_webp(const uint8_t* p, size_t n, Sink& sink);
#endif
#ifdef SINGA_HAVE_OPENJPEG
bool decode_jpeg2000(const uint8_t* p, size_t n, Sink& sink);
#endif

// The encoded bytes as a stream for the libraries that read through
// callbacks; `at` may be moved past the end by a seek.
struct Memory {
  const uint8_t* p;
  size_t n;
  size_t at;

  size_t left() const { return at < n ? n - at : 0; }
  // Copies up to `size` bytes from the cursor and moves past them.
  size_t read(void* buf, size_t size) {
    const size_t k = std::min(size, left());
    std::memcpy(buf, p + at, k);
    at += k;
    return k;
  }
};

// The largest width or height any decoder accepts.
constexpr int64_t kMaxSide = 1 << 20;

}  // namespace image
}  // namespace singa
#endif
