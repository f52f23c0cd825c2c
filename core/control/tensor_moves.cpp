// Byte-level concat / split / take on host tensors, for the sequence ops and
// the scan outputs of Loop and Scan: the element type only sets a width.
#include "core_op.hpp"

#include <cstring>

namespace singa {
namespace control {

namespace {

size_t elem_bytes(const Tensor& t, const std::string& where) {
  size_t b = dtype_size(t.dtype());
  if (b == 0) throw Error(SINGA_UNIMPLEMENTED, where + ": tensors of type " + std::string(dtype_name(t.dtype())) + " cannot be moved here");
  return b;
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

}  // namespace

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& where) {
  if (axis < -rank || axis >= rank)
    throw Error(SINGA_INVALID_ARGUMENT, where + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

int64_t scalar_int(const Tensor& tensor, const std::string& what, const std::string& where) {
  Tensor t = tensor.to_host();
  if (t.numel() != 1)
    throw Error(SINGA_INVALID_ARGUMENT, where + ": " + what + " must hold one value, got shape " + shape_to_string(t.shape()));
  switch (t.dtype()) {
    case SINGA_ONNX_BOOL: return *t.data<bool>() ? 1 : 0;
    case SINGA_ONNX_INT64: return *t.data<int64_t>();
    case SINGA_ONNX_INT32: return *t.data<int32_t>();
    case SINGA_ONNX_UINT8: return *t.data<uint8_t>();
    case SINGA_ONNX_INT8: return *t.data<int8_t>();
    case SINGA_ONNX_INT16: return *t.data<int16_t>();
    case SINGA_ONNX_UINT16: return *t.data<uint16_t>();
    case SINGA_ONNX_UINT32: return *t.data<uint32_t>();
    case SINGA_ONNX_UINT64: return int64_t(*t.data<uint64_t>());
    case SINGA_ONNX_FLOAT: return int64_t(*t.data<float>());
    case SINGA_ONNX_DOUBLE: return int64_t(*t.data<double>());
    default:
      throw Error(SINGA_INVALID_ARGUMENT, where + ": " + what + " has type " + dtype_name(t.dtype()) + ", expected an integer or bool");
  }
}

Tensor concat(const std::vector<Tensor>& parts_in, int64_t axis, bool new_axis, const std::string& where) {
  if (parts_in.empty()) throw Error(SINGA_INVALID_ARGUMENT, where + ": nothing to concatenate");
  std::vector<Tensor> parts;
  for (const auto& p : parts_in) parts.push_back(p.to_host());
  const Tensor& first = parts.front();
  int64_t rank = first.ndim();
  axis = normalize_axis(axis, new_axis ? rank + 1 : rank, where);
  Shape out_shape = first.shape();
  if (new_axis) out_shape.insert(out_shape.begin() + axis, 0);
  out_shape[size_t(axis)] = 0;  // summed below
  for (const auto& p : parts) {
    bool same = p.dtype() == first.dtype() && p.ndim() == rank;
    for (int64_t d = 0; same && d < rank; ++d)
      if ((new_axis || d != axis) && p.shape()[size_t(d)] != first.shape()[size_t(d)]) same = false;
    if (!same)
      throw Error(SINGA_INVALID_ARGUMENT, where + ": cannot join a tensor(" + dtype_name(p.dtype()) + ") " + shape_to_string(p.shape()) +
                                              " with a tensor(" + dtype_name(first.dtype()) + ") " + shape_to_string(first.shape()) +
                                              " along axis " + std::to_string(axis));
    out_shape[size_t(axis)] += new_axis ? 1 : p.shape()[size_t(axis)];
  }
  if (first.dtype() == SINGA_ONNX_STRING) {
    // Strings: same block walk, over the text.
    std::vector<std::string> text;
    text.reserve(size_t(shape_numel(out_shape)));
    int64_t outer = prod(out_shape, 0, size_t(axis));
    for (int64_t o = 0; o < outer; ++o)
      for (const auto& p : parts) {
        int64_t block = prod(p.shape(), size_t(axis), p.shape().size());
        for (int64_t k = 0; k < block; ++k) text.push_back(p.strings()[size_t(o * block + k)]);
      }
    return Tensor::from_strings(out_shape, text);
  }
  size_t eb = elem_bytes(first, where);
  Tensor out(out_shape, first.dtype());
  int64_t outer = prod(out_shape, 0, size_t(axis));
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (const auto& p : parts) {
      // Bytes of one part under one outer index.
      size_t block = size_t(prod(p.shape(), size_t(axis), p.shape().size())) * eb;
      std::memcpy(dst, static_cast<const char*>(p.raw_data()) + size_t(o) * block, block);
      dst += block;
    }
  return out;
}

std::vector<Tensor> split(const Tensor& tensor, int64_t axis, const std::vector<int64_t>& sizes, bool keep_dims, const std::string& where) {
  Tensor t = tensor.to_host();
  axis = normalize_axis(axis, t.ndim(), where);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw Error(SINGA_INVALID_ARGUMENT, where + ": negative split size " + std::to_string(s));
    total += s;
  }
  if (total != t.shape()[size_t(axis)])
    throw Error(SINGA_INVALID_ARGUMENT, where + ": split sizes sum to " + std::to_string(total) + " but axis " + std::to_string(axis) +
                                            " has length " + std::to_string(t.shape()[size_t(axis)]));
  bool strings = t.dtype() == SINGA_ONNX_STRING;
  size_t eb = strings ? 1 : elem_bytes(t, where);
  int64_t outer = prod(t.shape(), 0, size_t(axis));
  int64_t inner = prod(t.shape(), size_t(axis) + 1, t.shape().size());
  int64_t len = t.shape()[size_t(axis)];
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    Shape shape = t.shape();
    shape[size_t(axis)] = s;
    if (!keep_dims) {
      if (s != 1) throw Error(SINGA_INVALID_ARGUMENT, where + ": keepdims=0 needs pieces of length 1");
      shape.erase(shape.begin() + axis);
    }
    if (strings) {
      std::vector<std::string> text;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < s * inner; ++k) text.push_back(t.strings()[size_t((o * len + start) * inner + k)]);
      out.push_back(Tensor::from_strings(shape, text));
    } else {
      Tensor piece(shape, t.dtype());
      size_t row = size_t(s * inner) * eb;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(static_cast<char*>(piece.raw_data()) + size_t(o) * row,
                    static_cast<const char*>(t.raw_data()) + (size_t(o * len + start) * size_t(inner)) * eb, row);
      out.push_back(piece);
    }
    start += s;
  }
  return out;
}

Tensor take(const Tensor& tensor, int64_t axis, int64_t i) {
  Tensor t = tensor.to_host();
  Shape shape = t.shape();
  // Callers check the shapes against the model; this is the last guard.
  if (axis < 0 || size_t(axis) >= shape.size() || i < 0 || i >= shape[size_t(axis)])
    throw Error(SINGA_INTERNAL, "take: index " + std::to_string(i) + " along axis " + std::to_string(axis) + " of shape " +
                                    shape_to_string(shape) + " is out of range");
  int64_t len = shape[size_t(axis)];
  int64_t outer = prod(shape, 0, size_t(axis));
  int64_t inner = prod(shape, size_t(axis) + 1, shape.size());
  shape.erase(shape.begin() + axis);
  if (t.dtype() == SINGA_ONNX_STRING) {
    std::vector<std::string> text;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) text.push_back(t.strings()[size_t((o * len + i) * inner + k)]);
    return Tensor::from_strings(shape, text);
  }
  size_t eb = elem_bytes(t, "take");
  Tensor out(shape, t.dtype());
  size_t row = size_t(inner) * eb;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(out.raw_data()) + size_t(o) * row, static_cast<const char*>(t.raw_data()) + size_t(o * len + i) * row, row);
  return out;
}

}  // namespace control
}  // namespace singa
