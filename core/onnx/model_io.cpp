// Reading model files with errors that say what is wrong with them.
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <boost/filesystem.hpp>

#include <climits>
#include <fstream>
#include <sstream>

namespace singa {
namespace onnx {

::onnx::ModelProto parse_model(const std::string& bytes, const std::string& source) {
  if (bytes.empty()) throw Error(SINGA_INVALID_ARGUMENT, source + ": empty file, not an ONNX model");
  ::onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), int(std::min<size_t>(bytes.size(), INT_MAX)));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  if (bytes.size() > size_t(INT_MAX))
    throw Error(SINGA_INVALID_ARGUMENT, source + ": larger than protobuf's 2 GB limit; store the weights as external data");
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw Error(SINGA_INVALID_ARGUMENT, source + ": not a valid ONNX model (protobuf parse failed: truncated or not a ModelProto)");
  // Protobuf accepts many byte strings; a model has at least these.
  if (model.ir_version() <= 0 || !model.has_graph())
    throw Error(SINGA_INVALID_ARGUMENT, source + ": not an ONNX model (no ir_version or no graph)");
  if (model.opset_import_size() == 0 && model.ir_version() >= 3)
    throw Error(SINGA_INVALID_ARGUMENT, source + ": model declares no opset_import");
  return model;
}

::onnx::ModelProto load_model(const std::string& path) {
  boost::system::error_code ec;
  if (!boost::filesystem::exists(path, ec)) throw Error(SINGA_NOT_FOUND, path + ": no such file");
  if (boost::filesystem::is_directory(path, ec)) throw Error(SINGA_INVALID_ARGUMENT, path + ": is a folder, not a model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(SINGA_NOT_FOUND, path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_model(ss.str(), path);
}

}  // namespace onnx
}  // namespace singa
