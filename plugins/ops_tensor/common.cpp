#include "common.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? "," : "") + std::to_string(v[i]);
  return r + "]";
}

std::string shape_str(const Shape& s) { return ints_str(s); }

int64_t KernelBase::normalize_axis(int64_t axis, int64_t rank, const char* what) const {
  if (axis < -rank || axis >= rank)
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<size_t> KernelBase::distinct_axes(const std::vector<int64_t>& axes, size_t rank) const {
  std::vector<size_t> out;
  std::vector<char> seen(rank, 0);
  for (int64_t a : axes) {
    const size_t d = size_t(normalize_axis(a, int64_t(rank), "axes entry"));
    SINGA_CHECK(!seen[d], "axes " + ints_str(axes) + " name axis " + std::to_string(d) + " twice");
    seen[d] = 1;
    out.push_back(d);
  }
  return out;
}

std::vector<int64_t> KernelBase::read_ints(const Tensor& t, const char* what) const {
  SINGA_CHECK(t.present(), std::string("input '") + what + "' is missing");
  SINGA_CHECK(t.ndim() <= 1, std::string("input '") + what + "' must be 0-d or 1-d, got shape " + shape_str(t.shape()));
  int32_t dt = t.dtype();
  SINGA_CHECK((sdk::kIntTypes & sdk::bit(dt)) != 0,
              std::string("input '") + what + "' must hold integers, got " + sdk::dtype_name(dt));
  return read_index_tensor(t);
}

int64_t KernelBase::read_scalar_int(const Tensor& t, const char* what) const {
  std::vector<int64_t> v = read_ints(t, what);
  SINGA_CHECK(v.size() == 1, std::string("input '") + what + "' must hold one value, got " + std::to_string(v.size()));
  return v[0];
}

Tensor KernelBase::required(const Context& ctx, size_t i, const char* what) const {
  Tensor t = ctx.input(i);
  if (!t.present())
    SINGA_CHECK(false, std::string("required input '") + what + "' (index " + std::to_string(i) + ") is missing");
  return t;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

std::vector<int64_t> read_index_tensor(const Tensor& t) {
  int64_t n = t.numel();
  std::vector<int64_t> v(size_t(n > 0 ? n : 0));
  switch (t.dtype()) {
    case SINGA_ONNX_INT64:
      if (!v.empty()) std::memcpy(v.data(), t.data_ptr(), v.size() * sizeof(int64_t));
      break;
    case SINGA_ONNX_INT32: {
      const int32_t* p = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = p[i];
      break;
    }
    default:
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = t.int_at(i);
  }
  return v;
}

namespace {

template <size_t ES>
struct Elem {
  unsigned char b[ES];
};

template <typename E>
void copy_typed(char* dst, int64_t ds, const char* src, int64_t ss, int64_t n) {
  E* d = reinterpret_cast<E*>(dst);
  const E* s = reinterpret_cast<const E*>(src);
  if (ds == 1 && ss == 0) {
    E v = s[0];
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  } else if (ds == 1 && ss == -1) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[-i];
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
  }
}

// One tile of a transposing copy: rows a (source-contiguous) by columns b
// (destination-contiguous), small enough that both sides stay in cache.
template <typename E>
void copy_tile(char* dst, int64_t dst_a, const char* src, int64_t src_b, int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  E* d = reinterpret_cast<E*>(dst);
  const E* s = reinterpret_cast<const E*>(src);
  for (int64_t a = a0; a < a1; ++a)
    for (int64_t b = b0; b < b1; ++b) d[a * dst_a + b] = s[a + b * src_b];
}

void copy_tile_es(char* dst, int64_t dst_a, const char* src, int64_t src_b, int64_t a0, int64_t a1, int64_t b0,
                  int64_t b1, size_t es) {
  switch (es) {
    case 1: copy_tile<uint8_t>(dst, dst_a, src, src_b, a0, a1, b0, b1); break;
    case 2: copy_tile<uint16_t>(dst, dst_a, src, src_b, a0, a1, b0, b1); break;
    case 4: copy_tile<uint32_t>(dst, dst_a, src, src_b, a0, a1, b0, b1); break;
    case 8: copy_tile<uint64_t>(dst, dst_a, src, src_b, a0, a1, b0, b1); break;
    case 16: copy_tile<Elem<16>>(dst, dst_a, src, src_b, a0, a1, b0, b1); break;
    default:
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t a = a0; a < a1; ++a)
          std::memcpy(dst + (a * dst_a + b) * int64_t(es), src + (a + b * src_b) * int64_t(es), es);
  }
}

}  // namespace

