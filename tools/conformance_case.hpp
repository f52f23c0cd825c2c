// conformance_case.hpp - ONNX backend test cases on disk (CASE/model.onnx and
// CASE/test_data_set_N/{input_K.pb, output_K.pb}) and running one of them.
#ifndef SINGA_TOOLS_CONFORMANCE_CASE_HPP
#define SINGA_TOOLS_CONFORMANCE_CASE_HPP

#include "compare.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace singa {
namespace cli {

struct TestCase {
  std::string name;  // the case folder's name, e.g. test_relu
  std::string dir;
};

struct CaseSelection {
  std::vector<TestCase> cases;     // selected by the arguments, sorted by name
  std::set<std::string> on_disk;   // every case name seen beside or under them
};

// Each argument is a case folder (has model.onnx) or a folder of cases.
// Throws UsageError for a path that is neither.
CaseSelection discover_cases(const std::vector<std::string>& roots);

enum class CaseStatus { kPass, kFail, kSkip };
const char* status_word(CaseStatus s);  // "PASS", "FAIL", "SKIP"

struct CaseResult {
  CaseStatus status = CaseStatus::kFail;
  std::string reason;
  double ms = 0;
};

struct CaseOptions {
  std::string device = "cpu";
  bool fallback = true;
  int threads = 0;
  size_t max_tensor_bytes = 0;  // 0: the runtime's default
  std::map<std::string, std::string> options;  // PrepareOptions::options
  Tolerance tol;
};

// Prepares and runs every data set of the case and compares the outputs.
// Never throws: failures become a FAIL result with the message.
CaseResult run_case(const TestCase& c, const CaseOptions& options);

// One-line encoding of a result to cross the pipe from an isolated child.
std::string encode_result(const CaseResult& r);
CaseResult decode_result(const std::string& text);

}  // namespace cli
}  // namespace singa
#endif
