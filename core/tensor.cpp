#include <singa/runtime.hpp>
#include <singa/tensor.hpp>
#include <singa/kernel.hpp>

#include <cstdlib>
#include <cstring>

namespace singa {

size_t dtype_size(int32_t t) {
  switch (t) {
    case SINGA_ONNX_FLOAT: case SINGA_ONNX_INT32: case SINGA_ONNX_UINT32: return 4;
    case SINGA_ONNX_DOUBLE: case SINGA_ONNX_INT64: case SINGA_ONNX_UINT64: case SINGA_ONNX_COMPLEX64: return 8;
    case SINGA_ONNX_COMPLEX128: return 16;
    case SINGA_ONNX_FLOAT16: case SINGA_ONNX_BFLOAT16: case SINGA_ONNX_INT16: case SINGA_ONNX_UINT16: return 2;
    case SINGA_ONNX_INT8: case SINGA_ONNX_UINT8: case SINGA_ONNX_BOOL: return 1;
    case SINGA_ONNX_FLOAT8E4M3FN: case SINGA_ONNX_FLOAT8E4M3FNUZ: case SINGA_ONNX_FLOAT8E5M2:
    case SINGA_ONNX_FLOAT8E5M2FNUZ: case SINGA_ONNX_FLOAT8E8M0: return 1;
    case SINGA_ONNX_STRING: return sizeof(const char*);
    default: return 0;  // undefined, unknown, and the packed 4-bit and 2-bit types
  }
}

int dtype_bits(int32_t t) { return sdk::dtype_bits(t); }
size_t dtype_nbytes(int32_t t, int64_t n) { return sdk::dtype_nbytes(t, n); }

// One table of element types for the core and every plugin: the SDK's.
const char* dtype_name(int32_t t) { return sdk::dtype_name(t); }
DLDataType to_dl(int32_t t) { return sdk::dl_dtype(t); }
int32_t from_dl(DLDataType t) { return sdk::onnx_dtype(t); }

std::string shape_to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + (s[i] < 0 ? std::string("?") : std::to_string(s[i]));
  return r + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Storage::~Storage() {
  if (!data || owner) return;
  if (device) {
    device->free(device_id, data);
  } else {
    std::free(data);
  }
}

static constexpr size_t kHostAlign = 64;

static std::shared_ptr<Storage> allocate(size_t bytes, Device* device, int32_t device_id) {
  auto s = std::make_shared<Storage>();
  s->device = device;
  s->device_id = device_id;
  s->bytes = bytes;
  size_t padded = (bytes + kHostAlign - 1) / kHostAlign * kHostAlign;
  if (padded == 0) padded = kHostAlign;  // a valid pointer for empty tensors
  if (device) {
    s->data = device->alloc(device_id, padded, kHostAlign);
  } else {
    s->data = std::aligned_alloc(kHostAlign, padded);
    if (!s->data) throw Error(SINGA_OUT_OF_MEMORY, "out of host memory allocating " + std::to_string(bytes) + " bytes");
  }
  return s;
}

static void check_shape(const Shape& shape) {
  // Refuse negative dims and products that overflow before anything is allocated.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(SINGA_INVALID_ARGUMENT, "negative dimension in shape " + shape_to_string(shape));
    if (d != 0 && n > INT64_MAX / d) throw Error(SINGA_INVALID_ARGUMENT, "shape " + shape_to_string(shape) + " is too large");
    n *= d;
  }
}

Tensor::Tensor(const Shape& shape, int32_t onnx_dtype, Device* device, int32_t device_id)
    : shape_(shape), dtype_(onnx_dtype) {
  check_shape(shape);
  if (dtype_bits(onnx_dtype) == 0) throw Error(SINGA_INVALID_ARGUMENT, std::string("unsupported element type ") + dtype_name(onnx_dtype));
  storage_ = allocate(dtype_nbytes(onnx_dtype, numel()), device, device_id);
  if (onnx_dtype == SINGA_ONNX_STRING) {
    storage_->strings.assign(size_t(numel()), std::string());
    auto** p = static_cast<const char**>(storage_->data);
    for (size_t i = 0; i < storage_->strings.size(); ++i) p[i] = storage_->strings[i].c_str();
  }
}

Tensor::Tensor(std::shared_ptr<Storage> storage, const Shape& shape, int32_t onnx_dtype, size_t offset)
    : storage_(std::move(storage)), shape_(shape), dtype_(onnx_dtype), offset_(offset) {}

Tensor Tensor::copy_of(const DLTensor& t) {
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost)
    throw Error(SINGA_INVALID_ARGUMENT, "copy_of: the DLTensor is not in host memory");
  if (t.ndim < 0 || t.ndim > SINGA_MAX_DIMS) throw Error(SINGA_INVALID_ARGUMENT, "copy_of: bad rank " + std::to_string(t.ndim));
  const int32_t dtype = from_dl(t.dtype);
  if (dtype == 0) throw Error(SINGA_INVALID_ARGUMENT, "copy_of: an element type singa does not know");
  Shape shape(t.shape, t.shape + t.ndim);
  for (int64_t d : shape)
    if (d < 0) throw Error(SINGA_INVALID_ARGUMENT, "copy_of: negative dimension in " + shape_to_string(shape));
  if (t.strides) {
    int64_t expect = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (shape[size_t(i)] != 1 && t.strides[i] != expect) throw Error(SINGA_INVALID_ARGUMENT, "copy_of: a strided DLTensor");
      expect *= shape[size_t(i)];
    }
  }
  const char* src = static_cast<const char*>(t.data) + t.byte_offset;
  if (dtype == SINGA_ONNX_STRING) {
    std::vector<std::string> texts;
    const int64_t n = shape_numel(shape);
    for (int64_t i = 0; i < n; ++i) {
      const char* s = reinterpret_cast<const char* const*>(src)[i];
      texts.emplace_back(s ? s : "");
    }
    return from_strings(shape, texts);
  }
  Tensor out(shape, dtype);
  if (out.nbytes() > 0) std::memcpy(out.raw_data(), src, out.nbytes());
  return out;
}