void copy_elems(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t n, size_t es) {
  if (n <= 0) return;
  if (dst_step == 1 && src_step == 1) {
    std::memmove(dst, src, size_t(n) * es);
    return;
  }
  switch (es) {
    case 1: copy_typed<uint8_t>(dst, dst_step, src, src_step, n); break;
    case 2: copy_typed<uint16_t>(dst, dst_step, src, src_step, n); break;
    case 4: copy_typed<uint32_t>(dst, dst_step, src, src_step, n); break;
    case 8: copy_typed<uint64_t>(dst, dst_step, src, src_step, n); break;
    case 16: copy_typed<Elem<16>>(dst, dst_step, src, src_step, n); break;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * dst_step * int64_t(es), src + i * src_step * int64_t(es), es);
  }
}

void fill_elems(char* dst, const void* value, int64_t n, size_t es) {
  if (n <= 0) return;
  const char* v = static_cast<const char*>(value);
  bool all_zero = std::all_of(v, v + es, [](char c) { return c == 0; });
  if (all_zero) {
    std::memset(dst, 0, size_t(n) * es);
    return;
  }
  copy_elems(dst, 1, v, 0, n, es);
}

void parallel_memcpy(const Context& ctx, void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  const int64_t chunk = int64_t(1) << 20;
  int64_t chunks = int64_t((bytes + size_t(chunk) - 1) / size_t(chunk));
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    size_t lo = size_t(b * chunk), hi = std::min(bytes, size_t(e * chunk));
    std::memcpy(d + lo, s + lo, hi - lo);
  });
}

void strided_copy(const Context& ctx, const Shape& shape, char* dst, const Shape& dst_strides, const char* src,
                  const Shape& src_strides, size_t es) {
  // Coalesce: drop unit dims, merge a dim into its outer neighbour when both
  // sides stay linear across the pair.
  std::vector<int64_t> dims, ds, ss;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    if (!dims.empty() && ds.back() == dst_strides[i] * shape[i] && ss.back() == src_strides[i] * shape[i]) {
      dims.back() *= shape[i];
      ds.back() = dst_strides[i];
      ss.back() = src_strides[i];
      continue;
    }
    dims.push_back(shape[i]);
    ds.push_back(dst_strides[i]);
    ss.push_back(src_strides[i]);
  }
  if (dims.empty()) {
    std::memcpy(dst, src, es);
    return;
  }
  const int64_t inner = dims.back(), inner_ds = ds.back(), inner_ss = ss.back();
  const size_t outer_rank = dims.size() - 1;
  const int64_t ies = int64_t(es);

  // A transpose: the destination is contiguous along the last dim, the source
  // along an outer one. Walking either side alone thrashes the cache, so copy
  // square tiles of the (source-contiguous, destination-contiguous) plane.
  size_t p = outer_rank;
  if (inner_ds == 1 && inner_ss != 1 && inner >= 8)
    for (size_t i = 0; i < outer_rank; ++i)
      if (ss[i] == 1 && dims[i] >= 8) p = i;
  if (p < outer_rank) {
    const int64_t tile = 32, pa = dims[p], tiles_a = (pa + tile - 1) / tile, tiles_b = (inner + tile - 1) / tile;
    int64_t rest = 1;
    for (size_t i = 0; i < outer_rank; ++i)
      if (i != p) rest *= dims[i];
    ctx.parallel_for(rest * tiles_a * tiles_b, 4, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        int64_t rem = t / (tiles_a * tiles_b), ta = (t / tiles_b) % tiles_a, tbb = t % tiles_b;
        int64_t doff = 0, soff = 0;
        for (size_t i = outer_rank; i-- > 0;) {
          if (i == p) continue;
          int64_t idx = rem % dims[i];
          rem /= dims[i];
          doff += idx * ds[i];
          soff += idx * ss[i];
        }
        copy_tile_es(dst + doff * ies, ds[p], src + soff * ies, inner_ss, ta * tile, std::min(pa, (ta + 1) * tile),
                     tbb * tile, std::min(inner, (tbb + 1) * tile), es);
      }
    });
    return;
  }
  int64_t rows = 1;
  for (size_t i = 0; i < outer_rank; ++i) rows *= dims[i];
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, inner));
  ctx.parallel_for(rows, grain, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      int64_t rem = r, doff = 0, soff = 0;
      for (size_t i = outer_rank; i-- > 0;) {
        int64_t idx = rem % dims[i];
        rem /= dims[i];
        doff += idx * ds[i];
        soff += idx * ss[i];
      }
      copy_elems(dst + doff * ies, inner_ds, src + soff * ies, inner_ss, inner, es);
    }
  });
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
