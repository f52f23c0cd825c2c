// bind_optim.cpp - the C++ optimizers (singa::optim). singa.opt keeps one of
// these per parameter, because SINGA's Python optimizers learn their
// parameters one update(param, grad) call at a time.
#include "bindings.hpp"

#include <singa/optim.hpp>

#include <pybind11/stl.h>

namespace py = pybind11;
namespace O = singa::optim;

void bind_optim(py::module_& m) {
  py::class_<O::Optimizer, std::shared_ptr<O::Optimizer>>(m, "Optimizer", "A C++ optimizer over named Variables.")
      .def(
          "step",
          [](O::Optimizer& o) {
            py::gil_scoped_release nogil;
            o.step();
          },
          "Updates every parameter that has a gradient, in place, and counts a step.")
      .def("zero_grad", &O::Optimizer::zero_grad)
      .def_property("lr", &O::Optimizer::lr, &O::Optimizer::set_lr)
      .def_property_readonly("steps", &O::Optimizer::steps)
      .def_property_readonly("params", &O::Optimizer::params)
      .def("state", &O::Optimizer::state, "Momentum buffers / moments and the step count, by name.")
      .def("load_state", &O::Optimizer::load_state, py::arg("state"));

  py::class_<O::SGD, O::Optimizer, std::shared_ptr<O::SGD>>(m, "SGD")
      .def(py::init<O::NamedVariables, double, double, double, bool, double>(), py::arg("params"), py::arg("lr"),
           py::arg("momentum") = 0.0, py::arg("weight_decay") = 0.0, py::arg("nesterov") = false,
           py::arg("dampening") = 0.0);
  py::class_<O::Adam, O::Optimizer, std::shared_ptr<O::Adam>>(m, "Adam")
      .def(py::init<O::NamedVariables, double, double, double, double, double, bool>(), py::arg("params"),
           py::arg("lr") = 1e-3, py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("epsilon") = 1e-8,
           py::arg("weight_decay") = 0.0, py::arg("decoupled") = false);
}
