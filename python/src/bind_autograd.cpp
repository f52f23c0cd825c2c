// bind_autograd.cpp - _singa.Variable and the eager, recorded ops that
// singa.autograd builds on.
//
// Contract with tensor.py / bind_tensor.cpp: a Python singa.tensor.Tensor
// holds one _singa.Variable (attribute `_var`); a Variable holds the raw data as
// a _singa.CTensor (bound singa::Tensor) plus grad, requires_grad and the tape
// link. Ops take and return Variables; None stands for an absent optional
// input or output. `with _singa.NoGrad():` runs code unrecorded (for calls
// that take no `record` flag, such as ImportedModel.forward_all).
#include "bindings.hpp"

// The tape's node type is internal to libsinga_core; backward() reads it to
// find the leaves a loss depends on (SINGA's backward yields those).
#include "../../core/autograd/tape.hpp"

#include <singa/autograd.hpp>
#include <singa/frontend.hpp>
#include <singa/loss.hpp>

#include <onnx/onnx_pb.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

namespace py = pybind11;
using singa::Error;
using singa::Tensor;
using singa::autograd::Attrs;
using singa::autograd::Variable;

namespace {

// A Python dict of ONNX attributes: int, float, str, or lists of ints/floats.
Attrs to_attrs(const py::dict& d) {
  Attrs a;
  for (auto kv : d) {
    const std::string name = py::str(kv.first);
    py::handle v = kv.second;
    if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v)) {
      a.set(name, v.cast<int64_t>());
    } else if (py::isinstance<py::float_>(v)) {
      a.set(name, v.cast<float>());
    } else if (py::isinstance<py::str>(v)) {
      a.set(name, v.cast<std::string>());
    } else if (py::isinstance<py::sequence>(v)) {
      auto seq = v.cast<py::sequence>();
      bool all_int = true;
      for (auto e : seq) all_int = all_int && (py::isinstance<py::int_>(e) || py::isinstance<py::bool_>(e));
      if (all_int)
        a.set(name, v.cast<std::vector<int64_t>>());
      else
        a.set(name, v.cast<std::vector<float>>());
    } else {
      throw Error(SINGA_INVALID_ARGUMENT, "attribute '" + name + "' has type " +
                                              std::string(py::str(py::type::of(v).attr("__name__"))) +
                                              "; expected int, float, str or a list of ints or floats");
    }
  }
  return a;
}

std::vector<Variable> from_optional(const std::vector<std::optional<Variable>>& in) {
  std::vector<Variable> out(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) out[i] = *in[i];
  return out;
}

std::vector<std::optional<Variable>> to_optional(const std::vector<Variable>& in) {
  std::vector<std::optional<Variable>> out(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].defined()) out[i] = in[i];
  return out;
}

// Runs `f` with recording off when `record` is false (autograd.training = False).
template <class F>
auto maybe_recorded(bool record, F&& f) {
  if (record) return f();
  singa::autograd::NoGradGuard g;
  return f();
}

}  // namespace

