// fuzz_common.hpp - what the fuzz targets and their replay driver share.
#ifndef SINGA_FUZZ_COMMON_HPP
#define SINGA_FUZZ_COMMON_HPP

#include <singa/runtime.hpp>
#include <singa/tensor.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace singa {
namespace fuzz {

// Far below libFuzzer's default 2 GB RSS limit, so that a model asking for
// more is refused by the runtime's own limit; going past it is a finding.
constexpr size_t kMaxTensorBytes = size_t(64) << 20;

// Loads the plugins once, from the build folder (and SINGA_PLUGIN_PATH); a
// run without a CPU device would test nothing, so that stops the fuzzer.
inline void init_runtime() {
  Runtime& rt = Runtime::instance();
  if (rt.loaded()) return;
  rt.load();
  if (!rt.cpu()) {
    std::cerr << "fuzz: no CPU device plugin was loaded (build the plugins, or set SINGA_PLUGIN_PATH)\n";
    std::exit(2);
  }
  rt.cpu()->set_num_threads(1);
}

inline void zero(Tensor& t) {
  if (t.nbytes()) std::memset(t.raw_data(), 0, t.nbytes());
}

}  // namespace fuzz
}  // namespace singa
#endif
