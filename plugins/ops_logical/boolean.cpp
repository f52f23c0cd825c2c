// Not, And, Or, Xor on bool tensors.
#include "logical_common.hpp"

namespace singa {
namespace ops {
namespace logical {
namespace {

class Not {
 public:
  explicit Not(const sdk::Node& node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    if (x.dtype() != SINGA_ONNX_BOOL) sdk::fail(std::string("input must be bool, got ") + sdk::dtype_name(x.dtype()));
    sdk::Tensor y = ctx.output(0, x.shape(), SINGA_ONNX_BOOL);
    // Bytes, not bools: a byte other than 0/1 in the input must not make the
    // result anything but 0/1, and byte loops vectorise.
    const uint8_t* px = static_cast<const uint8_t*>(x.data_ptr());
    uint8_t* py = static_cast<uint8_t*>(y.data_ptr());
    ctx.parallel_for(x.numel(), 65536, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] = px[i] == 0 ? 1 : 0;
    });
  }

 private:
};

struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

template <typename Op, bool Legacy> class BoolBinary {
 public:
  explicit BoolBinary(const sdk::Node& node) : form_(node, Legacy) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = ctx.input(0), b = ctx.input(1);
    if (a.dtype() != SINGA_ONNX_BOOL || b.dtype() != SINGA_ONNX_BOOL)
      sdk::fail(std::string("inputs must be bool, got ") + sdk::dtype_name(a.dtype()) + " and " +
                sdk::dtype_name(b.dtype()));
    BinaryShapes s = form_.shapes(a.shape(), b.shape());
    sdk::Tensor y = ctx.output(0, s.out, SINGA_ONNX_BOOL);
    binary_apply<uint8_t, uint8_t, uint8_t>(
        ctx, s, static_cast<const uint8_t*>(a.data_ptr()), static_cast<const uint8_t*>(b.data_ptr()),
        static_cast<uint8_t*>(y.data_ptr()), [](uint8_t x, uint8_t z) { return uint8_t(Op()(x != 0, z != 0)); });
  }

 private:
  BinaryForm form_;
};

template <typename Op> void register_op(sdk::Registrar& reg, const char* op) {
  reg.kernel<BoolBinary<Op, true>>("", op, 1, 6, "cpu", {{"T", 0, kBool}, {"T1", -1, kBool}});
  reg.kernel<BoolBinary<Op, false>>("", op, 7, 17, "cpu", {{"T", 0, kBool}, {"T1", -1, kBool}});
}

}  // namespace

void register_boolean(sdk::Registrar& reg) {
  reg.kernel<Not>("", "Not", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kBool}}, SINGA_KERNEL_MAY_INPLACE);
  register_op<AndOp>(reg, "And");
  register_op<OrOp>(reg, "Or");
  register_op<XorOp>(reg, "Xor");
}

}  // namespace logical
}  // namespace ops
}  // namespace singa
