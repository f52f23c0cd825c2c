// decode_tiff.cpp - TIFF through libtiff; the first image of the file is
// decoded. Striped 8-bit gray or RGB images (with or without alpha, any
// compression) are read by scanline, their samples as stored; everything else
// goes through libtiff's RGBA interface, which handles every photometric
// interpretation, bit depth and tiling libtiff knows (and premultiplies
// unassociated alpha, which is then dropped). libtiff reads from the buffer
// through client procedures, and its messages are silenced per file.
#include "image.hpp"

#include <cstdarg>
#include <cstring>
#include <vector>

#include <tiffio.h>

namespace singa {
namespace image {
namespace {

tmsize_t read_proc(thandle_t h, void* buf, tmsize_t size) {
  if (size < 0) return -1;
  return tmsize_t(static_cast<Memory*>(h)->read(buf, size_t(size)));
}
tmsize_t write_proc(thandle_t, void*, tmsize_t) { return -1; }
toff_t seek_proc(thandle_t h, toff_t off, int whence) {
  auto* m = static_cast<Memory*>(h);
  uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->at : m->n;
  const uint64_t to = base + off;  // toff_t is unsigned; a backwards seek wraps and fails the check
  if (to > m->n) return toff_t(-1);
  m->at = size_t(to);
  return to;
}
int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t h) { return static_cast<Memory*>(h)->n; }
int map_proc(thandle_t, void**, toff_t*) { return 0; }
void unmap_proc(thandle_t, void*, toff_t) {}
int quiet(TIFF*, void*, const char*, const char*, va_list) { return 1; }

}  // namespace

bool decode_tiff(const uint8_t* p, size_t n, Sink& sink) {
  Memory mem{p, n, 0};
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  if (!opts) return false;
  TIFFOpenOptionsSetErrorHandlerExtR(opts, quiet, nullptr);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, quiet, nullptr);
  TIFF* tif = TIFFClientOpenExt("memory", "rm", &mem, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                                unmap_proc, opts);
  TIFFOpenOptionsFree(opts);
  if (!tif) return false;
  struct Closer {
    TIFF* t;
    ~Closer() { TIFFClose(t); }
  } closer{tif};
  uint32_t w = 0, h = 0;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h)) return false;
  if (w == 0 || h == 0 || w > uint32_t(kMaxSide) || h > uint32_t(kMaxSide)) return false;
  uint16_t bps = 0, spp = 0, planar = 0, photo = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  const bool has_photo = TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo) != 0;
  const bool gray = has_photo && photo == PHOTOMETRIC_MINISBLACK && (spp == 1 || spp == 2);
  const bool rgb = has_photo && photo == PHOTOMETRIC_RGB && (spp == 3 || spp == 4);
  if (!TIFFIsTiled(tif) && bps == 8 && planar == PLANARCONFIG_CONTIG && (gray || rgb) &&
      TIFFScanlineSize(tif) >= tmsize_t(w) * spp) {
    sink.start(int64_t(h), int64_t(w));
    std::vector<uint8_t> line(size_t(TIFFScanlineSize(tif)));
    for (uint32_t y = 0; y < h; ++y) {
      if (TIFFReadScanline(tif, line.data(), y, 0) < 0) return false;
      sink.row(int64_t(y), line.data(), int(spp));
    }
    return true;
  }
  char emsg[1024];
  if (!TIFFRGBAImageOK(tif, emsg)) return false;
  sink.start(int64_t(h), int64_t(w));
  std::vector<uint32_t> raster(size_t(w) * size_t(h));
  if (!TIFFReadRGBAImageOriented(tif, w, h, raster.data(), ORIENTATION_TOPLEFT, 0)) return false;
  std::vector<uint8_t> row(size_t(w) * 3);
  for (uint32_t y = 0; y < h; ++y) {
    const uint32_t* s = raster.data() + size_t(y) * w;
    for (uint32_t x = 0; x < w; ++x) {
      row[3 * x] = uint8_t(TIFFGetR(s[x]));
      row[3 * x + 1] = uint8_t(TIFFGetG(s[x]));
      row[3 * x + 2] = uint8_t(TIFFGetB(s[x]));
    }
    sink.row(int64_t(y), row.data(), 3);
  }
  return true;
}

}  // namespace image
}  // namespace singa
