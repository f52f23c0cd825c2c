// convert.hpp - numpy / Python <-> singa conversions shared by the bindings.
#ifndef SINGA_PYTHON_CONVERT_HPP
#define SINGA_PYTHON_CONVERT_HPP

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <singa/tensor.hpp>
#include <singa/value.hpp>

namespace singa_py {

// The numpy dtype of an ONNX element type; throws singa::Error for types
// numpy lacks (bfloat16, float8, 4-bit, string).
pybind11::dtype numpy_dtype(int32_t onnx_dtype);
// The ONNX element type of a numpy dtype; throws singa::Error when unsupported.
int32_t onnx_dtype_of(const pybind11::dtype& dt);

// A host Tensor over a numpy array. C-contiguous arrays of a supported dtype
// are shared, not copied (the Tensor keeps the array alive); anything else is
// copied, as are string (object/unicode) arrays. `copy` forces a copy.
singa::Tensor tensor_from_numpy(const pybind11::array& a, bool copy = false);
// A numpy array viewing a host Tensor's memory (keeping it alive through `owner`),
// or a copy for string tensors. Device tensors are copied to the host first.
pybind11::array tensor_to_numpy(const singa::Tensor& t);

// CTensor, numpy array (or anything numpy accepts) -> Tensor.
singa::Tensor as_tensor(const pybind11::handle& obj);
// Python -> Value: None is an empty optional, a list/tuple a sequence, else a tensor.
singa::Value as_value(const pybind11::handle& obj);
// Value -> Python: CTensor, list of them, None, or a (keys, values) tuple for maps.
pybind11::object from_value(const singa::Value& v);

}  // namespace singa_py
#endif
