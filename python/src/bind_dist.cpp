// bind_dist.cpp - data-parallel training (singa::dist) for singa.opt.DistOpt.
//
// SINGA's Python optimizers update one parameter at a time (update(param,
// grad)), and DistOpt must wrap any of them. So the C++ DistOpt here wraps a
// forwarding optimizer: the C++ side does the backward pass, the bucketed
// all-reduce (overlapping backward) and the update modes, and each parameter's
// update is handed back to the Python optimizer with the averaged gradient.
#include "bindings.hpp"

#include <singa/dist.hpp>
#include <singa/error.hpp>
#include <singa/optim.hpp>

#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>

namespace py = pybind11;
namespace D = singa::dist;
namespace O = singa::optim;
using singa::Error;
using singa::autograd::Variable;

namespace {

// An optimizer whose update of parameter i calls the Python `apply(i)` (which
// runs the wrapped Python optimizer on that parameter and its averaged
// gradient). It keeps no state of its own.
class Forwarding : public O::Optimizer {
 public:
  Forwarding(O::NamedVariables params, py::function apply) : Optimizer(std::move(params), 0), apply_(std::move(apply)) {}
  ~Forwarding() override {
    py::gil_scoped_acquire gil;
    apply_ = py::function();
  }

 protected:
  void update(singa::Tensor&, const singa::Tensor&, std::vector<singa::Tensor>& slots) override {
    // step() passes slots_[i] for parameter i.
    const size_t i = size_t(&slots - slots_.data());
    py::gil_scoped_acquire gil;
    apply_(i);
  }
  size_t num_slots() const override { return 0; }

 private:
  py::function apply_;
};

// The C++ DistOpt over a Forwarding optimizer, with the Python-facing steps.
// Each step zeroes the leaves' gradients first: SINGA's backward gives fresh
// gradients per call, while the C++ one accumulates.
class PyDistOpt {
 public:
  PyDistOpt(O::NamedVariables params, py::function apply, int64_t bucket_bytes, double timeout) {
    if (bucket_bytes <= 0) throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: the bucket size must be positive");
    opt_ = std::make_unique<Forwarding>(std::move(params), std::move(apply));
    D::DistOptions o;
    o.bucket_bytes = bucket_bytes;
    o.timeout_seconds = timeout;
    py::gil_scoped_release nogil;  // the constructor compares parameters across ranks
    dist_ = std::make_unique<D::DistOpt>(*opt_, nullptr, o);
  }

  template <class F>
  void step(const Variable& loss, F&& f) {
    if (!loss.defined() || !loss.creator())
      throw Error(SINGA_INVALID_ARGUMENT,
                  "DistOpt: the loss was not computed by recorded ops (set autograd.training = True before forward)");
    std::vector<Variable> ls = singa::autograd::grad_leaves(loss);
    py::gil_scoped_release nogil;
    for (Variable& v : ls) v.zero_grad();
    f(*dist_);
  }

  D::DistOpt& dist() { return *dist_; }

 private:
  std::unique_ptr<Forwarding> opt_;
  std::unique_ptr<D::DistOpt> dist_;
};

// Open MPI loads its components as plugins that expect libmpi's symbols to
// be global; Python loads extensions (and so libmpi) with RTLD_LOCAL. Promote
// the already-loaded libmpi to global before MPI starts.
void make_mpi_global() {
  for (const char* name : {"libmpi.so.40", "libmpi.so.12", "libmpi.so"})
    if (dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) return;
}

}  // namespace

