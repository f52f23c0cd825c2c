// bind_tensor.cpp - _singa.CTensor: singa::Tensor with numpy (buffer protocol)
// and DLPack interop. Host tensors and numpy arrays share memory both ways.
#include "bindings.hpp"
#include "convert.hpp"

#include <singa/runtime.hpp>

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <complex>
#include <cstring>

namespace py = pybind11;
using singa::Error;
using singa::Tensor;

namespace singa_py {

namespace {
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
}  // namespace

// dtype::of<T>() asks numpy's C API for the descriptor; building one from a
// name string goes through a Python-level parser, which shows up per output.
py::dtype numpy_dtype(int32_t t) {
  switch (t) {
    case SINGA_ONNX_FLOAT: return py::dtype::of<float>();
    case SINGA_ONNX_DOUBLE: return py::dtype::of<double>();
    case SINGA_ONNX_FLOAT16: return py::dtype("float16");
    case SINGA_ONNX_INT8: return py::dtype::of<int8_t>();
    case SINGA_ONNX_INT16: return py::dtype::of<int16_t>();
    case SINGA_ONNX_INT32: return py::dtype::of<int32_t>();
    case SINGA_ONNX_INT64: return py::dtype::of<int64_t>();
    case SINGA_ONNX_UINT8: return py::dtype::of<uint8_t>();
    case SINGA_ONNX_UINT16: return py::dtype::of<uint16_t>();
    case SINGA_ONNX_UINT32: return py::dtype::of<uint32_t>();
    case SINGA_ONNX_UINT64: return py::dtype::of<uint64_t>();
    case SINGA_ONNX_BOOL: return py::dtype::of<bool>();
    case SINGA_ONNX_COMPLEX64: return py::dtype::of<std::complex<float>>();
    case SINGA_ONNX_COMPLEX128: return py::dtype::of<std::complex<double>>();
    case SINGA_ONNX_STRING: return py::dtype("object");
    // numpy has no bfloat16: its raw bits, as onnx's numpy_helper gives them.
    case SINGA_ONNX_BFLOAT16: return py::dtype::of<uint16_t>();
    default:
      throw Error(SINGA_UNIMPLEMENTED, std::string("numpy has no dtype for tensor(") + singa::dtype_name(t) + ")");
  }
}

int32_t onnx_dtype_of(const py::dtype& dt) {
  const char kind = dt.kind();
  const size_t size = size_t(dt.itemsize());
  switch (kind) {
    case 'f':
      if (size == 4) return SINGA_ONNX_FLOAT;
      if (size == 8) return SINGA_ONNX_DOUBLE;
      if (size == 2) return SINGA_ONNX_FLOAT16;
      break;
    case 'i':
      if (size == 1) return SINGA_ONNX_INT8;
      if (size == 2) return SINGA_ONNX_INT16;
      if (size == 4) return SINGA_ONNX_INT32;
      if (size == 8) return SINGA_ONNX_INT64;
      break;
    case 'u':
      if (size == 1) return SINGA_ONNX_UINT8;
      if (size == 2) return SINGA_ONNX_UINT16;
      if (size == 4) return SINGA_ONNX_UINT32;
      if (size == 8) return SINGA_ONNX_UINT64;
      break;
    case 'b': return SINGA_ONNX_BOOL;
    case 'c':
      if (size == 8) return SINGA_ONNX_COMPLEX64;
      if (size == 16) return SINGA_ONNX_COMPLEX128;
      break;
    case 'O': case 'U': case 'S': return SINGA_ONNX_STRING;
    default: break;
  }
  throw Error(SINGA_INVALID_ARGUMENT, "numpy dtype " + py::str(static_cast<const py::handle&>(dt)).cast<std::string>() + " has no singa element type");
}

namespace {

// Storage that borrows memory owned by a Python object: the owner Storage's
// deleter drops the reference, under the GIL.
std::shared_ptr<singa::Storage> borrowed_storage(void* data, size_t bytes, py::object keep) {
  auto* held = new py::object(std::move(keep));
  std::shared_ptr<singa::Storage> owner(new singa::Storage, [held](singa::Storage* s) {
    delete s;
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete held;
    }
  });
  auto s = std::make_shared<singa::Storage>();
  s->data = data;
  s->bytes = bytes;
  s->owner = std::move(owner);
  return s;
}

singa::Shape shape_of(const py::array& a) {
  singa::Shape s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(int64_t(a.shape(i)));
  return s;
}

Tensor strings_from_numpy(const py::array& a) {
  singa::Shape shape = shape_of(a);
  std::vector<std::string> values;
  values.reserve(size_t(a.size()));
  py::array flat = py::array(a.attr("reshape")(-1));
  for (py::ssize_t i = 0; i < flat.size(); ++i) {
    py::object item = flat.attr("__getitem__")(i);
    if (py::isinstance<py::bytes>(item)) {
      values.push_back(std::string(item.cast<py::bytes>()));
    } else {
      values.push_back(py::str(item).cast<std::string>());
    }
  }
  return Tensor::from_strings(shape, values);
}

}  // namespace

