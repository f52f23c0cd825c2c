// bindings.hpp - the pieces of the _singa extension module.
//
// module.cpp calls each bind_* in the order declared here: tensor first,
// because the later bindings take and return the bound singa::Tensor
// (_singa.CTensor) and singa::autograd::Variable types.
#ifndef SINGA_PYTHON_BINDINGS_HPP
#define SINGA_PYTHON_BINDINGS_HPP

#include <pybind11/pybind11.h>

void bind_tensor(pybind11::module_& m);    // _singa.CTensor, dtype helpers, numpy / dlpack interop
void bind_device(pybind11::module_& m);    // _singa.Device, runtime loading, SingaError
void bind_onnx(pybind11::module_& m);      // _singa.Session / ImportedModel for singa.sonnx
void bind_autograd(pybind11::module_& m);  // _singa.Variable and the eager ops (PY2)
void bind_layer(pybind11::module_& m);     // layers of the C++ layer API (PY2)
void bind_optim(pybind11::module_& m);     // optimizers (PY2)
void bind_dist(pybind11::module_& m);      // data-parallel DistOpt over MPI (singa.opt.DistOpt)

#endif
