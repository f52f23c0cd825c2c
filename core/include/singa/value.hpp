// value.hpp - what flows along a graph edge: a tensor, a sequence of tensors,
// or nothing (an empty optional). ONNX's sequence and optional types map here;
// plain tensor graphs never need more than Tensor.
#ifndef SINGA_VALUE_HPP
#define SINGA_VALUE_HPP

#include <singa/tensor.hpp>

#include <memory>
#include <vector>

namespace singa {

class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence };

  Value() = default;  // an empty optional
  Value(Tensor t) : kind_(t.defined() ? Kind::kTensor : Kind::kNone), tensor_(std::move(t)) {}  // NOLINT: implicit by design
  // A sequence; `elem_dtype` types an empty one (0 when unknown).
  static Value sequence(std::vector<Tensor> items, int32_t elem_dtype = 0) {
    Value v;
    v.kind_ = Kind::kSequence;
    if (elem_dtype == 0 && !items.empty()) elem_dtype = items.front().dtype();
    v.elem_dtype_ = elem_dtype;
    v.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  const Tensor& tensor() const { return tensor_; }  // undefined unless is_tensor()
  // Sequences are immutable and shared: ops that change one build a new one.
  const std::vector<Tensor>& items() const {
    static const std::vector<Tensor> kEmpty;
    return items_ ? *items_ : kEmpty;
  }
  int32_t elem_dtype() const { return elem_dtype_; }
  // "tensor float [2,3]", "sequence of 4 tensors", "none"
  std::string describe() const;

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<const std::vector<Tensor>> items_;
  int32_t elem_dtype_ = 0;
};

}  // namespace singa
#endif