Tensor tensor_from_numpy(const py::array& in, bool copy) {
  const int32_t dtype = onnx_dtype_of(in.dtype());
  if (dtype == SINGA_ONNX_STRING) return strings_from_numpy(in);
  // Non-native byte order or non-contiguous layouts are copied into a fresh,
  // C-ordered native array first.
  py::array a = in;
  // The descriptor's byte-order character, read directly: a Python-level
  // dtype.isnative lookup costs more than the rest of this function.
  const char order = in.dtype().byteorder();
  const bool native = order == '=' || order == '|' ||
                      order == (singa_py::kLittleEndian ? '<' : '>');
  if (!native || !(in.flags() & py::array::c_style)) {
    py::module_ np = py::module_::import("numpy");
    a = np.attr("ascontiguousarray")(in, in.dtype().attr("newbyteorder")("="));
    copy = false;  // already a private copy
  }
  const singa::Shape shape = shape_of(a);
  if (copy) {
    Tensor t(shape, dtype);
    if (t.nbytes()) std::memcpy(t.raw_data(), a.data(), t.nbytes());
    return t;
  }
  size_t bytes = singa::dtype_nbytes(dtype, singa::shape_numel(shape));
  return Tensor(borrowed_storage(const_cast<void*>(a.data()), bytes, a), shape, dtype);
}

py::array tensor_to_numpy(const Tensor& t0) {
  if (!t0.defined()) throw Error(SINGA_INVALID_ARGUMENT, "to_numpy: the tensor is empty (undefined)");
  Tensor t = t0.on_host() ? t0 : t0.to_host();
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == SINGA_ONNX_STRING) {
    py::array out(py::dtype("object"), shape);
    py::array flat = py::array(out.attr("reshape")(-1));
    const char* const* p = t.data<const char* const>();
    for (int64_t i = 0; i < t.numel(); ++i) flat.attr("__setitem__")(i, py::str(p[i] ? p[i] : ""));
    return out;
  }
  py::dtype dt = numpy_dtype(t.dtype());
  // The capsule owns a copy of the Tensor handle, so the array keeps the memory alive.
  auto* keep = new Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, {}, t.raw_data(), owner);
}

Tensor as_tensor(const py::handle& obj) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  // Arrays first: ndarray.data exists too (a memoryview), and making it costs a microsecond.
  if (py::isinstance<py::array>(obj)) return tensor_from_numpy(py::reinterpret_borrow<py::array>(obj));
  if (py::hasattr(obj, "data") && py::isinstance<Tensor>(obj.attr("data")))  // singa.tensor.Tensor
    return obj.attr("data").cast<Tensor>();
  py::module_ np = py::module_::import("numpy");
  return tensor_from_numpy(np.attr("asarray")(obj));
}

