// compare.hpp - checks an output against the expected tensor the way ONNX's
// backend tests do: same dtype and shape, floats within atol + rtol*|expected|
// (NaN matches NaN, infinities match when equal), everything else exact.
#ifndef SINGA_TOOLS_COMPARE_HPP
#define SINGA_TOOLS_COMPARE_HPP

#include <singa/tensor.hpp>

#include <string>

namespace singa {
namespace cli {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// "" when `got` matches `expected`; otherwise what differs, with the worst
// element's index, values and absolute/relative error.
std::string compare_tensors(const Tensor& expected, const Tensor& got, const Tolerance& tol);

}  // namespace cli
}  // namespace singa
#endif
