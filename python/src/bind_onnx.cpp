// bind_onnx.cpp - prepared ONNX models (singa::onnx::Rep) and their trainable
// form (singa::layer::ImportedModel), the C++ half of singa.sonnx.
//
// Runs and prepares release the GIL: a Rep is safe to run from several
// threads at once, and other Python threads keep going meanwhile.
#include "bindings.hpp"
#include "convert.hpp"

#include <singa/layer.hpp>
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using singa::onnx::Rep;

namespace {

const char* kind_name(singa::onnx::ValueInfo::Kind k) {
  switch (k) {
    case singa::onnx::ValueInfo::Kind::kSequence: return "sequence";
    case singa::onnx::ValueInfo::Kind::kOptional: return "optional";
    default: return "tensor";
  }
}

py::dict value_info(const singa::onnx::ValueInfo& v) {
  py::dict d;
  d["name"] = v.name;
  d["kind"] = kind_name(v.kind);
  d["dtype"] = v.dtype;
  d["shape"] = v.rank_known ? py::object(py::cast(v.dims)) : py::object(py::none());
  d["dim_names"] = v.dim_names;
  return d;
}

py::list value_infos(const std::vector<singa::onnx::ValueInfo>& vs) {
  py::list out;
  for (const auto& v : vs) out.append(value_info(v));
  return out;
}

std::shared_ptr<Rep> prepare(const py::bytes& model, const std::string& device, bool fallback, bool optimize,
                             bool check_model, int threads, const std::map<std::string, int64_t>& dims,
                             const std::string& source, const std::string& base_dir) {
  std::string bytes = model;
  singa::onnx::PrepareOptions o;
  o.device = device;
  o.fallback = fallback;
  o.optimize = optimize;
  o.check_model = check_model;
  o.threads = threads;
  o.dims = dims;
  py::gil_scoped_release nogil;
  ::onnx::ModelProto proto = singa::onnx::parse_model(bytes, source);
  bytes.clear();
  return singa::onnx::prepare_at(std::move(proto), o, source, base_dir);
}

// Runs `rep` on Python inputs (CTensor / numpy / list / None, by position or
// by name); returns [(name, value)] in output order.
py::list run(const Rep& rep, const py::object& inputs, int last_layers, const std::string& last_node,
             bool all_outputs) {
  std::vector<singa::Value> values;
  const auto& infos = rep.inputs();
  if (py::isinstance<py::dict>(inputs)) {
    py::dict d = inputs.cast<py::dict>();
    for (const auto& info : infos) {
      if (!d.contains(info.name))
        throw singa::Error(SINGA_INVALID_ARGUMENT, rep.source() + ": input '" + info.name + "' was not given");
      values.push_back(singa_py::as_value(d[py::str(info.name)]));
    }
    if (d.size() != infos.size())
      throw singa::Error(SINGA_INVALID_ARGUMENT, rep.source() + ": " + std::to_string(d.size()) + " inputs given, the model takes " +
                                                     std::to_string(infos.size()));
  } else {
    for (auto item : inputs) values.push_back(singa_py::as_value(item));
  }
  // numpy has no bfloat16: its uint16 bit patterns stand for it (onnx's numpy_helper does the same).
  for (size_t i = 0; i < values.size() && i < infos.size(); ++i) {
    const singa::Tensor& t = values[i].tensor();
    if (values[i].is_tensor() && t.dtype() == SINGA_ONNX_UINT16 && infos[i].dtype == SINGA_ONNX_BFLOAT16) {
      size_t offset = size_t(static_cast<char*>(t.raw_data()) - static_cast<char*>(t.storage()->data));
      values[i] = singa::Value(singa::Tensor(t.storage(), t.shape(), SINGA_ONNX_BFLOAT16, offset));
    }
  }
  singa::onnx::RunOptions o;
  o.last_layers = last_layers;
  o.last_node = last_node;
  o.all_outputs = all_outputs;
  singa::onnx::NamedValues out;
  {
    py::gil_scoped_release nogil;
    out = rep.run_values(values, o);
    values.clear();  // borrowed numpy memory is released under the GIL below
  }
  py::list result;
  for (auto& kv : out) result.append(py::make_tuple(kv.first, singa_py::from_value(kv.second)));
  return result;
}

}  // namespace

void bind_onnx(py::module_& m) {
  py::class_<Rep, std::shared_ptr<Rep>>(m, "Rep", "A prepared ONNX model (singa::onnx::Rep).")
      .def("run", &run, py::arg("inputs"), py::arg("last_layers") = 0, py::arg("last_node") = "",
           py::arg("all_outputs") = false,
           "Runs the model; inputs by position (list) or name (dict). Returns [(name, value)].")
      .def_property_readonly("inputs", [](const Rep& r) { return value_infos(r.inputs()); })
      .def_property_readonly("outputs", [](const Rep& r) { return value_infos(r.outputs()); })
      .def_property_readonly("source", &Rep::source)
      .def_property_readonly("opsets", &Rep::opsets)
      .def("nodes", [](const Rep& r) {
        py::list out;
        for (const auto& n : r.nodes()) {
          py::dict d;
          d["name"] = n.name;
          d["op_type"] = n.op_type;
          d["domain"] = n.domain;
          d["outputs"] = value_infos(n.outputs);
          out.append(d);
        }
        return out;
      })
      .def("placement", [](const Rep& r) {
        py::list out;
        for (const auto& p : r.placement()) out.append(py::make_tuple(p.node, p.op_type, p.device, p.plugin));
        return out;
      }, "(node, op_type, device, plugin) for every node.")
      .def("parameters", &Rep::parameters, "Initializers by name.");

  m.def("prepare", &prepare, py::arg("model"), py::arg("device") = "cpu", py::arg("fallback") = true,
        py::arg("optimize") = true, py::arg("check_model") = true, py::arg("threads") = 0,
        py::arg("dims") = std::map<std::string, int64_t>{}, py::arg("source") = "<model>", py::arg("base_dir") = "",
        "Prepares a serialized ModelProto; `base_dir` resolves external data.");

  using singa::layer::ImportedModel;
  py::class_<ImportedModel, std::shared_ptr<ImportedModel>>(m, "ImportedModel",
      "A prepared model run node by node on the autograd tape, its initializers trainable Variables.")
      .def(py::init([](std::shared_ptr<Rep> rep, int last_layers) {
             return std::make_shared<ImportedModel>(std::move(rep), last_layers);
           }), py::arg("rep"), py::arg("last_layers") = 0,
           "`rep` must be prepared with optimize=False (the graph as the model wrote it).")
      .def("forward_all", [](ImportedModel& im, const std::vector<singa::autograd::Variable>& xs) {
             py::gil_scoped_release nogil;
             return im.forward_all(xs);
           }, py::arg("inputs"))
      .def("set_last_layers", &ImportedModel::set_last_layers, py::arg("last_layers"))
      .def("set_trainable", py::overload_cast<bool>(&ImportedModel::set_trainable), py::arg("on"))
      .def("train", &ImportedModel::train, py::arg("on") = true)
      .def("to", &ImportedModel::to, py::arg("dtype"), "Converts the state (and the graph's arithmetic) to float or double.")
      .def_property_readonly("training", &ImportedModel::training)
      .def("parameters", [](const ImportedModel& im) { return im.parameters(); },
           "[(name, Variable)] of the float initializers.")
      .def("buffers", [](const ImportedModel& im) { return im.buffers(); });
}
