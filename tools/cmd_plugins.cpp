// `singa plugins`: what was found in the plugin search folders, what each
// plugin registered, what failed to load and why, and which devices work here.
#include "cli.hpp"
#include "json.hpp"
#include "op_coverage.hpp"

#include <iostream>

namespace singa {
namespace cli {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

struct DeviceStatus {
  const Device* device;
  int32_t count;
  std::string reason;
};

}  // namespace

int cmd_plugins(const std::vector<std::string>& args) {
  CommandSpec spec{"plugins", "[--json]",
                   "Loads the plugins (build folder, install folder, SINGA_PLUGIN_PATH, then --plugin-dir and\n"
                   "--plugin) and lists each one: path, name, version, ABI version, devices and kernel count; then\n"
                   "the plugins that failed to load with the reason, and each device with its availability.\n"
                   "With --coverage: every ONNX op of singa's table of op versions against the kernels of --device:\n"
                   "how many serve the op's newest version, which serve only older versions, and which have none."};
  po::options_description own("Options");
  own.add_options()("json", "print one JSON object")("coverage", "list ONNX ops by kernel coverage on --device");
  Parsed p = parse_command(spec, args, own, "");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  auto dirs = load_runtime(p.global, false);  // failures are part of the listing
  Runtime& rt = Runtime::instance();
  if (p.vm.count("coverage")) {
    const std::string device = p.global.device.substr(0, p.global.device.find(':'));
    const OpCoverage c = op_coverage(device);
    if (p.vm.count("json")) {
      JsonObject o;
      o.str("device", device).integer("current", int64_t(c.current)).integer("core", int64_t(c.core));
      o.raw("stale", json_string_array(c.stale)).raw("missing", json_string_array(c.missing));
      std::cout << o.dump() << "\n";
      return kExitOk;
    }
    std::cout << "ONNX ops with a " << device << " kernel for their newest version: " << c.current << "\n";
    std::cout << "ONNX ops the core runs itself (control flow, sequences, optionals): " << c.core << "\n";
    std::cout << "kernels for older versions only (" << c.stale.size() << "):\n";
    for (const auto& s : c.stale) std::cout << "  " << s << "\n";
    std::cout << "no kernel (" << c.missing.size() << "):\n";
    for (const auto& s : c.missing) std::cout << "  " << s << "\n";
    return kExitOk;
  }
  std::vector<DeviceStatus> devices;
  for (const Device* d : rt.devices()) {
    DeviceStatus s{d, 0, ""};
    s.count = d->count(&s.reason);
    devices.push_back(s);
  }

  if (p.vm.count("json")) {
    JsonObject o;
    o.raw("search_dirs", json_string_array(dirs));
    std::vector<std::string> loaded, failed, devs;
    for (const auto& pl : rt.plugins()) {
      JsonObject e;
      e.str("path", pl.path);
      if (pl.loaded) {
        e.str("name", pl.name).str("version", pl.version).str("description", pl.description);
        e.str("abi", std::to_string(pl.abi_major) + "." + std::to_string(pl.abi_minor));
        e.raw("devices", json_string_array(pl.devices)).integer("kernels", int64_t(pl.kernel_count));
        loaded.push_back(e.dump());
      } else {
        if (!pl.name.empty()) e.str("name", pl.name);
        e.str("error", plugin_failure(pl));
        failed.push_back(e.dump());
      }
    }
    for (const auto& s : devices) {
      JsonObject e;
      e.str("name", s.device->name()).str("plugin", s.device->plugin_path()).integer("score", s.device->score());
      e.integer("count", s.count).boolean("available", s.count > 0);
      if (s.count <= 0) e.str("reason", s.reason.empty() ? "no device found" : s.reason);
      devs.push_back(e.dump());
    }
    o.raw("plugins", json_array(loaded)).raw("failed", json_array(failed)).raw("devices", json_array(devs));
    o.integer("kernels", int64_t(rt.kernel_count()));
    std::cout << o.dump() << "\n";
    return kExitOk;
  }

  std::cout << "search folders:\n";
  for (const auto& d : dirs) std::cout << "  " << d << "\n";
  size_t nloaded = 0, nfailed = 0;
  for (const auto& pl : rt.plugins()) (pl.loaded ? nloaded : nfailed)++;
  std::cout << "plugins (" << nloaded << "):\n";
  for (const auto& pl : rt.plugins()) {
    if (!pl.loaded) continue;
    std::cout << "  " << pl.name << " " << pl.version << "  ABI " << pl.abi_major << "." << pl.abi_minor << "  "
              << pl.kernel_count << " kernels";
    if (!pl.devices.empty()) std::cout << "  devices: " << join(pl.devices);
    std::cout << "\n    " << pl.path << "\n";
    if (!pl.description.empty()) std::cout << "    " << pl.description << "\n";
  }
  std::cout << "failed (" << nfailed << "):\n";
  for (const auto& pl : rt.plugins())
    if (!pl.loaded) std::cout << "  " << pl.path << ": " << plugin_failure(pl) << "\n";
  std::cout << "devices (" << devices.size() << "):\n";
  for (const auto& s : devices) {
    std::cout << "  " << s.device->name() << ": ";
    if (s.count > 0)
      std::cout << s.count << " available";
    else
      std::cout << "unavailable (" << (s.reason.empty() ? "no device found" : one_line(s.reason)) << ")";
    std::cout << "  [score " << s.device->score() << ", " << s.device->plugin_path() << "]\n";
  }
  std::cout << "kernels: " << rt.kernel_count() << "\n";
  return kExitOk;
}

}  // namespace cli
}  // namespace singa
