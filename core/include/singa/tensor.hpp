// tensor.hpp - an owning, reference-counted n-d array on a device.
#ifndef SINGA_TENSOR_HPP
#define SINGA_TENSOR_HPP

#include <singa/error.hpp>
#include <singa/singa_abi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace singa {

class Device;
using Shape = std::vector<int64_t>;

// Size in bytes of one element of an ONNX dtype: 0 for undefined/unknown
// codes and for the packed types (4-bit, 2-bit), whose elements share bytes.
// A byte count is dtype_nbytes, never numel * dtype_size.
size_t dtype_size(int32_t onnx_dtype);
// Bits of one element (4 or 2 for packed types); 0 for unknown codes.
int dtype_bits(int32_t onnx_dtype);
// Bytes n elements take: ceil(n * bits / 8); 0 for unknown codes.
size_t dtype_nbytes(int32_t onnx_dtype, int64_t n);
const char* dtype_name(int32_t onnx_dtype);
DLDataType to_dl(int32_t onnx_dtype);
int32_t from_dl(DLDataType t);
std::string shape_to_string(const Shape& shape);
int64_t shape_numel(const Shape& shape);

// Memory owned by one device; freed through the device's plugin when the last
// Tensor that shares it goes away.
struct Storage {
  Device* device = nullptr;  // null: plain host memory (std::aligned_alloc)
  int32_t device_id = 0;
  void* data = nullptr;
  size_t bytes = 0;
  std::vector<std::string> strings;  // string tensors keep their text here
  // Set when `data` lies inside another Storage (a run's arena, see the
  // executor's memory plan): that one frees the memory, this one keeps it alive.
  std::shared_ptr<Storage> owner;
  ~Storage();
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised tensor on `device` (host memory when null).
  Tensor(const Shape& shape, int32_t onnx_dtype, Device* device = nullptr, int32_t device_id = 0);
  static Tensor zeros(const Shape& shape, int32_t onnx_dtype);
  template <typename T>
  static Tensor from_vector(const Shape& shape, int32_t onnx_dtype, const std::vector<T>& values);
  static Tensor from_strings(const Shape& shape, const std::vector<std::string>& values);
  // A new host tensor holding a copy of a host DLTensor (compact row-major
  // strides or none; strings copied by text). Throws on other devices, types
  // singa has no ONNX code for, and strided views.
  static Tensor copy_of(const DLTensor& t);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return int(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  int32_t dtype() const { return dtype_; }
  size_t nbytes() const { return dtype_nbytes(dtype_, numel()); }
  Device* device() const { return storage_ ? storage_->device : nullptr; }
  int32_t device_id() const { return storage_ ? storage_->device_id : 0; }
  bool on_host() const;
  std::string device_name() const;

  void* raw_data() const { return storage_ ? static_cast<char*>(storage_->data) + offset_ : nullptr; }
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }
  const std::vector<std::string>& strings() const { return storage_->strings; }
  // String tensors hold one `const char*` per element in their data. A kernel
  // that copies elements (Reshape, Gather, ...) copies pointers into another
  // tensor's text; this makes every element point at text this tensor owns.
  void own_strings();
  // Sets element i of a host string tensor.
  void set_string(int64_t i, const char* data, size_t len);

  // A DLPack view (valid while this Tensor lives). `shape` points into this.
  DLTensor dl() const;
  // Same data, new shape of equal numel.
  Tensor reshaped(const Shape& shape) const;
  // Copy to another device (or to host when null). Returns *this when already there.
  Tensor to(Device* device, int32_t device_id = 0) const;
  // The same, queued on `stream` of the device that copies (the target from
  // the host, the source to the host or within a device); the result is
  // complete only once that stream has reached the copy. Copies between two
  // devices go through the host synchronously.
  Tensor to(Device* device, int32_t device_id, void* stream) const;
  Tensor to_host() const { return to(nullptr); }
  Tensor clone() const;

  std::shared_ptr<Storage> storage() const { return storage_; }
  Tensor(std::shared_ptr<Storage> storage, const Shape& shape, int32_t onnx_dtype, size_t offset = 0);

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  int32_t dtype_ = 0;
  size_t offset_ = 0;
};

template <typename T>
Tensor Tensor::from_vector(const Shape& shape, int32_t onnx_dtype, const std::vector<T>& values) {
  Tensor t(shape, onnx_dtype);
  if (size_t(t.numel()) != values.size() || sizeof(T) != dtype_size(onnx_dtype) || dtype_size(onnx_dtype) == 0)
    throw Error(SINGA_INVALID_ARGUMENT, "from_vector: size or element type does not match shape " + shape_to_string(shape));
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

}  // namespace singa
#endif
