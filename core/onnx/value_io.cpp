// Sequence and optional values in ONNX's own protobuf forms (SequenceProto,
// OptionalProto of onnx-data.proto), as the backend test data stores them.
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>  // defines ONNX_API, which onnx-data.pb.h needs
#include <onnx/onnx-data.pb.h>

#include <boost/filesystem.hpp>

#include <cstring>
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

// A map as ONNX writes it: int64 or string keys, values as a sequence of
// one tensor (the values in key order) or of scalars.
Value from_map(const ::onnx::MapProto& p, const std::string& base_dir, const std::string& where) {
  Tensor keys;
  if (p.key_type() == ::onnx::TensorProto::STRING) {
    keys = Tensor::from_strings({int64_t(p.string_keys_size())}, {p.string_keys().begin(), p.string_keys().end()});
  } else {
    keys = Tensor::from_vector<int64_t>({int64_t(p.keys_size())}, SINGA_ONNX_INT64, {p.keys().begin(), p.keys().end()});
  }
  std::vector<Tensor> parts;
  for (const auto& t : p.values().tensor_values()) parts.push_back(from_proto(t, base_dir));
  Tensor values = parts.size() == 1 && parts[0].numel() == keys.numel() ? parts[0] : Tensor();
  if (!values.defined()) {
    if (int64_t(parts.size()) != keys.numel())
      throw Error(SINGA_INVALID_ARGUMENT, where + ": a map has " + std::to_string(keys.numel()) + " keys but " +
                                              std::to_string(parts.size()) + " values");
    if (parts.empty()) return Value::map(keys, Tensor({0}, SINGA_ONNX_FLOAT));
    values = Tensor({keys.numel()}, parts[0].dtype());
    size_t width = dtype_size(parts[0].dtype());
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].numel() != 1 || parts[i].dtype() != parts[0].dtype())
        throw Error(SINGA_INVALID_ARGUMENT, where + ": map values must be one tensor or one scalar per key");
      std::memcpy(static_cast<char*>(values.raw_data()) + i * width, parts[i].raw_data(), width);
    }
  }
  return Value::map(keys, values.reshaped({keys.numel()}));
}

Value from_sequence(const ::onnx::SequenceProto& p, const std::string& base_dir, const std::string& where) {
  if (p.elem_type() == ::onnx::SequenceProto::MAP) {
    std::vector<Value> maps;
    for (const auto& m : p.map_values()) maps.push_back(from_map(m, base_dir, where));
    return Value::sequence_of(std::move(maps));
  }
  if (p.elem_type() != ::onnx::SequenceProto::TENSOR && p.elem_type() != ::onnx::SequenceProto::UNDEFINED)
    throw Error(SINGA_UNIMPLEMENTED, where + ": only sequences of tensors or maps are supported");
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
      return v.elements().empty() ? Value::sequence({}, expected.dtype) : v;
    }
    ::onnx::OptionalProto p;
    if (!p.ParseFromString(bytes)) throw Error(SINGA_INVALID_ARGUMENT, "not a valid OptionalProto (.pb) file");
    if (p.has_tensor_value()) return from_proto(p.tensor_value(), base);
    if (p.has_sequence_value()) {
      Value v = from_sequence(p.sequence_value(), base, path);
      return v.elements().empty() ? Value::sequence({}, expected.dtype) : v;
    }
    return Value();
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

}  // namespace onnx
}  // namespace singa
