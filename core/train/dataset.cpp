#include <singa/dataset.hpp>
#include <singa/error.hpp>

#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <numeric>
#include <unistd.h>

namespace singa {
namespace data {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The whole file, gunzipped when it ends in .gz. Protobuf (already a
// dependency of the core) carries the zlib decoder.
std::string read_all(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(SINGA_NOT_FOUND, "cannot open '" + path + "': " + std::strerror(errno));
  google::protobuf::io::FileInputStream file(fd);
  file.SetCloseOnDelete(true);
  std::string out;
  auto drain = [&](google::protobuf::io::ZeroCopyInputStream& in) {
    const void* data;
    int size;
    while (in.Next(&data, &size)) out.append(static_cast<const char*>(data), size_t(size));
  };
  if (ends_with(path, ".gz")) {
    google::protobuf::io::GzipInputStream gz(&file, google::protobuf::io::GzipInputStream::GZIP);
    drain(gz);
    if (gz.ZlibErrorMessage()) throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "': gzip data is corrupt: " + gz.ZlibErrorMessage());
  } else {
    drain(file);
  }
  if (file.GetErrno() != 0) throw Error(SINGA_INVALID_ARGUMENT, "error reading '" + path + "': " + std::strerror(file.GetErrno()));
  return out;
}

uint32_t be32(const unsigned char* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }

}  // namespace

Tensor read_idx(const std::string& path) {
  std::string bytes = read_all(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || p[0] != 0 || p[1] != 0)
    throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "' is not an IDX file (bad magic number)");
  int32_t dtype = 0;
  switch (p[2]) {
    case 0x08: dtype = SINGA_ONNX_UINT8; break;
    case 0x09: dtype = SINGA_ONNX_INT8; break;
    case 0x0B: dtype = SINGA_ONNX_INT16; break;
    case 0x0C: dtype = SINGA_ONNX_INT32; break;
    case 0x0D: dtype = SINGA_ONNX_FLOAT; break;
    case 0x0E: dtype = SINGA_ONNX_DOUBLE; break;
    default: throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "': unknown IDX element type " + std::to_string(p[2]));
  }
  const size_t rank = p[3];
  if (rank == 0 || bytes.size() < 4 + 4 * rank) throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "': truncated IDX header");
  Shape shape;
  for (size_t i = 0; i < rank; ++i) shape.push_back(int64_t(be32(p + 4 + 4 * i)));
  Tensor t(shape, dtype);
  const size_t es = dtype_size(dtype), header = 4 + 4 * rank;
  if (bytes.size() - header != t.nbytes())
    throw Error(SINGA_INVALID_ARGUMENT, "'" + path + "': expected " + std::to_string(t.nbytes()) + " bytes of data for shape " +
                                            shape_to_string(shape) + ", found " + std::to_string(bytes.size() - header));
  // IDX stores elements big-endian.
  auto* dst = static_cast<unsigned char*>(t.raw_data());
  const size_t count = size_t(t.numel());
  for (size_t i = 0; i < count; ++i)
    for (size_t b = 0; b < es; ++b) dst[i * es + b] = p[header + i * es + (es - 1 - b)];
  return t;
}

static std::string find_file(const std::string& dir, const std::string& name) {
  for (const std::string& candidate : {dir + "/" + name + ".gz", dir + "/" + name})
    if (::access(candidate.c_str(), R_OK) == 0) return candidate;
  throw Error(SINGA_NOT_FOUND, "no file '" + name + "' or '" + name + ".gz' in '" + dir + "'");
}

Split load_mnist(const std::string& dir, const std::string& prefix, int64_t limit) {
  std::string ip = find_file(dir, prefix + "-images-idx3-ubyte"), lp = find_file(dir, prefix + "-labels-idx1-ubyte");
  Tensor img = read_idx(ip), lab = read_idx(lp);
  if (img.dtype() != SINGA_ONNX_UINT8 || img.ndim() != 3)
    throw Error(SINGA_INVALID_ARGUMENT, "'" + ip + "': expected uint8 images [N, H, W], got " + shape_to_string(img.shape()));
  if (lab.dtype() != SINGA_ONNX_UINT8 || lab.ndim() != 1 || lab.numel() != img.shape()[0])
    throw Error(SINGA_INVALID_ARGUMENT, "'" + lp + "': expected " + std::to_string(img.shape()[0]) + " uint8 labels");
  int64_t n = img.shape()[0];
  if (limit > 0) n = std::min(n, limit);
  const int64_t H = img.shape()[1], W = img.shape()[2];
  Split s;
  s.images = Tensor({n, 1, H, W}, SINGA_ONNX_FLOAT);
  s.labels = Tensor({n}, SINGA_ONNX_INT64);
  const uint8_t* src = img.data<uint8_t>();
  float* dst = s.images.data<float>();
  for (int64_t i = 0; i < n * H * W; ++i) dst[i] = float(src[i]) / 255.0f;
  for (int64_t i = 0; i < n; ++i) s.labels.data<int64_t>()[i] = lab.data<uint8_t>()[i];
  return s;
}

