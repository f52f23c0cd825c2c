// env_options.hpp - where named options come from besides a prepare's own
// map: the runtime-wide options (Runtime::set_option, LoadOptions::options)
// and SINGA_OPTIONS, for debugging a program one cannot change (a test
// binary, a script): the variable holds "key=value" pairs separated by
// commas, and options the program sets itself win over it. Internal to
// libsinga_core.
#ifndef SINGA_CORE_ENV_OPTIONS_HPP
#define SINGA_CORE_ENV_OPTIONS_HPP

#include <map>
#include <string>

namespace singa {

// Parses "k=v,k2=v2" (spaces around entries ignored, empty entries skipped).
// Throws Error(SINGA_INVALID_ARGUMENT) naming `source` and a malformed entry.
std::map<std::string, std::string> parse_option_list(const std::string& text, const std::string& source);

// `options` plus the runtime options and then the pairs of SINGA_OPTIONS,
// each adding only keys not set before it. SINGA_OPTIONS is read on every
// call, so a test may change the variable between prepares.
std::map<std::string, std::string> with_env_options(const std::map<std::string, std::string>& options);

// Checks the value of a device-level key singa documents (docs/options.md:
// booleans 0/1, whole numbers in range); other keys pass unchecked, as their
// plugins check them. Throws Error(SINGA_INVALID_ARGUMENT) naming `source`
// (when not empty), the key and the value.
void check_runtime_option(const std::string& key, const std::string& value, const std::string& source);

// A boolean runtime option for the core's own switches (core.op_profile,
// core.fuse_layers): the runtime options, then SINGA_OPTIONS, then `def`.
// Values were checked when they were set; one that is not 0/1 reads as `def`.
bool runtime_flag(const std::string& key, bool def);

}  // namespace singa
#endif
