// tensor_values.hpp - reading a host tensor's elements as numbers, for
// printing (stats, top-k) and for comparing against expected outputs.
#ifndef SINGA_TOOLS_TENSOR_VALUES_HPP
#define SINGA_TOOLS_TENSOR_VALUES_HPP

#include <singa/tensor.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace singa {
namespace cli {

bool is_float_dtype(int32_t onnx_dtype);     // float, double, float16, bfloat16, float8s, float4
bool is_numeric_dtype(int32_t onnx_dtype);   // floats, ints (4-bit and 2-bit too), bool

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

// All elements of a host tensor of a numeric dtype, as doubles (int64 values
// beyond 2^53 lose precision: compare those with the raw bytes).
std::vector<double> to_doubles(const Tensor& host);

struct Stats {
  double min = 0, max = 0, mean = 0, stddev = 0;  // over the finite values
  int64_t finite = 0, nan = 0, inf = 0;
};
Stats compute_stats(const std::vector<double>& values);

// The k largest values (NaN last) of values[begin, end), as (index - begin, value).
std::vector<std::pair<int64_t, double>> top_k(const std::vector<double>& values, int64_t begin, int64_t end, int k);

// Compact text for one element, e.g. "0.25", "nan", "-inf", "3".
std::string format_value(double v);

}  // namespace cli
}  // namespace singa
#endif
