#include "env_options.hpp"

#include <singa/error.hpp>

#include <cstdlib>

namespace singa {

namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

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
  const char* env = std::getenv("SINGA_OPTIONS");
  if (!env || !*env) return options;
  std::map<std::string, std::string> out = options;
  for (auto& kv : parse_option_list(env, "SINGA_OPTIONS")) out.insert(kv);  // the program's own options win
  return out;
}

}  // namespace singa
