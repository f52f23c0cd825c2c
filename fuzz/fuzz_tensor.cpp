// libFuzzer target: arbitrary bytes as a TensorProto (an input .pb file or an
// initializer). A tensor that converts must survive to_proto/from_proto
// unchanged; anything else must be refused with an exception.
#include "fuzz_common.hpp"

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  singa::fuzz::init_runtime();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ::onnx::TensorProto proto;
  if (size > (size_t(1) << 30) || !proto.ParseFromArray(data, int(size))) return 0;
  singa::Tensor t;
  try {
    // No model folder: external data must be refused, never read.
    t = singa::onnx::from_proto(proto);
  } catch (const std::exception&) {
    return 0;
  }
  ::onnx::TensorProto again = singa::onnx::to_proto(t, proto.name());
  singa::Tensor back = singa::onnx::from_proto(again);
  if (back.dtype() != t.dtype() || back.shape() != t.shape()) std::abort();
  if (t.dtype() == SINGA_ONNX_STRING) {
    if (back.strings() != t.strings()) std::abort();
  } else if (t.nbytes() && std::memcmp(back.raw_data(), t.raw_data(), t.nbytes()) != 0) {
    std::abort();
  }
  return 0;
}
