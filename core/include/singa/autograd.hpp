// autograd.hpp - eager tensors that remember how they were computed.
//
// A Variable wraps a Tensor. Every op applied to Variables runs at once
// through the registered plugin kernels (the same ones imported graphs run)
// and records itself on a tape: its inputs, attributes and outputs. From a
// scalar loss, backward() walks that record in reverse and accumulates
// gradients into every leaf Variable that requires them. The same record is
// what singa::onnx::to_onnx() writes out as a model.
#ifndef SINGA_AUTOGRAD_HPP
#define SINGA_AUTOGRAD_HPP

#include <singa/tensor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace singa {
namespace autograd {

struct TapeNode;  // one recorded op (core/autograd/tape.hpp)

// Attributes of an op, as ONNX spells them.
class Attrs {
 public:
  enum class Kind { kInt, kFloat, kString, kInts, kFloats };
  struct Item {
    std::string name;
    Kind kind;
    int64_t i = 0;
    float f = 0;
    std::string s;
    std::vector<int64_t> ints;
    std::vector<float> floats;
  };
  Attrs& set(const std::string& name, int64_t v);
  Attrs& set(const std::string& name, int v) { return set(name, int64_t(v)); }
  Attrs& set(const std::string& name, float v);
  Attrs& set(const std::string& name, const std::string& v);
  Attrs& set(const std::string& name, const char* v) { return set(name, std::string(v)); }
  Attrs& set(const std::string& name, std::vector<int64_t> v);
  Attrs& set(const std::string& name, std::vector<float> v);
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false, std::string name = "");

  bool defined() const { return s_ != nullptr; }
  const Tensor& data() const;
  // Replaces the value (optimizers, loading a checkpoint); the tape is unaffected.
  void set_data(Tensor t);
  const Shape& shape() const { return data().shape(); }
  int32_t dtype() const { return data().dtype(); }

  // The accumulated gradient (undefined until backward reaches this Variable).
  const Tensor& grad() const;
  void set_grad(Tensor g);
  void zero_grad();

  bool requires_grad() const;
  void set_requires_grad(bool r);
  const std::string& name() const;
  void set_name(std::string n);

  // The op that produced this Variable (null for leaves) and which of its outputs it is.
  const std::shared_ptr<TapeNode>& creator() const;
  int output_index() const;
  // A Variable with the same value and no history (a new leaf).
  Variable detach() const;
  // Identity: two handles to the same Variable compare equal.
  const void* id() const { return s_.get(); }

  struct State;
  explicit Variable(std::shared_ptr<State> s) : s_(std::move(s)) {}
  const std::shared_ptr<State>& state() const { return s_; }

 private:
  std::shared_ptr<State> s_;
};

// Runs op `op_type` of `domain` ("" = ai.onnx, at opset 17 unless `opset` is
// given) on the inputs and records it. Undefined Variables are absent
// optional inputs. Returns `num_outputs` outputs (undefined where the kernel
// produced none).
std::vector<Variable> apply(const std::string& op_type, const std::vector<Variable>& inputs, const Attrs& attrs = {},
                            size_t num_outputs = 1, const std::string& domain = "", int64_t opset = 0);
Variable apply1(const std::string& op_type, const std::vector<Variable>& inputs, const Attrs& attrs = {});

// Accumulates d(loss)/d(leaf) into the grad() of every leaf that requires a
// gradient. `loss` must hold one element unless `seed` (its gradient) is given.
// `on_final`, when given, is called for each leaf as soon as its gradient is
// complete, while backward goes on (DistOpt starts all-reduces there).
void backward(const Variable& loss, const Tensor& seed = {},
              const std::function<void(const Variable&)>& on_final = {});

// The leaves `loss` depends on through recorded ops that require a gradient,
// each once, in the order a walk from the loss first meets them (the same on
// every rank for the same program): what backward() would fill.
std::vector<Variable> grad_leaves(const Variable& loss);

// While one lives on this thread, ops are run but not recorded (evaluation).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};
bool recording();

// Whether a backward rule exists for an op of the default domain (or `domain`).
bool has_gradient(const std::string& op_type, const std::string& domain = "");

// A scalar (shape []) of the given element type.
Tensor scalar(double v, int32_t dtype = SINGA_ONNX_FLOAT);
// A 1-D int64 tensor (shapes, axes).
Tensor int64s(const std::vector<int64_t>& v);

// Common ops, each one apply() call.
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable matmul(const Variable& a, const Variable& b);
Variable relu(const Variable& x);
Variable sigmoid(const Variable& x);
Variable tanh(const Variable& x);
Variable softmax(const Variable& x, int64_t axis = -1);
Variable log_softmax(const Variable& x, int64_t axis = -1);
Variable reshape(const Variable& x, const std::vector<int64_t>& shape);
Variable flatten(const Variable& x, int64_t axis = 1);
Variable transpose(const Variable& x, const std::vector<int64_t>& perm);
Variable reduce_sum(const Variable& x, const std::vector<int64_t>& axes, bool keepdims = false);
Variable reduce_mean(const Variable& x, const std::vector<int64_t>& axes, bool keepdims = false);
Variable concat(const std::vector<Variable>& xs, int64_t axis);

}  // namespace autograd
}  // namespace singa
#endif