void bind_autograd(py::module_& m) {
  py::class_<Variable>(m, "Variable", R"(A tensor on the autograd tape: its data (a CTensor), its
accumulated gradient, whether it takes one, and the op that produced it.)")
      .def(py::init([](const Tensor& data, bool requires_grad, const std::string& name) {
             if (!data.defined()) throw Error(SINGA_INVALID_ARGUMENT, "Variable: the data tensor is empty (undefined)");
             return Variable(data, requires_grad, name);
           }),
           py::arg("data"), py::arg("requires_grad") = false, py::arg("name") = "")
      .def_property(
          "data", [](const Variable& v) { return v.data(); },
          [](Variable& v, const Tensor& t) {
            if (!t.defined()) throw Error(SINGA_INVALID_ARGUMENT, "Variable.data: cannot set an undefined tensor");
            v.set_data(t);
          },
          "The value (replacing it leaves the tape unchanged).")
      .def_property(
          "grad",
          [](const Variable& v) -> std::optional<Tensor> {
            if (!v.grad().defined()) return std::nullopt;
            return v.grad();
          },
          [](Variable& v, const std::optional<Tensor>& g) { v.set_grad(g ? *g : Tensor()); },
          "The accumulated gradient, or None before backward reaches it.")
      .def_property("requires_grad", &Variable::requires_grad, &Variable::set_requires_grad)
      .def_property(
          "name", [](const Variable& v) { return v.name(); }, [](Variable& v, std::string n) { v.set_name(std::move(n)); })
      .def_property_readonly("shape", [](const Variable& v) { return v.shape(); })
      .def_property_readonly("dtype", &Variable::dtype, "ONNX element type code.")
      .def_property_readonly("is_leaf", [](const Variable& v) { return !v.creator(); })
      .def_property_readonly(
          "creator_op",
          [](const Variable& v) -> std::optional<std::string> {
            if (!v.creator()) return std::nullopt;
            return v.creator()->proto.op_type();
          },
          "The op type that produced this Variable (None for a leaf).")
      .def_property_readonly(
          "id", [](const Variable& v) { return reinterpret_cast<uintptr_t>(v.id()); },
          "Identity: equal for two handles to the same Variable.")
      .def(
          "set_data",
          [](Variable& v, const Tensor& t) {
            if (!t.defined()) throw Error(SINGA_INVALID_ARGUMENT, "Variable.set_data: cannot set an undefined tensor");
            v.set_data(t);
          },
          py::arg("data"), "Replaces the value; the tape is unaffected.")
      .def("detach", &Variable::detach, "The same value as a new leaf without history.")
      .def("zero_grad", &Variable::zero_grad)
      .def("__repr__", [](const Variable& v) {
        return "<_singa.Variable " + v.name() + " " + singa::dtype_name(v.dtype()) + " " +
               singa::shape_to_string(v.shape()) + (v.requires_grad() ? " requires_grad" : "") + ">";
      });

  m.def(
      "apply",
      [](const std::string& op, const std::vector<std::optional<Variable>>& inputs, const py::dict& attrs,
         size_t num_outputs, const std::string& domain, int64_t opset, bool record) {
        Attrs a = to_attrs(attrs);
        std::vector<Variable> in = from_optional(inputs);
        py::gil_scoped_release nogil;
        return to_optional(maybe_recorded(
            record, [&] { return singa::autograd::apply(op, in, a, num_outputs, domain, opset); }));
      },
      py::arg("op_type"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("num_outputs") = 1,
      py::arg("domain") = "", py::arg("opset") = 0, py::arg("record") = true,
      R"(Runs ONNX op `op_type` eagerly on Variables (None = absent optional input) and, when
`record`, records it on the tape. `attrs` maps attribute names to int, float, str or lists.
Returns `num_outputs` Variables (None where the kernel produced none).)");

  m.def(
      "backward",
      [](const Variable& loss, const std::optional<Tensor>& seed) {
        if (!loss.defined()) throw Error(SINGA_INVALID_ARGUMENT, "backward: the loss is undefined");
        std::vector<Variable> leaves = singa::autograd::grad_leaves(loss);
        py::gil_scoped_release nogil;
        // Fresh gradients per call, as SINGA's backward gives them.
        for (Variable& v : leaves) v.zero_grad();
        singa::autograd::backward(loss, seed ? *seed : Tensor());
        return leaves;
      },
      py::arg("loss"), py::arg("seed") = py::none(),
      R"(Computes the gradients of `loss` (one element, unless `seed` gives its gradient) into every
leaf it depends on that requires one, replacing earlier gradients. Returns those leaves.)");

  // A context manager: ops on this thread inside it are not recorded. The
  // guard is thread-local, so __enter__ and __exit__ must run on one thread
  // (as a `with` block does).
  struct NoGrad {
    std::unique_ptr<singa::autograd::NoGradGuard> guard;
  };
  py::class_<NoGrad>(m, "NoGrad", "with _singa.NoGrad(): ops run without being recorded.")
      .def(py::init<>())
      .def("__enter__", [](NoGrad& g) { g.guard = std::make_unique<singa::autograd::NoGradGuard>(); })
      .def("__exit__", [](NoGrad& g, py::args) {
        g.guard.reset();
        return false;
      });

  m.def("recording", &singa::autograd::recording, "Whether ops on this thread are recorded.");
  m.def("has_gradient", &singa::autograd::has_gradient, py::arg("op_type"), py::arg("domain") = "");

  // Losses: each is a recorded op, or a few.
  auto loss2 = [&m](const char* name, Variable (*f)(const Variable&, const Variable&), const char* doc) {
    m.def(
        name,
        [f](const Variable& a, const Variable& b, bool record) {
          py::gil_scoped_release nogil;
          return maybe_recorded(record, [&] { return f(a, b); });
        },
        py::arg("x"), py::arg("target"), py::arg("record") = true, doc);
  };
  loss2("softmax_cross_entropy", &singa::loss::softmax_cross_entropy,
        "Mean softmax cross-entropy of logits [N, C] against int class indices [N].");
  loss2("softmax_cross_entropy_onehot", &singa::loss::softmax_cross_entropy_onehot,
        "Mean softmax cross-entropy of logits [N, C] against one-hot or soft targets [N, C].");
  loss2("mse_loss", &singa::loss::mse, "Mean squared error.");
  m.def(
      "binary_cross_entropy",
      [](const Variable& p, const Variable& t, float eps, bool record) {
        py::gil_scoped_release nogil;
        return maybe_recorded(record, [&] { return singa::loss::binary_cross_entropy(p, t, eps); });
      },
      py::arg("x"), py::arg("target"), py::arg("epsilon") = 1e-7f, py::arg("record") = true,
      "Mean binary cross-entropy of probabilities against targets in [0, 1].");

  m.def(
      "to_onnx",
      [](const std::vector<Variable>& inputs, const std::vector<Variable>& outputs, int64_t opset,
         const std::vector<std::string>& input_names, const std::vector<std::string>& output_names,
         const std::vector<std::pair<std::string, Variable>>& initializer_names, bool dynamic_batch,
         const std::string& graph_name) {
        singa::onnx::ExportOptions o;
        o.opset = opset;
        o.input_names = input_names;
        o.output_names = output_names;
        o.initializer_names = initializer_names;
        o.dynamic_batch = dynamic_batch;
        o.graph_name = graph_name;
        std::string bytes;
        {
          py::gil_scoped_release nogil;
          if (!singa::onnx::to_onnx(inputs, outputs, o).SerializeToString(&bytes))
            throw Error(SINGA_INTERNAL, "to_onnx: the model could not be serialized");
        }
        return py::bytes(bytes);
      },
      py::arg("inputs"), py::arg("outputs"), py::arg("opset") = 17, py::arg("input_names") = std::vector<std::string>{},
      py::arg("output_names") = std::vector<std::string>{},
      py::arg("initializer_names") = std::vector<std::pair<std::string, Variable>>{}, py::arg("dynamic_batch") = true,
      py::arg("graph_name") = "singa",
      R"(Writes the ops recorded between `inputs` and `outputs` as a serialized ONNX ModelProto;
leaves that are not inputs become initializers (named by `initializer_names`, else by the
Variables' names).)");
}
