// module.cpp - the _singa extension: the C++ runtime as the singa package sees it.
#include "bindings.hpp"

PYBIND11_MODULE(_singa, m) {
  m.doc() = "Bindings of libsinga_core; use the singa package, not this module.";
  // Order matters: later bindings use types the earlier ones register.
  bind_tensor(m);
  bind_device(m);
  bind_onnx(m);
  bind_autograd(m);
  bind_layer(m);
  bind_optim(m);
  bind_dist(m);
}
