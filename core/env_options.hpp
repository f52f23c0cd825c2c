// env_options.hpp - SINGA_OPTIONS: named options set from the environment,
// for debugging a program one cannot change (a test binary, a script): the
// variable holds "key=value" pairs separated by commas, and options the
// program sets itself win over it. Internal to libsinga_core.
#ifndef SINGA_CORE_ENV_OPTIONS_HPP
#define SINGA_CORE_ENV_OPTIONS_HPP

#include <map>
#include <string>

namespace singa {

// Parses "k=v,k2=v2" (spaces around entries ignored, empty entries skipped).
// Throws Error(SINGA_INVALID_ARGUMENT) naming `source` and a malformed entry.
std::map<std::string, std::string> parse_option_list(const std::string& text, const std::string& source);

// `options` plus the pairs of SINGA_OPTIONS whose keys it does not set. Read
// on every call, so a test may change the variable between prepares.
std::map<std::string, std::string> with_env_options(const std::map<std::string, std::string>& options);

}  // namespace singa
#endif
