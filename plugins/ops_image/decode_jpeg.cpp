// decode_jpeg.cpp - baseline and progressive JPEG through libjpeg(-turbo),
// with libjpeg's defaults (accurate integer IDCT, fancy upsampling), as
// Pillow decodes. CMYK/YCCK files (Adobe's inverted CMYK) become RGB.
#include "image.hpp"

#include <csetjmp>
#include <cstdio>
#include <vector>

#include <jpeglib.h>

namespace singa {
namespace image {
namespace {

struct ErrorMgr {
  jpeg_error_mgr mgr;
  jmp_buf jump;
};

void on_error(j_common_ptr c) { std::longjmp(reinterpret_cast<ErrorMgr*>(c->err)->jump, 1); }
void on_message(j_common_ptr) {}

}  // namespace

bool decode_jpeg(const uint8_t* p, size_t n, Sink& sink) {
  jpeg_decompress_struct cinfo;
  ErrorMgr err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_error;
  err.mgr.output_message = on_message;
  std::vector<uint8_t> line, rgb;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, p, static_cast<unsigned long>(n));
  jpeg_read_header(&cinfo, TRUE);
  int ch = 3;
  if (cinfo.jpeg_color_space == JCS_GRAYSCALE) {
    cinfo.out_color_space = JCS_GRAYSCALE;
    ch = 1;
  } else if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    cinfo.out_color_space = JCS_CMYK;
    ch = 4;
  } else {
    cinfo.out_color_space = JCS_RGB;
  }
  jpeg_start_decompress(&cinfo);
  const int64_t w = cinfo.output_width, h = cinfo.output_height;
  try {
    sink.start(h, w);
    line.resize(size_t(w) * size_t(ch));
    if (ch == 4) rgb.resize(size_t(w) * 3);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    const int64_t y = cinfo.output_scanline;
    JSAMPROW row = line.data();
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
    if (ch == 4) {
      // Adobe writes CMYK inverted, so each channel times K is the colour.
      for (int64_t x = 0; x < w; ++x) {
        const uint8_t* q = line.data() + 4 * x;
        for (int c = 0; c < 3; ++c) rgb[size_t(3 * x + c)] = uint8_t((unsigned(q[c]) * q[3] + 127) / 255);
      }
      sink.row(y, rgb.data(), 3);
    } else {
      sink.row(y, line.data(), ch);
    }
  }
  // A truncated stream is padded with grey by libjpeg, as other decoders do.
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace image
}  // namespace singa