void normalize(Tensor& images, float mean, float stddev) {
  if (images.dtype() != SINGA_ONNX_FLOAT || !(stddev > 0)) throw Error(SINGA_INVALID_ARGUMENT, "normalize: float images and stddev > 0");
  float* p = images.data<float>();
  const int64_t n = images.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = (p[i] - mean) / stddev;
}

Tensor resize_images(const Tensor& images, int64_t channels, int64_t height, int64_t width) {
  const Shape& is = images.shape();
  if (images.dtype() != SINGA_ONNX_FLOAT || is.size() != 4 || is[2] < 1 || is[3] < 1)
    throw Error(SINGA_INVALID_ARGUMENT, "resize_images: float images [N, C, H, W] expected, got " + shape_to_string(is));
  if (channels < 1 || height < 1 || width < 1 || (is[1] != 1 && is[1] != channels))
    throw Error(SINGA_INVALID_ARGUMENT, "resize_images: cannot make " + shape_to_string(is) + " into " +
                                            std::to_string(channels) + " x " + std::to_string(height) + " x " +
                                            std::to_string(width) + " (channels must match or be 1)");
  const int64_t N = is[0], C = is[1], h = is[2], w = is[3];
  Tensor out({N, channels, height, width}, SINGA_ONNX_FLOAT);
  // Source coordinate and weight of each output row or column.
  auto taps = [](int64_t in, int64_t out, std::vector<int64_t>& lo, std::vector<float>& frac) {
    lo.resize(size_t(out));
    frac.resize(size_t(out));
    const double scale = double(in) / double(out);
    for (int64_t o = 0; o < out; ++o) {
      double src = std::max(0.0, (double(o) + 0.5) * scale - 0.5);
      int64_t i = std::min<int64_t>(int64_t(src), in - 1);
      lo[size_t(o)] = i;
      frac[size_t(o)] = i + 1 < in ? float(src - double(i)) : 0.0f;
    }
  };
  std::vector<int64_t> ylo, xlo;
  std::vector<float> yf, xf;
  taps(h, height, ylo, yf);
  taps(w, width, xlo, xf);
  const float* src = images.data<float>();
  float* dst = out.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const float* plane = src + (n * C + (C == 1 ? 0 : c)) * h * w;
      float* o = dst + (n * channels + c) * height * width;
      for (int64_t y = 0; y < height; ++y) {
        const float* r0 = plane + ylo[size_t(y)] * w;
        const float* r1 = ylo[size_t(y)] + 1 < h ? r0 + w : r0;
        const float fy = yf[size_t(y)];
        for (int64_t x = 0; x < width; ++x) {
          const int64_t x0 = xlo[size_t(x)], x1 = x0 + 1 < w ? x0 + 1 : x0;
          const float fx = xf[size_t(x)];
          const float top = r0[x0] + (r0[x1] - r0[x0]) * fx, bottom = r1[x0] + (r1[x1] - r1[x0]) * fx;
          o[y * width + x] = top + (bottom - top) * fy;
        }
      }
    }
  return out;
}

Split batch(const Split& s, const std::vector<int64_t>& order, int64_t begin, int64_t end) {
  if (begin < 0 || end > int64_t(order.size()) || begin >= end) throw Error(SINGA_INVALID_ARGUMENT, "batch: bad range");
  Shape is = s.images.shape();
  const int64_t row = s.images.numel() / is[0], n = end - begin;
  is[0] = n;
  Split b;
  b.images = Tensor(is, s.images.dtype());
  b.labels = Tensor({n}, SINGA_ONNX_INT64);
  const size_t bytes = size_t(row) * dtype_size(s.images.dtype());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = order[size_t(begin + i)];
    std::memcpy(static_cast<char*>(b.images.raw_data()) + size_t(i) * bytes, static_cast<const char*>(s.images.raw_data()) + size_t(k) * bytes, bytes);
    b.labels.data<int64_t>()[i] = s.labels.data<int64_t>()[k];
  }
  return b;
}

std::vector<int64_t> permutation(int64_t n, std::mt19937_64& rng, bool shuffle) {
  std::vector<int64_t> v(size_t(std::max<int64_t>(0, n)));
  std::iota(v.begin(), v.end(), 0);
  if (shuffle) std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace data
}  // namespace singa