singa::Value as_value(const py::handle& obj) {
  if (obj.is_none()) return singa::Value();
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    std::vector<Tensor> items;
    for (auto item : obj) items.push_back(as_tensor(item));
    return singa::Value::sequence(items);
  }
  return singa::Value(as_tensor(obj));
}

py::object from_value(const singa::Value& v) {
  switch (v.kind()) {
    case singa::Value::Kind::kNone: return py::none();
    case singa::Value::Kind::kTensor: return py::cast(v.tensor());
    case singa::Value::Kind::kSequence: {
      py::list out;
      for (const auto& e : v.elements()) out.append(from_value(e));
      return std::move(out);
    }
    case singa::Value::Kind::kMap: return py::make_tuple(v.map_keys(), v.map_values());
  }
  return py::none();
}

}  // namespace singa_py

namespace {

// What a DLPack capsule owns: the tensor (its storage stays alive) and the
// shape the DLTensor points at.
struct DlHolder {
  Tensor tensor;
  std::vector<int64_t> shape;
  DLManagedTensor managed;
};

// struct-module format of an element type, as the buffer protocol spells it.
std::string buffer_format(int32_t t) {
  switch (t) {
    case SINGA_ONNX_FLOAT: return "f";
    case SINGA_ONNX_DOUBLE: return "d";
    case SINGA_ONNX_FLOAT16: return "e";
    case SINGA_ONNX_INT8: return "b";
    case SINGA_ONNX_INT16: return "h";
    case SINGA_ONNX_INT32: return "i";
    case SINGA_ONNX_INT64: return "q";
    case SINGA_ONNX_UINT8: return "B";
    case SINGA_ONNX_UINT16: return "H";
    case SINGA_ONNX_UINT32: return "I";
    case SINGA_ONNX_UINT64: return "Q";
    case SINGA_ONNX_BOOL: return "?";
    case SINGA_ONNX_COMPLEX64: return "Zf";
    case SINGA_ONNX_COMPLEX128: return "Zd";
    case SINGA_ONNX_BFLOAT16: return "H";
    default: throw Error(SINGA_UNIMPLEMENTED, std::string("no buffer format for tensor(") + singa::dtype_name(t) + ")");
  }
}

void dl_deleter(DLManagedTensor* m) { delete static_cast<DlHolder*>(m->manager_ctx); }

py::capsule to_dlpack(const Tensor& t) {
  if (!t.defined()) throw Error(SINGA_INVALID_ARGUMENT, "__dlpack__: the tensor is empty (undefined)");
  if (t.dtype() == SINGA_ONNX_STRING) throw Error(SINGA_UNIMPLEMENTED, "__dlpack__: DLPack has no string tensors");
  auto* h = new DlHolder{t, t.shape(), {}};
  h->managed.dl_tensor = t.dl();
  h->managed.dl_tensor.shape = h->shape.data();
  h->managed.dl_tensor.strides = nullptr;
  h->managed.manager_ctx = h;
  h->managed.deleter = dl_deleter;
  // A capsule nobody consumed still frees the tensor; a consumed one is renamed
  // to "used_dltensor" and belongs to its consumer.
  PyObject* cap = PyCapsule_New(&h->managed, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    }
  });
  if (!cap) {
    delete h;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

singa::Device* device_for_dl(const DLDevice& d) {
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost) return nullptr;
  for (singa::Device* dev : singa::Runtime::instance().devices())
    if (dev->dl_device_type() == int32_t(d.device_type)) return dev;
  throw Error(SINGA_UNAVAILABLE, "from_dlpack: no singa device serves DLPack device type " +
                                     std::to_string(int(d.device_type)));
}

