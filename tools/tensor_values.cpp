#include "tensor_values.hpp"

#include <singa/kernel.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

namespace singa {
namespace cli {

bool is_float_dtype(int32_t t) {
  return t == SINGA_ONNX_FLOAT || t == SINGA_ONNX_DOUBLE || t == SINGA_ONNX_FLOAT16 || t == SINGA_ONNX_BFLOAT16 ||
         t == SINGA_ONNX_FLOAT4E2M1 || sdk::minifloat::is_float8(t);
}

bool is_numeric_dtype(int32_t t) {
  switch (t) {
    case SINGA_ONNX_FLOAT: case SINGA_ONNX_DOUBLE: case SINGA_ONNX_FLOAT16: case SINGA_ONNX_BFLOAT16:
    case SINGA_ONNX_INT8: case SINGA_ONNX_INT16: case SINGA_ONNX_INT32: case SINGA_ONNX_INT64:
    case SINGA_ONNX_UINT8: case SINGA_ONNX_UINT16: case SINGA_ONNX_UINT32: case SINGA_ONNX_UINT64:
    case SINGA_ONNX_BOOL:
    case SINGA_ONNX_FLOAT8E4M3FN: case SINGA_ONNX_FLOAT8E4M3FNUZ: case SINGA_ONNX_FLOAT8E5M2:
    case SINGA_ONNX_FLOAT8E5M2FNUZ: case SINGA_ONNX_FLOAT8E8M0: case SINGA_ONNX_FLOAT4E2M1:
    case SINGA_ONNX_UINT4: case SINGA_ONNX_INT4: case SINGA_ONNX_UINT2: case SINGA_ONNX_INT2:
      return true;
    default:
      return false;
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalise into a float exponent.
    int shift = 0;
    while (!(mant & 0x400)) {
      mant <<= 1;
      ++shift;
    }
    mant &= 0x3ff;
    bits = sign | (uint32_t(113 - shift) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds past the largest half
  if (abs < 0x33000000u) return sign;                      // below half the smallest subnormal
  int exp = int(abs >> 23) - 127;
  uint32_t mant = (abs & 0x7fffff) | 0x800000;
  int shift = exp < -14 ? 13 + (-14 - exp) : 13;
  uint32_t half_mant = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half_mant & 1))) ++half_mant;  // round to nearest even
  uint32_t out = exp < -14 ? half_mant : (uint32_t(exp + 15) << 10) + (half_mant - 0x400);
  return uint16_t(sign | out);
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

namespace {
template <typename T>
void widen(const Tensor& t, std::vector<double>& out) {
  const T* p = t.data<T>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = double(p[i]);
}
}  // namespace

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out(size_t(t.numel()));
  switch (t.dtype()) {
    case SINGA_ONNX_FLOAT: widen<float>(t, out); break;
    case SINGA_ONNX_DOUBLE: widen<double>(t, out); break;
    case SINGA_ONNX_INT8: widen<int8_t>(t, out); break;
    case SINGA_ONNX_INT16: widen<int16_t>(t, out); break;
    case SINGA_ONNX_INT32: widen<int32_t>(t, out); break;
    case SINGA_ONNX_INT64: widen<int64_t>(t, out); break;
    case SINGA_ONNX_UINT8: widen<uint8_t>(t, out); break;
    case SINGA_ONNX_UINT16: widen<uint16_t>(t, out); break;
    case SINGA_ONNX_UINT32: widen<uint32_t>(t, out); break;
    case SINGA_ONNX_UINT64: widen<uint64_t>(t, out); break;
    case SINGA_ONNX_BOOL: widen<uint8_t>(t, out); break;
    case SINGA_ONNX_FLOAT16: {
      const uint16_t* p = t.data<uint16_t>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(p[i]);
      break;
    }
    case SINGA_ONNX_BFLOAT16: {
      const uint16_t* p = t.data<uint16_t>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = bfloat16_to_float(p[i]);
      break;
    }
    case SINGA_ONNX_FLOAT8E4M3FN: case SINGA_ONNX_FLOAT8E4M3FNUZ: case SINGA_ONNX_FLOAT8E5M2:
    case SINGA_ONNX_FLOAT8E5M2FNUZ: case SINGA_ONNX_FLOAT8E8M0: {
      const uint8_t* p = t.data<uint8_t>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = sdk::minifloat::from_float8(p[i], t.dtype());
      break;
    }
    case SINGA_ONNX_FLOAT4E2M1:
      for (size_t i = 0; i < out.size(); ++i) out[i] = sdk::minifloat::from_float4e2m1(sdk::packed_get(t.raw_data(), int64_t(i), 4));
      break;
    case SINGA_ONNX_UINT4: case SINGA_ONNX_INT4: case SINGA_ONNX_UINT2: case SINGA_ONNX_INT2: {
      const int bits = dtype_bits(t.dtype());
      const bool is_signed = t.dtype() == SINGA_ONNX_INT4 || t.dtype() == SINGA_ONNX_INT2;
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = sdk::packed_int(sdk::packed_get(t.raw_data(), int64_t(i), bits), bits, is_signed);
      break;
    }
    default:
      throw Error(SINGA_UNIMPLEMENTED, std::string("cannot read ") + dtype_name(t.dtype()) + " elements as numbers");
  }
  return out;
}

Stats compute_stats(const std::vector<double>& values) {
  Stats s;
  double sum = 0;
  for (double v : values) {
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++s.inf;
    } else {
      if (s.finite == 0 || v < s.min) s.min = v;
      if (s.finite == 0 || v > s.max) s.max = v;
      sum += v;
      ++s.finite;
    }
  }
  if (s.finite == 0) return s;
  s.mean = sum / double(s.finite);
  double sq = 0;
  for (double v : values)
    if (std::isfinite(v)) sq += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(sq / double(s.finite));
  return s;
}

std::vector<std::pair<int64_t, double>> top_k(const std::vector<double>& values, int64_t begin, int64_t end, int k) {
  std::vector<int64_t> idx(size_t(end - begin));
  std::iota(idx.begin(), idx.end(), 0);
  auto greater = [&](int64_t a, int64_t b) {
    double va = values[size_t(begin + a)], vb = values[size_t(begin + b)];
    if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
    return va > vb || (va == vb && a < b);
  };
  size_t n = std::min(idx.size(), size_t(std::max(k, 0)));
  std::partial_sort(idx.begin(), idx.begin() + long(n), idx.end(), greater);
  std::vector<std::pair<int64_t, double>> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(idx[i], values[size_t(begin + idx[i])]);
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace cli
}  // namespace singa
