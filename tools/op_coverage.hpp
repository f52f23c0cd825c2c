// op_coverage.hpp - which ONNX ops the loaded kernels serve at their newest version.
#ifndef SINGA_TOOLS_OP_COVERAGE_HPP
#define SINGA_TOOLS_OP_COVERAGE_HPP

#include <string>
#include <vector>

namespace singa {
namespace cli {

struct OpCoverage {
  size_t current = 0;               // a kernel serves the op's newest version
  size_t core = 0;                  // the core runs the op itself (control flow, sequences)
  std::vector<std::string> stale;   // kernels for older versions only ("Op-22 (kernels up to opset 21)")
  std::vector<std::string> missing; // no kernel on the device ("Op-23")
};

// Needs the runtime loaded.
OpCoverage op_coverage(const std::string& device);

}  // namespace cli
}  // namespace singa
#endif
