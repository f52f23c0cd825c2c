// bind_layer.cpp - the C++ layers (singa::layer) that singa.layer and
// singa.autograd wrap. (ImportedModel, the tape-running form of a prepared
// model, is bound with the Rep in bind_onnx.cpp.)
#include "bindings.hpp"

#include <singa/layer.hpp>

#include <pybind11/stl.h>

namespace py = pybind11;
using singa::Error;
using singa::autograd::Variable;
namespace L = singa::layer;

namespace {

// Layer forward with the GIL released and recording switched off when the
// Python side is not training (autograd.training = False).
Variable run_forward(L::Layer& l, const Variable& x, bool record) {
  py::gil_scoped_release nogil;
  if (record) return l.forward(x);
  singa::autograd::NoGradGuard g;
  return l.forward(x);
}

template <class T>
using LayerClass = py::class_<T, L::Layer, std::shared_ptr<T>>;

}  // namespace

void bind_layer(py::module_& m) {
  m.def("manual_seed", &L::manual_seed, py::arg("seed"), "Seeds the generator that initialises new layers' weights.");

  py::class_<L::Layer, std::shared_ptr<L::Layer>>(m, "Layer", "A C++ layer (singa::layer::Layer).")
      .def("forward", &run_forward, py::arg("x"), py::arg("record") = true,
           "Runs the layer on a Variable; `record` puts its ops on the tape.")
      .def("parameters", &L::Layer::parameters, py::arg("prefix") = "",
           "Trainable parameters as (name, Variable) pairs.")
      .def("buffers", &L::Layer::buffers, py::arg("prefix") = "",
           "Non-trainable state (running statistics) as (name, Variable) pairs.")
      .def("train", &L::Layer::train, py::arg("on") = true)
      .def("eval", &L::Layer::eval)
      .def_property_readonly("training", &L::Layer::training);

  LayerClass<L::Linear>(m, "Linear")
      .def(py::init<int64_t, int64_t, bool>(), py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true)
      .def_readwrite("weight", &L::Linear::weight)
      .def_readwrite("bias", &L::Linear::bias);
  LayerClass<L::Conv2d>(m, "Conv2d")
      .def(py::init<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>(), py::arg("in_channels"),
           py::arg("out_channels"), py::arg("kernel"), py::arg("stride") = 1, py::arg("padding") = 0,
           py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("bias") = true)
      .def_readwrite("weight", &L::Conv2d::weight)
      .def_readwrite("bias", &L::Conv2d::bias);
  LayerClass<L::MaxPool2d>(m, "MaxPool2d")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("kernel"), py::arg("stride") = 0, py::arg("padding") = 0);
  LayerClass<L::AvgPool2d>(m, "AvgPool2d")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("kernel"), py::arg("stride") = 0, py::arg("padding") = 0);
  LayerClass<L::BatchNorm2d>(m, "BatchNorm2d")
      .def(py::init<int64_t, float, float>(), py::arg("channels"), py::arg("momentum") = 0.9f,
           py::arg("epsilon") = 1e-5f)
      .def_readwrite("scale", &L::BatchNorm2d::scale)
      .def_readwrite("bias", &L::BatchNorm2d::bias)
      .def_readwrite("running_mean", &L::BatchNorm2d::running_mean)
      .def_readwrite("running_var", &L::BatchNorm2d::running_var);
  LayerClass<L::Dropout>(m, "Dropout").def(py::init<float, int64_t>(), py::arg("ratio") = 0.5f, py::arg("seed") = -1);
  LayerClass<L::Activation>(m, "Activation")
      .def(py::init([](const std::string& op, float alpha, bool has_alpha, int64_t axis, bool has_axis) {
             singa::autograd::Attrs a;
             if (has_alpha) a.set("alpha", alpha);
             if (has_axis) a.set("axis", axis);
             return std::make_shared<L::Activation>(op, a);
           }),
           py::arg("op_type"), py::arg("alpha") = 0.f, py::arg("has_alpha") = false, py::arg("axis") = 0,
           py::arg("has_axis") = false,
           "A parameterless op (Relu, Sigmoid, Tanh, LeakyRelu, Elu, Softplus, Flatten, ...) as a layer.");
  LayerClass<L::LSTM>(m, "LSTM")
      .def(py::init<int64_t, int64_t, int64_t, bool, bool>(), py::arg("input_size"), py::arg("hidden_size"),
           py::arg("num_layers") = 1, py::arg("batch_first") = true, py::arg("return_sequences") = true);
  LayerClass<L::Sequential>(m, "Sequential")
      .def(py::init<std::vector<std::shared_ptr<L::Layer>>>(), py::arg("layers"))
      .def("add", [](L::Sequential& s, std::shared_ptr<L::Layer> l) { s.add(std::move(l)); })
      .def_property_readonly("layers", &L::Sequential::layers);
}
