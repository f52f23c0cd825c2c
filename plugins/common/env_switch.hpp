// env_switch.hpp - the comparison switches of the CPU kernels: an
// environment variable set to 0 (e.g. SINGA_NCHW_FAST=0) turns a fast path
// off so that it can be timed and checked against the path it replaced.
#ifndef SINGA_PLUGINS_COMMON_ENV_SWITCH_HPP
#define SINGA_PLUGINS_COMMON_ENV_SWITCH_HPP

#include <cstdlib>

namespace singa {
namespace ops {

// True when `name` is set to a value starting with '0'. Read it once (into a
// static) where it guards a hot path: getenv walks the whole environment.
inline bool env_switched_off(const char* name) {
  const char* e = std::getenv(name);
  return e && *e == '0';
}

}  // namespace ops
}  // namespace singa
#endif
