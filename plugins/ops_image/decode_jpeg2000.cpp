// decode_jpeg2000.cpp - JPEG 2000 (JP2 files and raw J2K codestreams) through
// OpenJPEG. Gray (1-2 components) and colour (3-4) images; samples of other
// precisions are shifted to 8 bits and signed ones offset, as Pillow does;
// subsampled components are repeated to full size.
#include "image.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <openjpeg.h>

namespace singa {
namespace image {
namespace {

OPJ_SIZE_T read_fn(void* buf, OPJ_SIZE_T size, void* user) {
  auto* m = static_cast<Memory*>(user);
  if (m->at >= m->n) return OPJ_SIZE_T(-1);
  return m->read(buf, size_t(size));
}
OPJ_OFF_T skip_fn(OPJ_OFF_T off, void* user) {
  auto* m = static_cast<Memory*>(user);
  if (off < 0) {
    if (size_t(-off) > m->at) return -1;
    m->at -= size_t(-off);
    return off;
  }
  const size_t k = std::min(size_t(off), m->n - std::min(m->at, m->n));
  m->at += k;
  return OPJ_OFF_T(k);
}
OPJ_BOOL seek_fn(OPJ_OFF_T off, void* user) {
  auto* m = static_cast<Memory*>(user);
  if (off < 0 || size_t(off) > m->n) return OPJ_FALSE;
  m->at = size_t(off);
  return OPJ_TRUE;
}
void quiet(const char*, void*) {}

struct Guard {
  opj_codec_t* codec = nullptr;
  opj_stream_t* stream = nullptr;
  opj_image_t* image = nullptr;
  ~Guard() {
    if (image) opj_image_destroy(image);
    if (stream) opj_stream_destroy(stream);
    if (codec) opj_destroy_codec(codec);
  }
};

}  // namespace

bool decode_jpeg2000(const uint8_t* p, size_t n, Sink& sink) {
  Memory mem{p, n, 0};
  Guard g;
  const bool raw = n >= 2 && p[0] == 0xff && p[1] == 0x4f;
  g.codec = opj_create_decompress(raw ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
  if (!g.codec) return false;
  opj_set_error_handler(g.codec, quiet, nullptr);
  opj_set_warning_handler(g.codec, quiet, nullptr);
  opj_set_info_handler(g.codec, quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(g.codec, &params)) return false;
  g.stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  if (!g.stream) return false;
  opj_stream_set_user_data(g.stream, &mem, nullptr);
  opj_stream_set_user_data_length(g.stream, n);
  opj_stream_set_read_function(g.stream, read_fn);
  opj_stream_set_skip_function(g.stream, skip_fn);
  opj_stream_set_seek_function(g.stream, seek_fn);
  if (!opj_read_header(g.stream, g.codec, &g.image) || !g.image) return false;
  const int64_t w = int64_t(g.image->x1) - int64_t(g.image->x0), h = int64_t(g.image->y1) - int64_t(g.image->y0);
  const int nc = int(g.image->numcomps);
  if (w <= 0 || h <= 0 || w > kMaxSide || h > kMaxSide || nc < 1 || nc > 4) return false;
  sink.start(h, w);
  if (!opj_decode(g.codec, g.stream, g.image) || !opj_end_decompress(g.codec, g.stream)) return false;
  const int used = nc >= 3 ? 3 : 1;
  for (int c = 0; c < used; ++c) {
    const opj_image_comp_t& comp = g.image->comps[c];
    if (!comp.data || comp.dx == 0 || comp.dy == 0 || comp.prec < 1 || comp.prec > 31) return false;
    // The component must cover the image at its subsampling.
    if (int64_t(comp.w) * comp.dx < w || int64_t(comp.h) * comp.dy < h) return false;
  }
  std::vector<uint8_t> row(size_t(w) * used);
  for (int64_t y = 0; y < h; ++y) {
    for (int c = 0; c < used; ++c) {
      const opj_image_comp_t& comp = g.image->comps[c];
      const OPJ_INT32* src = comp.data + size_t(y / comp.dy) * comp.w;
      const int shift = 8 - int(comp.prec);
      const int64_t offset = comp.sgnd ? (int64_t(1) << (comp.prec - 1)) : 0;
      for (int64_t x = 0; x < w; ++x) {
        int64_t v = int64_t(src[x / comp.dx]) + offset;
        v = shift >= 0 ? v << shift : v >> -shift;
        row[size_t(x * used + c)] = uint8_t(std::clamp<int64_t>(v, 0, 255));
      }
    }
    sink.row(y, row.data(), used);
  }
  return true;
}

}  // namespace image
}  // namespace singa
