// decode_png.cpp - PNG through libpng: palettes and low bit depths are
// expanded to 8-bit samples and 16-bit samples keep their high byte.
#include "image.hpp"

#include <csetjmp>
#include <cstring>
#include <vector>

#include <png.h>

namespace singa {
namespace image {
namespace {

void read_fn(png_structp png, png_bytep out, png_size_t len) {
  auto* r = static_cast<Memory*>(png_get_io_ptr(png));
  if (len > r->left()) png_error(png, "truncated PNG");
  r->read(out, len);
}

void on_error(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void on_warning(png_structp, png_const_charp) {}

}  // namespace

bool decode_png(const uint8_t* p, size_t n, Sink& sink) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, on_error, on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  Memory reader{p, n, 0};
  std::vector<uint8_t> buf;
  std::vector<png_bytep> rows;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &reader, read_fn);
  png_set_user_limits(png, uint32_t(kMaxSide), uint32_t(kMaxSide));
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int ch = png_get_channels(png, info);
  const size_t rowbytes = png_get_rowbytes(png, info);
  if (ch < 1 || ch > 4 || rowbytes < size_t(w) * size_t(ch)) png_error(png, "unexpected PNG layout");
  try {
    sink.start(int64_t(h), int64_t(w));
    buf.resize(passes > 1 ? rowbytes * h : rowbytes);
    if (passes > 1) {
      rows.resize(h);
      for (png_uint_32 y = 0; y < h; ++y) rows[y] = buf.data() + size_t(y) * rowbytes;
    }
  } catch (...) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw;
  }
  if (passes > 1) {
    png_read_image(png, rows.data());
    for (png_uint_32 y = 0; y < h; ++y) sink.row(int64_t(y), rows[y], ch);
  } else {
    for (png_uint_32 y = 0; y < h; ++y) {
      png_read_row(png, buf.data(), nullptr);
      sink.row(int64_t(y), buf.data(), ch);
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace image
}  // namespace singa
