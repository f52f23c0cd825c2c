// op_versions.hpp - the since-versions of every ONNX operator (ai.onnx and
// ai.onnx.ml), as data: a kernel registered for version N of an op serves
// every opset until the op's next version, and a model newer than the table
// is refused by name rather than run with semantics nobody implemented.
#ifndef SINGA_OP_VERSIONS_HPP
#define SINGA_OP_VERSIONS_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace singa {
namespace onnx {

// The op's since-versions in ascending order, or null when the table does not
// know the op (custom domains, ops newer than the table). `domain` is
// normalized ("" for ai.onnx).
const std::vector<int>* op_versions(const std::string& domain, const std::string& op);

// The newest opset of `domain` that the table describes (0: a domain it does not know).
int newest_known_opset(const std::string& domain);

// The op's version in force at `opset`: its largest since-version <= opset
// (0 when the op did not exist yet, or the table does not know it).
int op_version_at(const std::string& domain, const std::string& op, int64_t opset);

// The last opset a kernel registered for [since, end] serves. For ops the
// table knows, the range runs on until the op's next version after the one
// in force at `end` (at `since` when end is SINGA_VERSION_OPEN); otherwise it
// is taken literally.
int32_t last_served_opset(const std::string& domain, const std::string& op, int32_t since, int32_t end);

struct KnownOp {
  std::string domain, op;
  std::vector<int> versions;
};
// Every op of the table, by domain and name.
std::vector<KnownOp> known_ops();

// "13-17", or "13+" for a range with no end: for messages.
std::string opset_range_text(int32_t since, int32_t last);

// "1, 6, 13": for error messages.
std::string versions_text(const std::vector<int>& versions);

}  // namespace onnx
}  // namespace singa
#endif