void bind_dist(py::module_& m) {
  m.def(
      "dist_info",
      []() {
        make_mpi_global();
        auto w = [] {
          py::gil_scoped_release nogil;
          return D::world();
        }();
        py::dict d;
        d["rank"] = w->rank();
        d["world_size"] = w->size();
        d["local_rank"] = w->local_rank();
        d["backend"] = w->backend();
        d["launcher"] = D::launch_info_from_env().launcher;
        d["have_mpi"] = D::have_mpi();
        d["have_nccl"] = D::have_nccl();
        return d;
      },
      "This process's place in the job (starts MPI under a launcher): rank, world_size, local_rank, backend, "
      "launcher, have_mpi, have_nccl.");

  m.def("dist_leaves", &singa::autograd::grad_leaves, py::arg("loss"),
        "The leaf Variables requiring a gradient that `loss` depends on, in a rank-independent order.");

  m.def(
      "dist_allreduce",
      [](py::array a, const std::string& what) {
        if (!(a.flags() & py::array::c_style) || !a.writeable())
          throw Error(SINGA_INVALID_ARGUMENT, "dist_allreduce: needs a writable C-contiguous array");
        D::Elem e;
        if (a.dtype().is(py::dtype::of<float>()))
          e = D::Elem::kFloat32;
        else if (a.dtype().is(py::dtype::of<double>()))
          e = D::Elem::kFloat64;
        else if (a.dtype().is(py::dtype::of<int64_t>()))
          e = D::Elem::kInt64;
        else
          throw Error(SINGA_INVALID_ARGUMENT, "dist_allreduce: the array must be float32, float64 or int64, not " +
                                                  std::string(py::str(a.dtype())));
        void* p = a.mutable_data();
        const int64_t n = int64_t(a.size());
        py::gil_scoped_release nogil;
        D::world()->allreduce(p, n, e, what);
      },
      py::arg("array"), py::arg("what") = "all_reduce",
      "Sums a numpy array over all ranks, in place (every rank must call it with the same shape).");

  py::class_<PyDistOpt>(m, "DistOptimizer", "singa::dist::DistOpt over a Python optimizer (see singa.opt.DistOpt).")
      .def(py::init<O::NamedVariables, py::function, int64_t, double>(), py::arg("params"), py::arg("apply"),
           py::arg("bucket_bytes"), py::arg("timeout"))
      .def_property_readonly("rank", [](PyDistOpt& d) { return d.dist().rank(); })
      .def_property_readonly("world_size", [](PyDistOpt& d) { return d.dist().world_size(); })
      .def_property_readonly("local_rank", [](PyDistOpt& d) { return d.dist().local_rank(); })
      .def(
          "backward_and_update",
          [](PyDistOpt& d, const Variable& loss, double weight) {
            d.step(loss, [&](D::DistOpt& o) { o.backward_and_update(loss, weight); });
          },
          py::arg("loss"), py::arg("weight") = 1.0)
      .def(
          "backward_and_update_half",
          [](PyDistOpt& d, const Variable& loss, bool clipping, float clip_value, double weight) {
            d.step(loss, [&](D::DistOpt& o) { o.backward_and_update_half(loss, clipping, clip_value, weight); });
          },
          py::arg("loss"), py::arg("clipping") = false, py::arg("clip_value") = 100.0f, py::arg("weight") = 1.0)
      .def(
          "backward_and_partial_update",
          [](PyDistOpt& d, const Variable& loss) {
            d.step(loss, [&](D::DistOpt& o) { o.backward_and_partial_update(loss); });
          },
          py::arg("loss"))
      .def(
          "backward_and_sparse_update",
          [](PyDistOpt& d, const Variable& loss, bool top_k, float spars, bool corr, double weight) {
            d.step(loss, [&](D::DistOpt& o) { o.backward_and_sparse_update(loss, top_k, spars, corr, weight); });
          },
          py::arg("loss"), py::arg("top_k"), py::arg("spars"), py::arg("corr") = true, py::arg("weight") = 1.0)
      .def(
          "broadcast_state",
          [](PyDistOpt& d, int root) {
            py::gil_scoped_release nogil;
            d.dist().broadcast_state({}, root);
          },
          py::arg("root") = 0, "Copies rank `root`'s parameters to every rank.")
      .def(
          "average_parameters",
          [](PyDistOpt& d) {
            py::gil_scoped_release nogil;
            d.dist().average_parameters();
          },
          "Averages every parameter over the ranks.")
      .def(
          "last_step",
          [](PyDistOpt& d) {
            const D::StepStats& s = d.dist().last_step();
            py::dict r;
            r["buckets"] = s.buckets;
            r["started_during_backward"] = s.started_during_backward;
            r["bytes_sent"] = s.bytes_sent;
            r["wait_seconds"] = s.wait_seconds;
            return r;
          },
          "Counters of the last step: buckets, started_during_backward, bytes_sent, wait_seconds.");
}
