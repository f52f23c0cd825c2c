#include "env_options.hpp"

#include <singa/error.hpp>
#include <singa/runtime.hpp>

#include <cerrno>
#include <cstdlib>

namespace singa {

namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The device-level keys of singa's own plugins and core, read once per
// process (at plugin load or first use). They are checked when set because a
// plugin can only report a bad value by failing to load, far from the typo.
struct RuntimeKey {
  const char* key;
  long long lo, hi;  // 0..1: a boolean
};

const RuntimeKey kRuntimeKeys[] = {
    {"cpu.avx512", 0, 1},          {"cpu.spin_us", 0, 1000000},    {"cpu.cache_mb", 0, 1 << 20},
    {"opencl.cache", 0, 1},        {"opencl.gpu_kernels", 0, 1},   {"cuda.kernels", 0, 1},
    {"cuda.allow_tf32", 0, 1},     {"cuda.cache", 0, 1},           {"core.op_profile", 0, 1},
    {"core.fuse_layers", 0, 1},
};

}  // namespace

std::map<std::string, std::string> parse_option_list(const std::string& text, const std::string& source) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = trimmed(text.substr(at, comma - at));
    at = comma + 1;
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    const std::string key = eq == std::string::npos ? std::string() : trimmed(entry.substr(0, eq));
    if (key.empty())
      throw Error(SINGA_INVALID_ARGUMENT, source + ": '" + entry + "' is not key=value (e.g. cpu.dnnl=0)");
    out[key] = trimmed(entry.substr(eq + 1));
  }
  return out;
}

std::map<std::string, std::string> with_env_options(const std::map<std::string, std::string>& options) {
  std::map<std::string, std::string> out = options;
  for (auto& kv : Runtime::instance().options()) out.insert(kv);  // the prepare's own options win
  const char* env = std::getenv("SINGA_OPTIONS");
  if (!env || !*env) return out;
  for (auto& kv : parse_option_list(env, "SINGA_OPTIONS")) out.insert(kv);  // the program's options win
  return out;
}

void check_runtime_option(const std::string& key, const std::string& value, const std::string& source) {
  for (const RuntimeKey& k : kRuntimeKeys) {
    if (key != k.key) continue;
    errno = 0;
    char* end = nullptr;
    const long long n = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
    const bool boolean = k.lo == 0 && k.hi == 1;
    const bool ok = boolean ? (value == "0" || value == "1") : (!value.empty() && *end == '\0' && errno == 0 && n >= k.lo && n <= k.hi);
    if (ok) return;
    throw Error(SINGA_INVALID_ARGUMENT, (source.empty() ? std::string() : source + ": ") + "option " + key + "=" + value +
                                            (boolean ? ": expected 0 or 1"
                                                     : ": expected a whole number from " + std::to_string(k.lo) + " to " +
                                                           std::to_string(k.hi)));
  }
}

bool runtime_flag(const std::string& key, bool def) {
  std::string v;
  if (const std::string* set = Runtime::instance().option(key)) {
    v = *set;
  } else if (const char* env = std::getenv("SINGA_OPTIONS")) {
    try {
      const auto env_options = parse_option_list(env, "SINGA_OPTIONS");
      auto it = env_options.find(key);
      if (it == env_options.end()) return def;
      v = it->second;
    } catch (const Error&) {
      return def;  // reported by the load and every prepare
    }
  } else {
    return def;
  }
  return v == "1" ? true : v == "0" ? false : def;
}

}  // namespace singa
