// decode_bmp.cpp - Windows bitmaps: core (OS/2 1.x) and info headers (v1-v5),
// 1/4/8-bit palettes, 16-bit (5-5-5 or bit fields), 24-bit and 32-bit (plain
// or bit fields), uncompressed or RLE8/RLE4, bottom-up or top-down.
// Everything read is bounds-checked against the buffer.
#include "image.hpp"

#include <cstring>
#include <vector>

namespace singa {
namespace image {
namespace {

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }

// One colour channel from a bit-field mask, scaled to 8 bits.
struct Field {
  uint32_t mask = 0;
  int shift = 0, bits = 0;
  explicit Field(uint32_t m = 0) : mask(m) {
    if (!m) return;
    while (!((m >> shift) & 1u)) ++shift;
    while (shift + bits < 32 && ((m >> (shift + bits)) & 1u)) ++bits;
  }
  uint8_t get(uint32_t v) const {
    if (!bits) return 0;
    const uint32_t x = (v & mask) >> shift;
    if (bits >= 8) return uint8_t(x >> (bits - 8));
    const uint32_t max = (1u << bits) - 1u;
    return uint8_t((x * 255u + max / 2) / max);
  }
};

}  // namespace

bool decode_bmp(const uint8_t* p, size_t n, Sink& sink) {
  if (n < 26) return false;
  const uint32_t data_off = le32(p + 10), hsize = le32(p + 14);
  int64_t w, h;
  uint32_t bpp, comp = 0, colors = 0;
  size_t pal_entry = 4;
  if (hsize == 12) {
    w = le16(p + 18);
    h = int16_t(le16(p + 20));
    bpp = le16(p + 24);
    pal_entry = 3;
  } else if (hsize >= 40 && hsize <= 124 && n >= 14 + size_t(hsize)) {
    w = int32_t(le32(p + 18));
    h = int32_t(le32(p + 22));
    bpp = le16(p + 28);
    comp = le32(p + 30);
    colors = le32(p + 46);
  } else {
    return false;
  }
  const bool top_down = h < 0;
  if (top_down) h = -h;
  if (w <= 0 || h <= 0 || w > kMaxSide || h > kMaxSide) return false;
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) return false;
  const bool rle8 = comp == 1, rle4 = comp == 2;
  const bool fields = comp == 3 || comp == 6;
  if (comp > 3 && comp != 6) return false;  // JPEG/PNG inside a BMP are not supported
  if ((rle8 && bpp != 8) || (rle4 && bpp != 4) || (fields && bpp != 16 && bpp != 32)) return false;

  // Masks for 16/32-bit pixels.
  Field r, g, b;
  if (fields) {
    const size_t at = hsize >= 52 ? 14 + 40 : 14 + size_t(hsize);
    if (n < at + 12) return false;
    r = Field(le32(p + at));
    g = Field(le32(p + at + 4));
    b = Field(le32(p + at + 8));
  } else if (bpp == 16) {
    r = Field(0x7c00u);
    g = Field(0x03e0u);
    b = Field(0x001fu);
  }

  // The palette follows the header (and the three masks of a v1 header).
  std::vector<uint8_t> pal;  // RGB triples
  if (bpp <= 8) {
    const uint32_t max = 1u << bpp;
    if (colors == 0 || colors > max) colors = max;
    const size_t at = 14 + size_t(hsize) + (comp == 3 && hsize == 40 ? 12 : 0);
    pal.assign(size_t(max) * 3, 0);
    for (uint32_t i = 0; i < colors; ++i) {
      const size_t q = at + i * pal_entry;
      if (q + 3 > n) return false;
      pal[3 * i] = p[q + 2];
      pal[3 * i + 1] = p[q + 1];
      pal[3 * i + 2] = p[q];
    }
  }
  if (data_off >= n) return false;
  const uint8_t* px = p + data_off;
  const size_t avail = n - data_off;

  sink.start(h, w);
  std::vector<uint8_t> rgb(size_t(w) * 3);
  auto out_row = [&](int64_t file_row) { return top_down ? file_row : h - 1 - file_row; };

  if (rle8 || rle4) {
    // Decode into an index image first: RLE may skip pixels (left at 0).
    std::vector<uint8_t> idx(size_t(w) * size_t(h), 0);
    size_t i = 0;
    int64_t x = 0, y = 0;
    while (i + 1 < avail && y < h) {
      const uint8_t a = px[i], c = px[i + 1];
      i += 2;
      if (a > 0) {
        for (int k = 0; k < a && x < w; ++k, ++x)
          idx[size_t(y * w + x)] = rle8 ? c : ((k & 1) ? (c & 0x0f) : (c >> 4));
      } else if (c == 0) {
        x = 0;
        ++y;
      } else if (c == 1) {
        break;
      } else if (c == 2) {
        if (i + 1 >= avail) break;
        x += px[i];
        y += px[i + 1];
        i += 2;
      } else {
        const size_t bytes = rle8 ? c : (size_t(c) + 1) / 2;
        if (i + bytes > avail) break;
        for (int k = 0; k < c && x < w; ++k, ++x)
          idx[size_t(y * w + x)] = rle8 ? px[i + size_t(k)] : ((k & 1) ? (px[i + size_t(k) / 2] & 0x0f) : (px[i + size_t(k) / 2] >> 4));
        i += (bytes + 1) & ~size_t(1);
      }
    }
    for (int64_t fy = 0; fy < h; ++fy) {
      for (int64_t xx = 0; xx < w; ++xx) std::memcpy(&rgb[size_t(3 * xx)], &pal[3 * size_t(idx[size_t(fy * w + xx)])], 3);
      sink.row(out_row(fy), rgb.data(), 3);
    }
    return true;
  }

  const size_t stride = ((size_t(w) * bpp + 31) / 32) * 4;
  if (stride * size_t(h) > avail) {
    // Pillow refuses truncated pixel data too.
    return false;
  }
  for (int64_t fy = 0; fy < h; ++fy) {
    const uint8_t* s = px + size_t(fy) * stride;
    for (int64_t x = 0; x < w; ++x) {
      uint8_t* d = &rgb[size_t(3 * x)];
      switch (bpp) {
        case 1: case 4: case 8: {
          const size_t bit = size_t(x) * bpp;
          const uint32_t v = (s[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1u);
          std::memcpy(d, &pal[3 * v], 3);
          break;
        }
        case 16: {
          const uint32_t v = le16(s + 2 * x);
          d[0] = r.get(v);
          d[1] = g.get(v);
          d[2] = b.get(v);
          break;
        }
        case 24:
          d[0] = s[3 * x + 2];
          d[1] = s[3 * x + 1];
          d[2] = s[3 * x];
          break;
        default: {
          if (fields) {
            const uint32_t v = le32(s + 4 * x);
            d[0] = r.get(v);
            d[1] = g.get(v);
            d[2] = b.get(v);
          } else {
            d[0] = s[4 * x + 2];
            d[1] = s[4 * x + 1];
            d[2] = s[4 * x];
          }
        }
      }
    }
    sink.row(out_row(fy), rgb.data(), 3);
  }
  return true;
}

}  // namespace image
}  // namespace singa