Tensor from_dlpack(py::object obj) {
  py::object cap_obj = obj;
  if (py::hasattr(obj, "__dlpack__")) cap_obj = obj.attr("__dlpack__")();
  PyObject* cap = cap_obj.ptr();
  if (!PyCapsule_IsValid(cap, "dltensor"))
    throw Error(SINGA_INVALID_ARGUMENT, "from_dlpack: expected an object with __dlpack__ or an unused DLPack capsule");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
  const DLTensor& d = m->dl_tensor;
  singa::Shape shape(d.shape, d.shape + d.ndim);
  const int32_t dtype = singa::from_dl(d.dtype);
  if (dtype == 0 || d.dtype.lanes != 1) {
    throw Error(SINGA_INVALID_ARGUMENT, "from_dlpack: unsupported element type (code " + std::to_string(d.dtype.code) +
                                            ", " + std::to_string(d.dtype.bits) + " bits)");
  }
  if (d.strides) {  // only compact row-major layouts can be shared
    int64_t expect = 1;
    for (int i = d.ndim - 1; i >= 0; --i) {
      if (d.shape[i] != 1 && d.strides[i] != expect)
        throw Error(SINGA_INVALID_ARGUMENT, "from_dlpack: only C-contiguous tensors can be shared; copy it first");
      expect *= d.shape[i];
    }
  }
  singa::Device* dev = device_for_dl(d.device);
  // The capsule is consumed: its tensor is now ours, released through its deleter.
  PyCapsule_SetName(cap, "used_dltensor");
  std::shared_ptr<singa::Storage> owner(new singa::Storage, [m](singa::Storage* s) {
    delete s;
    if (m->deleter) {
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire gil;  // producers such as numpy release Python objects
        m->deleter(m);
      }
    }
  });
  auto s = std::make_shared<singa::Storage>();
  s->device = dev;
  s->device_id = d.device.device_id;
  s->data = static_cast<char*>(d.data) + d.byte_offset;
  s->bytes = singa::dtype_nbytes(dtype, singa::shape_numel(shape));
  s->owner = std::move(owner);
  return Tensor(s, shape, dtype);
}

}  // namespace

