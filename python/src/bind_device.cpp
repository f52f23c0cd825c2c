// bind_device.cpp - the plugin runtime and its devices, and singa's errors as
// Python exceptions.
#include "bindings.hpp"

#include <singa/runtime.hpp>

#include <pybind11/stl.h>

namespace py = pybind11;

namespace {

// One exception class per status code, each also a subclass of the built-in
// type a Python user would catch for it (ValueError for bad arguments, ...).
struct ErrorClasses {
  PyObject* base = nullptr;
  PyObject* by_code[8] = {};
};
ErrorClasses g_errors;

PyObject* new_error_class(py::module_& m, const char* name, const char* doc, std::vector<PyObject*> bases) {
  py::tuple b(bases.size());
  for (size_t i = 0; i < bases.size(); ++i) b[i] = py::reinterpret_borrow<py::object>(bases[i]);
  std::string qualified = std::string("singa.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, b.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.attr(name) = py::reinterpret_borrow<py::object>(cls);
  return cls;  // the module keeps a reference; so does this table, for the process's life
}

void raise_singa_error(const singa::Error& e) {
  int code = int(e.code());
  PyObject* cls = (code >= 0 && code < 8 && g_errors.by_code[code]) ? g_errors.by_code[code] : g_errors.base;
  // Messages quote names from model files, which need not be valid UTF-8: a
  // strict decode would replace the SingaError with a UnicodeDecodeError.
  const std::string what = e.what();
  py::object msg = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(what.data(), py::ssize_t(what.size()), "backslashreplace"));
  if (!msg) throw py::error_already_set();
  py::object exc = py::reinterpret_borrow<py::object>(cls)(msg);
  exc.attr("code") = py::str(singa::code_name(e.code()));
  PyErr_SetObject(cls, exc.ptr());
}

py::dict plugin_dict(const singa::PluginInfo& p) {
  py::dict d;
  d["path"] = p.path;
  d["name"] = p.name;
  d["version"] = p.version;
  d["description"] = p.description;
  d["abi"] = std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor);
  d["devices"] = p.devices;
  d["kernels"] = p.kernel_count;
  d["loaded"] = p.loaded;
  d["error"] = p.error;
  return d;
}

}  // namespace

void bind_device(py::module_& m) {
  PyObject* base = new_error_class(m, "SingaError",
                                   "Base of singa's errors; `code` names the status (INVALID_ARGUMENT, NOT_FOUND, ...).",
                                   {PyExc_Exception});
  g_errors.base = base;
  g_errors.by_code[SINGA_INVALID_ARGUMENT] =
      new_error_class(m, "InvalidArgumentError", "A bad attribute, shape, dtype or input.", {base, PyExc_ValueError});
  g_errors.by_code[SINGA_NOT_FOUND] =
      new_error_class(m, "NotFoundError", "A missing value, kernel, file or symbol.", {base, PyExc_LookupError});
  g_errors.by_code[SINGA_UNIMPLEMENTED] = new_error_class(
      m, "UnimplementedError", "A valid request singa cannot do (yet).", {base, PyExc_NotImplementedError});
  g_errors.by_code[SINGA_OUT_OF_MEMORY] =
      new_error_class(m, "OutOfMemoryError", "An allocation failed.", {base, PyExc_MemoryError});
  g_errors.by_code[SINGA_UNAVAILABLE] =
      new_error_class(m, "UnavailableError", "A device or runtime is not present.", {base, PyExc_RuntimeError});
  g_errors.by_code[SINGA_ABI_MISMATCH] =
      new_error_class(m, "AbiMismatchError", "A plugin was built for another ABI.", {base, PyExc_RuntimeError});
  g_errors.by_code[SINGA_INTERNAL] =
      new_error_class(m, "InternalError", "A bug in singa or a plugin.", {base, PyExc_RuntimeError});
  // No status code maps to it: the Python modules raise it for arguments of
  // the wrong Python type, so it is also the TypeError Python users expect.
  new_error_class(m, "InvalidTypeError", "An argument of the wrong Python type (a Tensor expected, ...).",
                  {base, PyExc_TypeError});
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const singa::Error& e) {
      raise_singa_error(e);
    }
  });

  py::class_<singa::Device, std::unique_ptr<singa::Device, py::nodelete>>(m, "Device",
      "A device type registered by a plugin (owned by the runtime; lives as long as the process).")
      .def_property_readonly("name", &singa::Device::name)
      .def_property_readonly("plugin_path", &singa::Device::plugin_path)
      .def_property_readonly("dl_device_type", &singa::Device::dl_device_type)
      .def_property_readonly("host_addressable", &singa::Device::host_addressable)
      .def("count", [](const singa::Device& d) {
             std::string reason;
             int32_t n = d.count(&reason);
             return py::make_tuple(n, reason);
           }, "(number of usable ids, why none are usable)")
      .def_property("num_threads", &singa::Device::num_threads, &singa::Device::set_num_threads)
      .def("synchronize", [](singa::Device& d, int32_t id) {
             py::gil_scoped_release nogil;
             d.synchronize(id);
           }, py::arg("device_id") = 0)
      .def("__repr__", [](const singa::Device& d) { return "<singa Device '" + d.name() + "'>"; });

  m.def("load_runtime", [](const std::vector<std::string>& dirs, bool use_default_dirs, bool use_env) {
          singa::Runtime& rt = singa::Runtime::instance();
          if (rt.loaded()) return std::vector<std::string>{};
          singa::LoadOptions o;
          o.plugin_dirs = dirs;
          o.use_default_dirs = use_default_dirs;
          o.use_env = use_env;
          py::gil_scoped_release nogil;
          return rt.load(o);
        }, py::arg("plugin_dirs") = std::vector<std::string>{}, py::arg("use_default_dirs") = true,
        py::arg("use_env") = true,
        "Loads the plugins once per process (later calls do nothing); returns the folders searched.");
  m.def("runtime_loaded", [] { return singa::Runtime::instance().loaded(); });
  m.def("plugins", [] {
    py::list out;
    for (const auto& p : singa::Runtime::instance().plugins()) out.append(plugin_dict(p));
    return out;
  }, "Every plugin file the runtime considered, loaded or skipped (with its reason).");
  m.def("devices", [] { return singa::Runtime::instance().devices(); }, py::return_value_policy::reference);
  m.def("get_device", [](const std::string& name) { return singa::Runtime::instance().device(name); },
        py::arg("name"), py::return_value_policy::reference, "The registered device of this name, or None.");
  m.def("kernel_count", [] { return singa::Runtime::instance().kernel_count(); });
  m.def("set_option", [](const std::string& key, const std::string& value) {
          singa::Runtime::instance().set_option(key, value);
        }, py::arg("key"), py::arg("value"),
        "Sets a runtime-wide named option (docs/options.md); a malformed value of a documented key raises.");
  m.def("options", [] { return singa::Runtime::instance().options(); }, "The runtime-wide named options.");
}
