// runtime_option.hpp - device-level named options (docs/options.md, "cpu.",
// "opencl.", "cuda." keys read once per process) as a plugin reads them:
// through host->runtime_option, at init or first use. Code compiled without
// a host (unit tests linking a kernel file directly) and hosts older than
// ABI 1.4 see every option unset, so the defaults apply.
#ifndef SINGA_PLUGINS_COMMON_RUNTIME_OPTION_HPP
#define SINGA_PLUGINS_COMMON_RUNTIME_OPTION_HPP

#include <singa/kernel.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace singa {
namespace ops {

// The option's value, or null when unset or no host can say.
inline const char* runtime_option(const char* key) {
  const singa_host_api* h = sdk::host_ptr();
  if (!SINGA_HAS_FIELD(h, singa_host_api, runtime_option) || !h->runtime_option) return nullptr;
  return h->runtime_option(key);
}

// A whole number in [lo, hi], `def` when unset. A malformed value throws
// sdk::Error naming the key (at init this fails the plugin's load); the
// host checks singa's own keys when they are set, so this is for hosts that
// do not.
inline long long runtime_option_int(const char* key, long long def, long long lo, long long hi) {
  const char* v = runtime_option(key);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  if (!*v || *end || errno || n < lo || n > hi)
    throw sdk::Error(SINGA_INVALID_ARGUMENT, std::string("option ") + key + "=" + v + ": expected a whole number from " +
                                                 std::to_string(lo) + " to " + std::to_string(hi));
  return n;
}

// A 0/1 switch, `def` when unset; a malformed value throws as above.
inline bool runtime_option_bool(const char* key, bool def) {
  const char* v = runtime_option(key);
  if (!v) return def;
  if (v[0] == '0' && v[1] == '\0') return false;
  if (v[0] == '1' && v[1] == '\0') return true;
  throw sdk::Error(SINGA_INVALID_ARGUMENT, std::string("option ") + key + "=" + v + ": expected 0 or 1");
}

// For switches read at first use inside a kernel, where failing is worse
// than the default: a malformed value reads as `def`.
inline bool runtime_flag(const char* key, bool def) {
  const char* v = runtime_option(key);
  if (!v) return def;
  return (v[0] == '0' || v[0] == '1') && v[1] == '\0' ? v[0] == '1' : def;
}

}  // namespace ops
}  // namespace singa
#endif