Tensor Tensor::zeros(const Shape& shape, int32_t onnx_dtype) {
  Tensor t(shape, onnx_dtype);
  if (onnx_dtype != SINGA_ONNX_STRING) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::from_strings(const Shape& shape, const std::vector<std::string>& values) {
  Tensor t(shape, SINGA_ONNX_STRING);
  if (size_t(t.numel()) != values.size()) throw Error(SINGA_INVALID_ARGUMENT, "from_strings: count does not match shape");
  t.storage_->strings = values;
  auto** p = static_cast<const char**>(t.storage_->data);
  for (size_t i = 0; i < values.size(); ++i) p[i] = t.storage_->strings[i].c_str();
  return t;
}

void Tensor::own_strings() {
  if (dtype_ != SINGA_ONNX_STRING || !storage_) return;
  auto** p = reinterpret_cast<const char**>(raw_data());
  auto& text = storage_->strings;
  size_t first = offset_ / sizeof(const char*);
  for (size_t i = 0; i < size_t(numel()); ++i) {
    std::string& mine = text[first + i];
    if (p[i] == mine.c_str()) continue;
    mine = p[i] ? std::string(p[i]) : std::string();
    p[i] = mine.c_str();
  }
}

void Tensor::set_string(int64_t i, const char* data, size_t len) {
  if (dtype_ != SINGA_ONNX_STRING || i < 0 || i >= numel())
    throw Error(SINGA_INVALID_ARGUMENT, "set_string: element " + std::to_string(i) + " is not in this string tensor");
  auto** p = reinterpret_cast<const char**>(raw_data());
  std::string& mine = storage_->strings[offset_ / sizeof(const char*) + size_t(i)];
  mine.assign(data ? data : "", data ? len : 0);
  p[i] = mine.c_str();
}

bool Tensor::on_host() const { return !storage_ || !storage_->device || storage_->device->host_addressable(); }

std::string Tensor::device_name() const { return (storage_ && storage_->device) ? storage_->device->name() : "host"; }

DLTensor Tensor::dl() const {
  DLTensor t{};
  t.data = storage_ ? storage_->data : nullptr;
  t.byte_offset = offset_;
  Device* d = device();
  t.device = {d ? DLDeviceType(d->dl_device_type()) : kDLCPU, d ? device_id() : 0};
  t.ndim = int(shape_.size());
  t.dtype = to_dl(dtype_);
  t.shape = const_cast<int64_t*>(shape_.data());
  t.strides = nullptr;
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  if (shape_numel(shape) != numel())
    throw Error(SINGA_INVALID_ARGUMENT, "cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  return Tensor(storage_, shape, dtype_, offset_);
}

Tensor Tensor::to(Device* target, int32_t target_id) const { return to(target, target_id, nullptr); }

Tensor Tensor::to(Device* target, int32_t target_id, void* stream) const {
  if (!storage_) return *this;
  Device* src = device();
  bool target_host = !target || target->host_addressable();
  if (src == target && device_id() == target_id) return *this;
  if (on_host() && target_host) return *this;  // host memory is host memory
  if (dtype_ == SINGA_ONNX_STRING) throw Error(SINGA_UNIMPLEMENTED, "string tensors cannot leave the host");
  Tensor out(shape_, dtype_, target, target_id);
  size_t bytes = nbytes();
  if (bytes == 0) return out;
  if (on_host()) {
    target->copy(target_id, out.storage_->data, 0, raw_data(), 0, bytes, SINGA_COPY_HOST_TO_DEVICE, stream);
  } else if (target_host) {
    src->copy(device_id(), out.raw_data(), 0, storage_->data, offset_, bytes, SINGA_COPY_DEVICE_TO_HOST, stream);
  } else if (src == target) {
    src->copy(target_id, out.storage_->data, 0, storage_->data, offset_, bytes, SINGA_COPY_DEVICE_TO_DEVICE, stream);
  } else {
    return to_host().to(target, target_id);
  }
  return out;
}

Tensor Tensor::clone() const {
  if (!storage_) return *this;
  if (dtype_ == SINGA_ONNX_STRING) return from_strings(shape_, std::vector<std::string>(strings().begin(), strings().end()));
  Tensor out(shape_, dtype_, device(), device_id());
  if (on_host()) {
    std::memcpy(out.raw_data(), raw_data(), nbytes());
  } else {
    device()->copy(device_id(), out.storage_->data, 0, storage_->data, offset_, nbytes(), SINGA_COPY_DEVICE_TO_DEVICE);
  }
  return out;
}

}  // namespace singa
