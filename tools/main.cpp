// The `singa` program: picks the subcommand and turns every failure into one
// `singa: error: ...` line and a meaningful exit code.
#include "cli.hpp"

#include <singa/error.hpp>

#include <google/protobuf/stubs/logging.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include <malloc.h>

namespace {

using namespace singa::cli;

const CommandRegistrar kPlugins("plugins", cmd_plugins, "list plugins, their devices and kernels, and those that failed to load");
const CommandRegistrar kInfo("info", cmd_info, "describe a model: opsets, inputs/outputs, op histogram, ops without a kernel");
const CommandRegistrar kRun("run", cmd_run, "run a model on given or random inputs and print its outputs");
const CommandRegistrar kConformance("conformance", cmd_conformance, "run ONNX backend test cases (model.onnx + test_data_set_*)");

std::string command_list() {
  std::string names;
  for (const auto& kv : subcommands()) names += (names.empty() ? "" : ", ") + kv.first;
  return names;
}

void print_program_help() {
  std::cout << "Usage: singa [global options] COMMAND [options] [arguments]\n\n"
               "A plugin-based ONNX runtime.\n\nCommands:\n";
  for (const auto& [name, sub] : subcommands()) {
    std::string pad(14 - std::min<size_t>(13, name.size()), ' ');
    std::cout << "  " << name << pad << sub.summary << "\n";
  }
  std::cout << "\nRun 'singa COMMAND --help' for a command's options.\n\n"
            << global_options_description() << "\n"
            << "Environment:\n"
               "  SINGA_DEVICE       default device (a flag or the config file wins, with a note)\n"
               "  SINGA_PLUGIN_PATH  ':'-separated plugin folders (--plugin-dir or config plugin-dir\n"
               "                     replace it, with a note)\n"
               "  SINGA_OPTIONS      named options key=value,... for debugging (--option and the config\n"
               "                     file win); --verbose lists every SINGA_* variable that is set\n\n"
               "Config file (--config FILE, INI syntax):\n"
               "  device = cuda:0\n  fallback = true\n  threads = 4\n  plugin-dir = /opt/singa/plugins\n"
               "  plugin = /opt/vendor/singa_ops_vendor.so\n"
               "  [options]\n  cpu.dnnl = 0\n\n"
               "Exit codes:\n"
               "  0  success\n"
               "  1  failure while running: unreadable or invalid model, kernel error, unknown or\n"
               "     unavailable device, a conformance case failed (or, with --expect, a regression)\n"
               "  2  bad usage: unknown option or command, missing or malformed argument, bad config file\n";
}

// Global options that take a value: they may come before the command name.
bool global_takes_value(const std::string& a) {
  static const char* with_value[] = {"--config",  "--device",           "--threads", "--plugin-dir",
                                     "--plugin", "--max-tensor-bytes", "--option"};
  for (const char* w : with_value)
    if (a == w) return true;
  return false;
}

int dispatch(int argc, char** argv) {
  std::vector<std::string> before, after;
  std::string command;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!command.empty()) {
      after.push_back(a);
    } else if (!a.empty() && a[0] == '-') {
      before.push_back(a);
      if (global_takes_value(a) && i + 1 < argc) before.push_back(argv[++i]);
    } else {
      command = a;
    }
  }
  if (command.empty()) {
    for (const auto& a : before)
      if (a == "--help" || a == "-h") {
        print_program_help();
        return kExitOk;
      }
    for (const auto& a : before)
      if (a == "--version") {
        std::cout << "singa 0.1.0 (plugin ABI " << SINGA_ABI_MAJOR << "." << SINGA_ABI_MINOR << ")\n";
        return kExitOk;
      }
    throw UsageError("no command given (commands: " + command_list() + "; see 'singa --help')");
  }
  auto it = subcommands().find(command);
  if (it == subcommands().end())
    throw UsageError("unknown command '" + command + "' (commands: " + command_list() + "; see 'singa --help')");
  before.insert(before.end(), after.begin(), after.end());
  return it->second.run(before);
}

// Protobuf's own log lines would add a second, less clear message to the
// core's error about a malformed model.
void quiet_protobuf(google::protobuf::LogLevel, const char*, int, const std::string&) {}

}  // namespace

namespace {

// glibc raises its mmap threshold to the size of each mmapped block freed
// (up to 32 MiB), after which blocks below it come from the heap and stay
// there when freed. Prepare frees many such blocks (weights reordered,
// folded constants), so the peak RSS hung on the order of allocations, even
// on the size of the environment: ResNet-18 at 1 thread peaked at 181 or 197
// MiB, Tiny-YOLOv2 at 267 or 285, from one shell or another. A fixed 4 MiB
// threshold keeps the large blocks mapped and returned (no slower: the
// per-run buffers of that size are planned once). The trim threshold goes
// with it, as glibc's own rule sets it (twice the mmap threshold): left at
// 128 KiB, the heap's top was given back and faulted in again run after run.
// A threshold the user set (GLIBC_TUNABLES, MALLOC_MMAP_THRESHOLD_) is left
// alone.
void fix_mmap_threshold() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || (tunables && std::strstr(tunables, "mmap_threshold"))) return;
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  fix_mmap_threshold();
  google::protobuf::SetLogHandler(quiet_protobuf);
  std::ios::sync_with_stdio(true);
  try {
    return dispatch(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "singa: error: " << one_line(e.what()) << "\n";
    return kExitUsage;
  } catch (const singa::Error& e) {
    std::cerr << "singa: error: " << one_line(e.what()) << "\n";
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    std::cerr << "singa: error: out of memory\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "singa: error: " << one_line(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    std::cerr << "singa: error: unknown exception\n";
    return kExitFailure;
  }
}
