// cli.hpp - what every subcommand of the `singa` program shares: exit codes,
// the usage error, the global options (flags > config file > environment) and
// option parsing with Boost.Program_options.
#ifndef SINGA_TOOLS_CLI_HPP
#define SINGA_TOOLS_CLI_HPP

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <boost/program_options.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace singa {
namespace cli {

namespace po = boost::program_options;

enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

// Bad command line or configuration: reported with exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The options every subcommand accepts, resolved from flags, the config file
// and the environment (in that order of precedence).
struct GlobalOptions {
  std::string device = "cpu";
  bool fallback = true;
  int threads = 0;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> plugins;
  bool use_env_plugin_path = true;  // false once a flag or the config names plugin dirs
  bool verbose = false;
  std::string config_file;
  // Largest tensor a model may allocate (PrepareOptions::max_tensor_bytes);
  // 0 keeps the runtime's default.
  size_t max_tensor_bytes = 0;
  // Named options for the plugins (PrepareOptions::options, docs/options.md):
  // the config file's, then --option KEY=VALUE flags replacing same keys.
  std::map<std::string, std::string> options;
};

// A subcommand's parsed command line.
struct Parsed {
  po::variables_map vm;
  GlobalOptions global;
  bool help = false;
};

struct CommandSpec {
  std::string name;
  std::string usage;        // "MODEL [options]"
  std::string description;  // one paragraph shown by --help
};

// The global option set (shown under "Global options" in every --help).
po::options_description global_options_description();

// Parses `args` (everything after the program name except the subcommand)
// against the command's own options plus the global ones. Positional
// arguments go to `positional_name`. Fills Parsed::global; prints notes on
// stderr where the environment is overridden. Throws UsageError.
Parsed parse_command(const CommandSpec& spec, const std::vector<std::string>& args,
                     const po::options_description& own, const std::string& positional_name);

// Prints "Usage: singa NAME USAGE", the description, own options and globals.
void print_command_help(const CommandSpec& spec, const po::options_description& own);

// Loads the plugins once, as the global options say, and (when `report`)
// warns on stderr about each plugin that failed. Returns the search folders.
std::vector<std::string> load_runtime(const GlobalOptions& g, bool report = true);

// "cuda:1" -> {"cuda", 1}; throws UsageError for a malformed id.
std::pair<std::string, int> split_device(const std::string& device);

// The device named by --device, registered by a loaded plugin; throws
// singa::Error (exit 1) naming the known devices when it is not.
Device& require_device(const std::string& device);

// Why a plugin was skipped, without the path the core puts in front.
std::string plugin_failure(const PluginInfo& p);

// Copies what the global options say about preparing (device, fallback,
// threads, memory limit, named options) into `options`.
void apply_prepare_options(const GlobalOptions& g, onnx::PrepareOptions& options);

// "KEY=VALUE" -> {KEY, VALUE}; throws UsageError naming `what` when there is
// no '=' or the key is empty.
std::pair<std::string, std::string> parse_named_option(const std::string& text, const std::string& what);

// A SINGA_* variable set in the environment: "NAME=VALUE (what it does)",
// or for a retired one "NAME=VALUE is ignored: use ..." with `retired` set.
struct EnvNote {
  std::string text;
  bool retired = false;
};
// The SINGA_* variables set now, sorted by name (--verbose prints them all;
// retired ones are warned about always).
std::vector<EnvNote> describe_environment();

// Makes a message fit on one line (checker messages span several).
std::string one_line(const std::string& message);

// Subcommands register themselves (one file each, `const CommandRegistrar
// kX("name", fn, "summary");` at namespace scope), so adding one touches no
// other file. Each returns its exit code.
struct Subcommand {
  int (*run)(const std::vector<std::string>&);
  const char* summary;
};
std::map<std::string, Subcommand>& subcommands();
struct CommandRegistrar {
  CommandRegistrar(const char* name, int (*run)(const std::vector<std::string>&), const char* summary) {
    subcommands()[name] = Subcommand{run, summary};
  }
};

int cmd_plugins(const std::vector<std::string>& args);
int cmd_info(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_conformance(const std::vector<std::string>& args);

}  // namespace cli
}  // namespace singa
#endif
