// The sequence and optional ops: they build, index and take apart sequences
// of tensors, and wrap or unwrap optionals. Sequences are immutable values, so
// every "insert" or "erase" makes a new one sharing the tensors.
#include "attrs.hpp"
#include "core_op.hpp"

namespace singa {
namespace control {

namespace {

class ValueOp : public CoreOp {
 public:
  ValueOp(const graph::Graph& g, const graph::Node& node) : op_(node.proto.op_type()) {
    where_ = g.source + ": " + node.label;
    const auto& p = node.proto;
    if (op_ == "SequenceEmpty") elem_dtype_ = int32_t(attr_int(p, "dtype", SINGA_ONNX_FLOAT, where_));
    if (op_ == "SplitToSequence") {
      axis_ = attr_int(p, "axis", 0, where_);
      keep_dims_ = attr_int(p, "keepdims", 1, where_) != 0;
    }
    if (op_ == "ConcatFromSequence") {
      const auto* a = find_attr(p, "axis");
      if (!a) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": attribute 'axis' is required");
      axis_ = attr_int(p, "axis", 0, where_);
      new_axis_ = attr_int(p, "new_axis", 0, where_) != 0;
    }
    for (int v : node.outputs)
      if (v >= 0) out_dtype_ = g.values[size_t(v)].dtype;
  }

  void run(CoreCall& c) const override {
    auto in = [&](size_t i) -> const Value* { return i < c.inputs.size() ? c.inputs[i] : nullptr; };
    Value& out = c.outputs.at(0);
    if (op_ == "Identity") {
      out = *need(in(0), "input");
    } else if (op_ == "SequenceConstruct") {
      std::vector<Tensor> items;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        items.push_back(tensor(in(i), "input " + std::to_string(i)));
        if (items.back().dtype() != items.front().dtype())
          throw Error(SINGA_INVALID_ARGUMENT, where_ + ": input " + std::to_string(i) + " is tensor(" + dtype_name(items.back().dtype()) +
                                                  "), the others are tensor(" + dtype_name(items.front().dtype()) + ")");
      }
      out = Value::sequence(std::move(items));
    } else if (op_ == "SequenceEmpty") {
      out = Value::sequence({}, elem_dtype_);
    } else if (op_ == "SequenceLength") {
      out = Tensor::from_vector<int64_t>({}, SINGA_ONNX_INT64, {int64_t(sequence(in(0)).elements().size())});
    } else if (op_ == "SequenceAt") {
      const Value& s = sequence(in(0));
      out = s.elements()[size_t(position(in(1), s.elements().size(), false))];
    } else if (op_ == "SequenceInsert") {
      const Value& s = sequence(in(0));
      Tensor t = tensor(in(1), "tensor");
      if (s.elem_dtype() != 0 && t.dtype() != s.elem_dtype())
        throw Error(SINGA_INVALID_ARGUMENT, where_ + ": cannot insert a tensor(" + dtype_name(t.dtype()) + ") into a sequence of tensor(" +
                                                dtype_name(s.elem_dtype()) + ")");
      std::vector<Value> items = s.elements();
      size_t at = in(2) ? size_t(position(in(2), items.size(), true)) : items.size();
      items.insert(items.begin() + long(at), t);
      out = Value::sequence_of(std::move(items), t.dtype());
    } else if (op_ == "SequenceErase") {
      const Value& s = sequence(in(0));
      std::vector<Value> items = s.elements();
      if (items.empty()) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": cannot erase from an empty sequence");
      size_t at = in(1) ? size_t(position(in(1), items.size(), false)) : items.size() - 1;
      items.erase(items.begin() + long(at));
      out = Value::sequence_of(std::move(items), s.elem_dtype());
    } else if (op_ == "SplitToSequence") {
      out = split_to_sequence(tensor(in(0), "input"), in(1));
    } else if (op_ == "ConcatFromSequence") {
      const Value& s = sequence(in(0));
      if (s.elements().empty()) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the sequence is empty");
      std::vector<Tensor> parts;
      for (const auto& e : s.elements()) parts.push_back(tensor(&e, "every element"));
      out = concat(parts, axis_, new_axis_, where_);
    } else if (op_ == "Optional") {
      out = in(0) ? *in(0) : Value();
    } else if (op_ == "OptionalHasElement") {
      bool has = in(0) && !in(0)->is_none();
      Tensor t({}, SINGA_ONNX_BOOL);
      *t.data<bool>() = has;
      out = t;
    } else if (op_ == "OptionalGetElement") {
      if (!in(0) || in(0)->is_none()) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the optional input is empty");
      out = *in(0);
    } else {
      throw Error(SINGA_INTERNAL, where_ + ": no core implementation");
    }
  }

 private:
  const Value* need(const Value* v, const std::string& what) const {
    if (!v) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": " + what + " is missing");
    return v;
  }
  const Value& sequence(const Value* v) const {
    need(v, "the sequence input");
    if (!v->is_sequence()) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": expected a sequence, got " + v->describe());
    return *v;
  }
  Tensor tensor(const Value* v, const std::string& what) const {
    need(v, what);
    if (!v->is_tensor()) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": " + what + " must be a tensor, got " + v->describe());
    return v->tensor();
  }
  // A position in [-n, n) (or [-n, n] for insertion), made non-negative.
  int64_t position(const Value* v, size_t n, bool may_be_end) const {
    int64_t p = scalar_int(tensor(v, "position"), "position", where_);
    int64_t size = int64_t(n);
    if (p < -size || p > size || (p == size && !may_be_end))
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": position " + std::to_string(p) + " is out of range for a sequence of " +
                                              std::to_string(n) + " tensors");
    return p < 0 ? p + size : p;
  }
  Value split_to_sequence(const Tensor& t, const Value* split_value) const {
    if (t.ndim() == 0) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": cannot split a scalar");
    int64_t axis = normalize_axis(axis_, t.ndim(), where_);
    int64_t len = t.shape()[size_t(axis)];
    std::vector<int64_t> sizes;
    bool keep = true;
    if (!split_value || split_value->is_none()) {
      sizes.assign(size_t(len), 1);
      keep = keep_dims_;
    } else {
      Tensor s = tensor(split_value, "split").to_host();
      if (s.dtype() != SINGA_ONNX_INT64 && s.dtype() != SINGA_ONNX_INT32)
        throw Error(SINGA_INVALID_ARGUMENT, where_ + ": 'split' must be int32 or int64");
      auto at = [&](int64_t i) { return s.dtype() == SINGA_ONNX_INT64 ? s.data<int64_t>()[i] : int64_t(s.data<int32_t>()[i]); };
      if (s.ndim() == 0) {
        int64_t chunk = at(0);
        if (chunk <= 0) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": 'split' must be positive, got " + std::to_string(chunk));
        for (int64_t done = 0; done < len; done += chunk) sizes.push_back(std::min(chunk, len - done));
      } else {
        for (int64_t i = 0; i < s.numel(); ++i) sizes.push_back(at(i));
      }
    }
    return Value::sequence(split(t, axis, sizes, keep, where_), t.dtype());
  }

  std::string op_, where_;
  int32_t elem_dtype_ = 0, out_dtype_ = 0;
  int64_t axis_ = 0;
  bool keep_dims_ = true, new_axis_ = false;
};

}  // namespace

std::unique_ptr<CoreOp> make_sequence_op(const graph::Graph& g, const graph::Node& node) {
  return std::make_unique<ValueOp>(g, node);
}

}  // namespace control
}  // namespace singa
