// value.hpp - what flows along a graph edge: a tensor, a sequence, a map, or
// nothing (an empty optional). ONNX's sequence, map and optional types map
// here; plain tensor graphs never need more than Tensor.
#ifndef SINGA_VALUE_HPP
#define SINGA_VALUE_HPP

#include <singa/tensor.hpp>

#include <memory>
#include <vector>

namespace singa {

class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence, kMap };

  Value() = default;  // an empty optional
  Value(Tensor t) : kind_(t.defined() ? Kind::kTensor : Kind::kNone), tensor_(std::move(t)) {}  // NOLINT: implicit by design
  // A sequence; `elem_dtype` types an empty one (0 when unknown).
  static Value sequence(const std::vector<Tensor>& items, int32_t elem_dtype = 0) {
    if (elem_dtype == 0 && !items.empty()) elem_dtype = items.front().dtype();
    return sequence_of(std::vector<Value>(items.begin(), items.end()), elem_dtype);
  }
  // A sequence of any values (maps, as ai.onnx.ml's ZipMap makes).
  static Value sequence_of(std::vector<Value> elements, int32_t elem_dtype = 0) {
    Value v;
    v.kind_ = Kind::kSequence;
    v.elem_dtype_ = elem_dtype;
    v.elements_ = std::make_shared<const std::vector<Value>>(std::move(elements));
    return v;
  }
  // A map: 1-D `keys` (int64 or string) and 1-D `values` of the same length.
  static Value map(Tensor keys, Tensor values) {
    Value v;
    v.kind_ = Kind::kMap;
    v.tensor_ = std::move(keys);
    v.map_values_ = std::move(values);
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_map() const { return kind_ == Kind::kMap; }
  const Tensor& tensor() const { return kind_ == Kind::kTensor ? tensor_ : kNoTensor(); }  // undefined unless is_tensor()
  const Tensor& map_keys() const { return kind_ == Kind::kMap ? tensor_ : kNoTensor(); }
  const Tensor& map_values() const { return map_values_; }
  // Sequences are immutable and shared: ops that change one build a new one.
  const std::vector<Value>& elements() const {
    static const std::vector<Value> kEmpty;
    return elements_ ? *elements_ : kEmpty;
  }
  // The elements of a sequence of tensors (a non-tensor element is undefined).
  std::vector<Tensor> items() const {
    std::vector<Tensor> out;
    for (const auto& e : elements()) out.push_back(e.tensor());
    return out;
  }
  int32_t elem_dtype() const { return elem_dtype_; }
  // "a tensor(float) [2,3]", "a sequence of 4 values", "a map of 3 entries", "an empty optional"
  std::string describe() const;

 private:
  static const Tensor& kNoTensor() {
    static const Tensor none;
    return none;
  }
  Kind kind_ = Kind::kNone;
  Tensor tensor_;  // the tensor, or a map's keys
  Tensor map_values_;
  std::shared_ptr<const std::vector<Value>> elements_;
  int32_t elem_dtype_ = 0;
};

}  // namespace singa
#endif
