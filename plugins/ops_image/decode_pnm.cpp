// decode_pnm.cpp - the Netpbm formats: P1/P4 bitmaps (1 is black), P2/P5
// gray maps and P3/P6 pixmaps, ASCII or binary, maxval up to 65535 (samples
// scaled to 8 bits). Header comments (#) are skipped.
#include "image.hpp"

#include <vector>

namespace singa {
namespace image {
namespace {

bool space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Reads an unsigned decimal after whitespace and comments.
bool number(const uint8_t* p, size_t n, size_t& i, uint64_t& v) {
  for (;;) {
    while (i < n && space(p[i])) ++i;
    if (i < n && p[i] == '#') {
      while (i < n && p[i] != '\n' && p[i] != '\r') ++i;
      continue;
    }
    break;
  }
  if (i >= n || p[i] < '0' || p[i] > '9') return false;
  v = 0;
  while (i < n && p[i] >= '0' && p[i] <= '9') {
    v = v * 10 + uint64_t(p[i++] - '0');
    if (v > (uint64_t(1) << 32)) return false;
  }
  return true;
}

}  // namespace

bool decode_pnm(const uint8_t* p, size_t n, Sink& sink) {
  const int kind = p[1] - '0';
  size_t i = 2;
  uint64_t w = 0, h = 0, maxval = 1;
  if (!number(p, n, i, w) || !number(p, n, i, h)) return false;
  const bool bitmap = kind == 1 || kind == 4;
  if (!bitmap && (!number(p, n, i, maxval) || maxval == 0 || maxval > 65535)) return false;
  if (w == 0 || h == 0 || w > uint64_t(kMaxSide) || h > uint64_t(kMaxSide)) return false;
  const bool binary = kind >= 4;
  const int ch = (kind == 3 || kind == 6) ? 3 : 1;
  // Binary data starts after exactly one whitespace character.
  if (binary) {
    if (i >= n || !space(p[i])) return false;
    ++i;
  }
  const size_t sample_bytes = maxval > 255 ? 2 : 1;
  const size_t row_bytes = kind == 4 ? (size_t(w) + 7) / 8 : size_t(w) * ch * sample_bytes;
  if (binary && (n - i) / row_bytes < h) return false;
  auto scale = [&](uint64_t v) -> uint8_t {
    if (v > maxval) v = maxval;
    return maxval == 255 ? uint8_t(v) : uint8_t((v * 255 + maxval / 2) / maxval);
  };

  sink.start(int64_t(h), int64_t(w));
  std::vector<uint8_t> row(size_t(w) * ch);
  for (uint64_t y = 0; y < h; ++y) {
    if (kind == 4) {
      const uint8_t* s = p + i + y * row_bytes;
      for (uint64_t x = 0; x < w; ++x) row[x] = ((s[x / 8] >> (7 - x % 8)) & 1) ? 0 : 255;
    } else if (binary) {
      const uint8_t* s = p + i + y * row_bytes;
      for (size_t k = 0; k < row.size(); ++k)
        row[k] = scale(sample_bytes == 2 ? (uint64_t(s[2 * k]) << 8 | s[2 * k + 1]) : s[k]);
    } else {
      for (size_t k = 0; k < row.size(); ++k) {
        uint64_t v = 0;
        if (kind == 1) {
          // Bitmap digits need no separators.
          while (i < n && (space(p[i]) || p[i] == '#')) {
            if (p[i] == '#')
              while (i < n && p[i] != '\n') ++i;
            else
              ++i;
          }
          if (i >= n || (p[i] != '0' && p[i] != '1')) return false;
          row[k] = p[i++] == '1' ? 0 : 255;
          continue;
        }
        if (!number(p, n, i, v)) return false;
        row[k] = scale(v);
      }
    }
    sink.row(int64_t(y), row.data(), ch);
  }
  return true;
}

}  // namespace image
}  // namespace singa
