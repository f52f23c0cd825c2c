// BitCast-26: the input's bits, read as another type of the same bit width
// (float <-> int32, int8 <-> uint8, float8 <-> uint8, int4 <-> uint4, ...).
// The shape is unchanged and no value is converted.
#include "common.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace tensor {
namespace {

// Every type but string (ONNX: "all types except string").
constexpr uint64_t kBitCastTypes = sdk::kFixedSizeTypes | sdk::kPackedTypes;

class BitCast : public KernelBase {
 public:
  explicit BitCast(const Node& node) : KernelBase(node) {
    if (!node.has_attr("to")) sdk::fail("attribute 'to' is required");
    int64_t to = node.attr_int("to", 0);
    if (to <= 0 || to > sdk::kNewestDtype || !(kBitCastTypes & sdk::bit(int32_t(to))))
      sdk::fail("attribute 'to' (" + std::to_string(to) + ") must name a non-string element type");
    to_ = int32_t(to);
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    const int32_t from = x.dtype();
    if (sdk::dtype_bits(from) != sdk::dtype_bits(to_))
      fail(std::string("cannot bitcast ") + sdk::dtype_name(from) + " (" + std::to_string(sdk::dtype_bits(from)) +
           " bits) to " + sdk::dtype_name(to_) + " (" + std::to_string(sdk::dtype_bits(to_)) +
           " bits): the widths must be equal");
    Tensor y = ctx.output(0, x.shape(), to_);
    parallel_memcpy(ctx, y.data_ptr(), x.data_ptr(), sdk::dtype_nbytes(from, x.numel()));
  }

 private:
  int32_t to_ = 0;
};

}  // namespace

void register_bitcast(sdk::Registrar& reg) {
  reg.kernel<BitCast>("", "BitCast", 26, SINGA_VERSION_OPEN, "cpu",
                      {{"T1", 0, kBitCastTypes}, {"T2", -1, kBitCastTypes}});
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
