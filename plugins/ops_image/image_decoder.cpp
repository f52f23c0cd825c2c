// ImageDecoder (20): decodes one encoded image (a 1-D uint8 tensor) into an
// [H, W, C] uint8 tensor, C = 3 for pixel_format RGB or BGR and 1 for
// Grayscale. The format is recognised by its signature. As the spec says, data
// that cannot be decoded gives an empty [0, 0, C] tensor rather than an error.
// Gray images are repeated into three channels; colour is reduced to gray
// with the ITU-R 601 weights in the fixed point Pillow uses (the reference
// decodes with Pillow); alpha is dropped.
#include "image.hpp"
#include "register.hpp"

#include <cstdint>
#include <string>

namespace singa {
namespace image {
namespace {

enum class PixelFormat { kRGB, kBGR, kGray };

inline uint8_t luma(const uint8_t* rgb) {
  return uint8_t((uint32_t(rgb[0]) * 19595u + uint32_t(rgb[1]) * 38470u + uint32_t(rgb[2]) * 7471u + 0x8000u) >> 16);
}

class OutputSink : public Sink {
 public:
  OutputSink(sdk::Context& ctx, PixelFormat f) : ctx_(ctx), format_(f), c_(f == PixelFormat::kGray ? 1 : 3) {}

  void start(int64_t height, int64_t width) override {
    if (height <= 0 || width <= 0 || height > kMaxSide || width > kMaxSide)
      sdk::fail("image size " + std::to_string(width) + "x" + std::to_string(height) + " is out of range");
    out_ = ctx_.output(0, {height, width, c_}, SINGA_ONNX_UINT8).data<uint8_t>();
    h_ = height;
    w_ = width;
  }

  void row(int64_t y, const uint8_t* s, int ch) override {
    if (!out_ || y < 0 || y >= h_) return;
    uint8_t* d = out_ + y * w_ * c_;
    const int64_t w = w_;
    if (format_ == PixelFormat::kGray) {
      if (ch <= 2) {
        for (int64_t x = 0; x < w; ++x) d[x] = s[x * ch];
      } else {
        for (int64_t x = 0; x < w; ++x) d[x] = luma(s + x * ch);
      }
      return;
    }
    const bool bgr = format_ == PixelFormat::kBGR;
    if (ch <= 2) {
      for (int64_t x = 0; x < w; ++x) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x * ch];
    } else {
      for (int64_t x = 0; x < w; ++x) {
        const uint8_t* p = s + x * ch;
        d[3 * x] = bgr ? p[2] : p[0];
        d[3 * x + 1] = p[1];
        d[3 * x + 2] = bgr ? p[0] : p[2];
      }
    }
  }

  bool started() const { return out_ != nullptr; }
  int64_t channels() const { return c_; }

 private:
  sdk::Context& ctx_;
  PixelFormat format_;
  int64_t c_;
  uint8_t* out_ = nullptr;
  int64_t h_ = 0, w_ = 0;
};

class ImageDecoder {
 public:
  explicit ImageDecoder(const sdk::Node& node) {
    const std::string f = node.attr_string("pixel_format", "RGB");
    if (f == "RGB") format_ = PixelFormat::kRGB;
    else if (f == "BGR") format_ = PixelFormat::kBGR;
    else if (f == "Grayscale") format_ = PixelFormat::kGray;
    else node.fail("pixel_format must be RGB, BGR or Grayscale, got '" + f + "'");
  }

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0), "input encoded_stream is missing");
    const sdk::Tensor x = ctx.input(0);
    if (x.dtype() != SINGA_ONNX_UINT8)
      sdk::fail(std::string("encoded_stream must be uint8, got ") + sdk::dtype_name(x.dtype()));
    if (x.ndim() != 1) sdk::fail("encoded_stream must be 1-D, got rank " + std::to_string(x.ndim()));
    const uint8_t* p = x.data<uint8_t>();
    const size_t n = size_t(x.numel());
    OutputSink sink(ctx, format_);
    bool ok = false;
    if (is_jpeg(p, n)) ok = decode_jpeg(p, n, sink);
    else if (is_png(p, n)) ok = decode_png(p, n, sink);
    else if (is_bmp(p, n)) ok = decode_bmp(p, n, sink);
    else if (is_pnm(p, n)) ok = decode_pnm(p, n, sink);
#ifdef SINGA_HAVE_TIFF
    else if (is_tiff(p, n)) ok = decode_tiff(p, n, sink);
#endif
#ifdef SINGA_HAVE_WEBP
    else if (is_webp(p, n)) ok = decode_webp(p, n, sink);
#endif
#ifdef SINGA_HAVE_OPENJPEG
    else if (is_jpeg2000(p, n)) ok = decode_jpeg2000(p, n, sink);
#endif
    if (!ok) ctx.output(0, {0, 0, sink.channels()}, SINGA_ONNX_UINT8);
  }

 private:
  PixelFormat format_ = PixelFormat::kRGB;
};

}  // namespace

bool is_jpeg(const uint8_t* p, size_t n) { return n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff; }
bool is_png(const uint8_t* p, size_t n) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n < 8) return false;
  for (int i = 0; i < 8; ++i)
    if (p[i] != sig[i]) return false;
  return true;
}
bool is_bmp(const uint8_t* p, size_t n) { return n >= 2 && p[0] == 'B' && p[1] == 'M'; }
bool is_pnm(const uint8_t* p, size_t n) { return n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6'; }
bool is_tiff(const uint8_t* p, size_t n) {
  return n >= 4 && ((p[0] == 'I' && p[1] == 'I' && (p[2] == 42 || p[2] == 43) && p[3] == 0) ||
                    (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && (p[3] == 42 || p[3] == 43)));
}
bool is_webp(const uint8_t* p, size_t n) {
  return n >= 12 && p[0] == 'R' && p[1] == 'I' && p[2] == 'F' && p[3] == 'F' && p[8] == 'W' && p[9] == 'E' &&
         p[10] == 'B' && p[11] == 'P';
}
bool is_jpeg2000(const uint8_t* p, size_t n) {
  static const uint8_t jp2[12] = {0, 0, 0, 0x0c, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'};
  if (n >= 4 && p[0] == 0xff && p[1] == 0x4f && p[2] == 0xff && p[3] == 0x51) return true;  // raw codestream
  if (n < 12) return false;
  for (int i = 0; i < 12; ++i)
    if (p[i] != jp2[i]) return false;
  return true;
}

void register_image_decoder(sdk::Registrar& reg) {
  reg.kernel<ImageDecoder>("", "ImageDecoder", 20, SINGA_VERSION_OPEN, "cpu",
                           {{"T1", 0, sdk::bit(SINGA_ONNX_UINT8)}, {"T2", -1, sdk::bit(SINGA_ONNX_UINT8)}});
}

}  // namespace image
}  // namespace singa
