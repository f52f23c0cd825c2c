// Sequence and optional values in ONNX's own protobuf forms (SequenceProto,
// OptionalProto of onnx-data.proto), as the backend test data stores them.
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>  // defines ONNX_API, which onnx-data.pb.h needs
#include <onnx/onnx-data.pb.h>

#include <boost/filesystem.hpp>

#include <fstream>
#include <sstream>

namespace singa {
namespace onnx {

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(SINGA_NOT_FOUND, path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Value from_sequence(const ::onnx::SequenceProto& p, const std::string& base_dir, const std::string& where) {
  if (p.elem_type() != ::onnx::SequenceProto::TENSOR && p.elem_type() != ::onnx::SequenceProto::UNDEFINED)
    throw Error(SINGA_UNIMPLEMENTED, where + ": only sequences of tensors are supported");
  std::vector<Tensor> items;
  for (const auto& t : p.tensor_values()) items.push_back(from_proto(t, base_dir));
  return Value::sequence(std::move(items));
}

}  // namespace

Value load_value_file(const std::string& path, const ValueInfo& expected) {
  if (expected.kind == ValueInfo::Kind::kTensor) return load_tensor_file(path);
  std::string bytes = read_all(path);
  std::string base = boost::filesystem::path(path).parent_path().string();
  try {
    if (expected.kind == ValueInfo::Kind::kSequence) {
      ::onnx::SequenceProto p;
      if (!p.ParseFromString(bytes)) throw Error(SINGA_INVALID_ARGUMENT, "not a valid SequenceProto (.pb) file");
      Value v = from_sequence(p, base, path);
      return v.items().empty() ? Value::sequence({}, expected.dtype) : v;
    }
    ::onnx::OptionalProto p;
    if (!p.ParseFromString(bytes)) throw Error(SINGA_INVALID_ARGUMENT, "not a valid OptionalProto (.pb) file");
    if (p.has_tensor_value()) return from_proto(p.tensor_value(), base);
    if (p.has_sequence_value()) {
      Value v = from_sequence(p.sequence_value(), base, path);
      return v.items().empty() ? Value::sequence({}, expected.dtype) : v;
    }
    return Value();
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

}  // namespace onnx
}  // namespace singa
