// Cast and CastLike between float, double, int8, uint8, int32, int64 and
// bool (kernels_math.cu); other pairs (16-bit floats, strings, the wider
// unsigned types) stay on the CPU by type.
#include "kernels_math.hpp"
#include "ops_common.hpp"
#include "register.hpp"

namespace singa {
namespace cuda {

namespace {

constexpr uint64_t kCastTypes = kRealInt | kBoolType | bit(SINGA_ONNX_INT8) | bit(SINGA_ONNX_UINT8);

// ONNX TensorProto.DataType names, as Cast-1..5 spell its `to` attribute.
int32_t dtype_from_name(const std::string& name) {
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  for (int32_t i = 1; i <= 16; ++i)
    if (name == names[i]) return i;
  return 0;
}

void cast(const sdk::Context& ctx, const NodeKernel& k, const sdk::Tensor& x, int32_t to) {
  k.check((kCastTypes & bit(to)) != 0,
          std::string("casting to ") + sdk::dtype_name(to) + " is not supported on cuda");
  sdk::Tensor y = ctx.output(0, x.shape(), to);
  DeviceGuard guard(device_of(ctx));
  if (x.dtype() == to) {
    device_copy(ctx, y.data_ptr(), x.data_ptr(), size_t(x.numel()) * elem_size(x), k.where());
    return;
  }
  k.check_launch(launch_cast(dtype_of(x), DType(to), x.data_ptr(), y.data_ptr(), x.numel(), stream_of(ctx)),
                 "cast kernel");
}

class Cast : public NodeKernel {
 public:
  explicit Cast(const sdk::Node& node) : NodeKernel(node) {
    // Cast-1..5 name the type as a string; from 6 it is the enum value.
    const std::string name = node.attr_string("to", "");
    to_ = name.empty() ? int32_t(node.attr_int("to", 0)) : dtype_from_name(name);
    if (to_ <= 0 || to_ > 16)
      fail("attribute 'to' is missing or names no known type (" + (name.empty() ? std::to_string(to_) : name) + ")");
  }

  void compute(sdk::Context& ctx) const { cast(ctx, *this, required(ctx, 0, "input"), to_); }

 private:
  int32_t to_ = 0;
};

class CastLike : public NodeKernel {
 public:
  explicit CastLike(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    cast(ctx, *this, required(ctx, 0, "input"), required(ctx, 1, "target_type").dtype());
  }
};

}  // namespace

void register_cast(sdk::Registrar& reg) {
  reg.kernel<Cast>("", "Cast", 1, 5, "cuda", {{"T1", 0, kCastTypes}, {"T2", -1, kCastTypes}});
  reg.kernel<Cast>("", "Cast", 6, 17, "cuda", {{"T1", 0, kCastTypes}, {"T2", -1, kCastTypes}});
  reg.kernel<CastLike>("", "CastLike", 15, SINGA_VERSION_OPEN, "cuda", {{"T1", 0, kCastTypes}, {"T2", 1, kCastTypes}});
}

}  // namespace cuda
}  // namespace singa