void bind_tensor(py::module_& m) {
  using namespace singa_py;
  py::class_<Tensor>(m, "CTensor", py::buffer_protocol(), R"doc(
A singa::Tensor: an n-d array on a device, shared by reference.

Host tensors expose the buffer protocol, so ``numpy.asarray(t)`` views the
same memory; ``CTensor.from_numpy(a)`` shares a C-contiguous array's memory.
Element types are ONNX codes (``onnx.TensorProto.FLOAT`` = 1, ...).
)doc")
      .def(py::init([](const std::vector<int64_t>& shape, int32_t dtype, singa::Device* device, int32_t device_id) {
             if (singa::dtype_size(dtype) == 0 && singa::dtype_bits(dtype) == 0)
               throw Error(SINGA_INVALID_ARGUMENT, "CTensor: unknown element type code " + std::to_string(dtype));
             return Tensor(shape, dtype, device, device_id);
           }),
           py::arg("shape"), py::arg("dtype") = int32_t(SINGA_ONNX_FLOAT), py::arg("device") = nullptr,
           py::arg("device_id") = 0, "An uninitialised tensor of `shape` and ONNX element type `dtype` on `device`.")
      .def_static("from_numpy", &tensor_from_numpy, py::arg("array"), py::arg("copy") = false,
                  "A host tensor over `array` (shared when C-contiguous, copied otherwise or when copy=True).")
      .def("numpy", &tensor_to_numpy, "A numpy array over this tensor (a view for host tensors).")
      .def_property_readonly("defined", &Tensor::defined)
      .def_property_readonly("shape", [](const Tensor& t) { return std::vector<int64_t>(t.shape()); })
      .def_property_readonly("dtype", &Tensor::dtype, "ONNX element type code.")
      .def_property_readonly("dtype_name", [](const Tensor& t) { return std::string(singa::dtype_name(t.dtype())); })
      .def_property_readonly("numel", &Tensor::numel)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def_property_readonly("device", &Tensor::device_name, "Name of the device holding the data ('cpu', 'cuda', ...).")
      .def_property_readonly("device_id", &Tensor::device_id)
      .def_property_readonly("on_host", &Tensor::on_host)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); })
      .def("reshaped", [](const Tensor& t, const std::vector<int64_t>& s) { return t.reshaped(s); }, py::arg("shape"))
      .def("to", [](const Tensor& t, singa::Device* d, int32_t id) {
             py::gil_scoped_release nogil;
             return t.to(d, id);
           }, py::arg("device"), py::arg("device_id") = 0, "A copy on `device` (None: the host); self when already there.")
      .def("to_host", [](const Tensor& t) {
             py::gil_scoped_release nogil;
             return t.to_host();
           })
      .def("clone", [](const Tensor& t) {
             py::gil_scoped_release nogil;
             return t.clone();
           })
      .def("copy_from", [](Tensor& t, const Tensor& src) {
             if (src.shape() != t.shape() || src.dtype() != t.dtype())
               throw Error(SINGA_INVALID_ARGUMENT, "copy_from: " + std::string(singa::dtype_name(src.dtype())) +
                                                       singa::shape_to_string(src.shape()) + " into " +
                                                       singa::dtype_name(t.dtype()) + singa::shape_to_string(t.shape()));
             if (!t.on_host() || !src.on_host() || t.dtype() == SINGA_ONNX_STRING)
               throw Error(SINGA_UNIMPLEMENTED, "copy_from: only host tensors of numeric types");
             if (t.nbytes()) std::memmove(t.raw_data(), src.raw_data(), t.nbytes());
           }, py::arg("src"), "Copies `src` (same shape and type) into this tensor's memory.")
      .def("__dlpack__", [](const Tensor& t, py::object stream) { return to_dlpack(t); }, py::arg("stream") = py::none(),
           "A DLPack capsule sharing this tensor's memory.")
      .def("__dlpack_device__", [](const Tensor& t) {
             DLTensor d = t.dl();
             return py::make_tuple(int(d.device.device_type), int(d.device.device_id));
           })
      .def_static("from_dlpack", &from_dlpack, py::arg("obj"),
                  "A tensor sharing the memory of `obj` (anything with __dlpack__, or a DLPack capsule).")
      .def("__repr__", [](const Tensor& t) {
             if (!t.defined()) return std::string("CTensor(undefined)");
             return "CTensor(" + std::string(singa::dtype_name(t.dtype())) + singa::shape_to_string(t.shape()) + " on " +
                    t.device_name() + ")";
           })
      .def_buffer([](const Tensor& t) -> py::buffer_info {
        if (!t.defined()) throw Error(SINGA_INVALID_ARGUMENT, "the tensor is empty (undefined)");
        if (!t.on_host())
          throw Error(SINGA_INVALID_ARGUMENT, "a " + t.device_name() + " tensor has no host buffer; call to_host() first");
        if (t.dtype() == SINGA_ONNX_STRING) throw Error(SINGA_UNIMPLEMENTED, "string tensors have no buffer; use numpy()");
        py::dtype dt = numpy_dtype(t.dtype());
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(shape.size());
        py::ssize_t stride = dt.itemsize();
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= shape[i];
        }
        return py::buffer_info(t.raw_data(), dt.itemsize(), buffer_format(t.dtype()), py::ssize_t(shape.size()), shape,
                               strides);
      });

  m.def("dtype_name", [](int32_t t) { return std::string(singa::dtype_name(t)); }, py::arg("onnx_dtype"));
  m.def("numpy_dtype", &numpy_dtype, py::arg("onnx_dtype"), "The numpy dtype of an ONNX element type code.");
  m.def("onnx_dtype", [](py::object dt) { return onnx_dtype_of(py::dtype::from_args(dt)); }, py::arg("dtype"),
        "The ONNX element type code of a numpy dtype.");
}
