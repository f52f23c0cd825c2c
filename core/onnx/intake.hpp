// intake.hpp - which checks a model gets before it becomes a graph. ONNX's
// checker and shape inference (the linked onnx library) serve where their
// schemas reach: the IR version and the opsets that library knows. Beyond
// them singa validates the model itself, with the same guarantees on hostile
// input (docs/security.md). Internal to libsinga_core.
#ifndef SINGA_CORE_ONNX_INTAKE_HPP
#define SINGA_CORE_ONNX_INTAKE_HPP

#include <onnx/onnx_pb.h>

#include <string>

namespace singa {
namespace onnx {

// The newest IR version singa reads (ONNX's IR_VERSION at the newest opset in
// the table of op versions).
constexpr int64_t kNewestIrVersion = 13;

// True when the linked onnx library knows the model's IR version and every
// opset it imports from ONNX's own domains; otherwise `why` says what it does
// not know (for `--verbose`).
bool library_covers(const ::onnx::ModelProto& model, std::string* why);

// singa's own structural checks for models beyond the library: IR version,
// opset imports, value types, and every node's and attribute's form, in the
// main graph and in every subgraph. Throws Error naming the node, attribute or
// value. (References, duplicates and cycles are checked when the graph is
// built; tensors when they are read.)
void validate_model(const ::onnx::ModelProto& model, const std::string& source);

}  // namespace onnx
}  // namespace singa
#endif
