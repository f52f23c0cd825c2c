// Reading model files with errors that say what is wrong with them.
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <boost/filesystem.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace singa {
namespace onnx {

namespace {

// Parses a whole ModelProto from `stream` (`size` bytes) and checks that it
// looks like a model; errors name `source`.
::onnx::ModelProto parse_stream(google::protobuf::io::ZeroCopyInputStream& stream, size_t size, const std::string& source) {
  if (size == 0) throw Error(SINGA_INVALID_ARGUMENT, source + ": empty file, not an ONNX model");
  if (size > size_t(INT_MAX))
    throw Error(SINGA_INVALID_ARGUMENT, source + ": larger than protobuf's 2 GB limit; store the weights as external data");
  ::onnx::ModelProto model;
  google::protobuf::io::CodedInputStream in(&stream);
  in.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw Error(SINGA_INVALID_ARGUMENT, source + ": not a valid ONNX model (protobuf parse failed: truncated or not a ModelProto)");
  // Protobuf accepts many byte strings; a model has at least these.
  if (model.ir_version() <= 0 || !model.has_graph())
    throw Error(SINGA_INVALID_ARGUMENT, source + ": not an ONNX model (no ir_version or no graph)");
  if (model.opset_import_size() == 0 && model.ir_version() >= 3)
    throw Error(SINGA_INVALID_ARGUMENT, source + ": model declares no opset_import");
  return model;
}

}  // namespace

::onnx::ModelProto parse_model(const std::string& bytes, const std::string& source) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), int(std::min<size_t>(bytes.size(), INT_MAX)));
  return parse_stream(raw, bytes.size(), source);
}

// The file is parsed straight from its descriptor: reading it into a string
// first (and copying that out of a stringstream) held three copies of the
// weights at once, which set the peak memory of a whole run.
::onnx::ModelProto load_model(const std::string& path) {
  boost::system::error_code ec;
  if (!boost::filesystem::exists(path, ec)) throw Error(SINGA_NOT_FOUND, path + ": no such file");
  if (boost::filesystem::is_directory(path, ec)) throw Error(SINGA_INVALID_ARGUMENT, path + ": is a folder, not a model file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(SINGA_NOT_FOUND, path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(SINGA_NOT_FOUND, path + ": cannot read its size");
  }
  google::protobuf::io::FileInputStream file(fd);
  file.SetCloseOnDelete(true);
  return parse_stream(file, size_t(st.st_size), path);
}

}  // namespace onnx
}  // namespace singa
