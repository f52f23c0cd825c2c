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

#include <chrono>

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

// Names come from the model file and need not be valid UTF-8; undecodable
// bytes appear as backslash escapes instead of failing the whole call.
py::str text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), py::ssize_t(s.size()), "backslashreplace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// [(name, Variable)] with the names decoded as text() does.
py::list named(const singa::layer::NamedVariables& vars) {
  py::list out;
  for (const auto& kv : vars) out.append(py::make_tuple(text(kv.first), py::cast(kv.second)));
  return out;
}

py::dict value_info(const singa::onnx::ValueInfo& v) {
  py::dict d;
  d["name"] = text(v.name);
  d["kind"] = kind_name(v.kind);
  d["dtype"] = v.dtype;
  d["shape"] = v.rank_known ? py::object(py::cast(v.dims)) : py::object(py::none());
  py::list dim_names;
  for (const auto& n : v.dim_names) dim_names.append(text(n));
  d["dim_names"] = dim_names;
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

std::string input_names(const std::vector<singa::onnx::ValueInfo>& infos) {
  std::string out;
  for (const auto& info : infos) out += (out.empty() ? "'" : ", '") + info.name + "'";
  return out;
}

// Python inputs (CTensor / numpy / list / None, by position or by name) as
// the Values Rep::run_values takes, in the model's input order.
std::vector<singa::Value> input_values(const Rep& rep, const py::object& inputs) {
  std::vector<singa::Value> values;
  const auto& infos = rep.inputs();
  if (py::isinstance<py::dict>(inputs)) {
    py::dict d = inputs.cast<py::dict>();
    for (const auto& info : infos) {
      if (!d.contains(info.name))
        throw singa::Error(SINGA_INVALID_ARGUMENT, rep.source() + ": input '" + info.name +
                                                       "' was not given (the model's inputs: " + input_names(infos) + ")");
      values.push_back(singa_py::as_value(d[py::str(info.name)]));
    }
    if (d.size() != infos.size()) {
      for (auto kv : d) {
        const std::string key = py::str(kv.first);
        bool known = false;
        for (const auto& info : infos) known = known || info.name == key;
        if (!known)
          throw singa::Error(SINGA_INVALID_ARGUMENT, rep.source() + ": the model has no input named '" + key +
                                                         "' (its inputs: " + input_names(infos) + ")");
      }
    }
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
  return values;
}

// A tensor output as numpy (a view of singa's memory), sequences element by
// element; maps and empty optionals stay as from_value gives them.
py::object numpy_value(const singa::Value& v) {
  if (v.kind() == singa::Value::Kind::kTensor) return singa_py::tensor_to_numpy(v.tensor());
  if (v.kind() == singa::Value::Kind::kSequence) {
    py::list out;
    for (const auto& e : v.elements()) out.append(numpy_value(e));
    return std::move(out);
  }
  return singa_py::from_value(v);
}

// Runs `rep`; returns [(name, value)] in output order, values as CTensors or,
// with `as_numpy`, numpy arrays made here (saving a Python-level call per output).
py::list run(const Rep& rep, const py::object& inputs, int last_layers, const std::string& last_node,
             bool all_outputs, bool as_numpy) {
  std::vector<singa::Value> values = input_values(rep, inputs);
  singa::onnx::RunOptions o;
  o.last_layers = last_layers;
  o.last_node = last_node;
  o.all_outputs = all_outputs;
  singa::onnx::NamedValues out;
  {
    py::gil_scoped_release nogil;
    out = rep.run_values(values, o);
  }
  values.clear();  // borrowed numpy memory is released with the GIL held (no extra hand-off)
  py::list result;
  for (auto& kv : out)
    result.append(py::make_tuple(text(kv.first), as_numpy ? numpy_value(kv.second) : singa_py::from_value(kv.second)));
  return result;
}

// Seconds taken by each of `iters` Rep::run_values calls timed in C++ on the
// same converted inputs: the reference bench/python_overhead.py compares a
// Python-level run against.
std::vector<double> time_runs(const Rep& rep, const py::object& inputs, int iters, int warmup) {
  if (iters < 1 || warmup < 0)
    throw singa::Error(SINGA_INVALID_ARGUMENT, "time_runs: iters must be >= 1 and warmup >= 0, got " +
                                                   std::to_string(iters) + " and " + std::to_string(warmup));
  std::vector<singa::Value> values = input_values(rep, inputs);
  std::vector<double> seconds(size_t(iters), 0.0);
  {
    py::gil_scoped_release nogil;
    for (int i = 0; i < warmup; ++i) rep.run_values(values);
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      rep.run_values(values);
      seconds[size_t(i)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  return seconds;
}

}  // namespace

void bind_onnx(py::module_& m) {
  py::class_<Rep, std::shared_ptr<Rep>>(m, "Rep", "A prepared ONNX model (singa::onnx::Rep).")
      .def("run", &run, py::arg("inputs"), py::arg("last_layers") = 0, py::arg("last_node") = "",
           py::arg("all_outputs") = false, py::arg("as_numpy") = false,
           "Runs the model; inputs by position (list) or name (dict). Returns [(name, value)], values as\n"
           "CTensors or (as_numpy) numpy arrays viewing singa's output memory.")
      .def("time_runs", &time_runs, py::arg("inputs"), py::arg("iters") = 1000, py::arg("warmup") = 10,
           "Seconds per Rep::run_values call, timed in C++ on the same converted inputs (for benchmarks).")
      .def_property_readonly("inputs", [](const Rep& r) { return value_infos(r.inputs()); })
      .def_property_readonly("outputs", [](const Rep& r) { return value_infos(r.outputs()); })
      .def_property_readonly("source", [](const Rep& r) { return text(r.source()); })
      .def_property_readonly("opsets", &Rep::opsets)
      .def("nodes", [](const Rep& r) {
        py::list out;
        for (const auto& n : r.nodes()) {
          py::dict d;
          d["name"] = text(n.name);
          d["op_type"] = text(n.op_type);
          d["domain"] = text(n.domain);
          d["outputs"] = value_infos(n.outputs);
          out.append(d);
        }
        return out;
      })
      .def("placement", [](const Rep& r) {
        py::list out;
        for (const auto& p : r.placement())
          out.append(py::make_tuple(text(p.node), text(p.op_type), text(p.device), text(p.plugin)));
        return out;
      }, "(node, op_type, device, plugin) for every node.")
      .def("parameters", [](const Rep& r) {
        py::dict out;
        for (const auto& kv : r.parameters()) out[text(kv.first)] = py::cast(kv.second);
        return out;
      }, "Initializers by name.");

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
      .def("parameters", [](const ImportedModel& im) { return named(im.parameters()); },
           "[(name, Variable)] of the float initializers.")
      .def("buffers", [](const ImportedModel& im) { return named(im.buffers()); });
}
