// runtime.hpp - plugins, devices and kernels known to this process.
#ifndef SINGA_RUNTIME_HPP
#define SINGA_RUNTIME_HPP

#include <singa/error.hpp>
#include <singa/singa_abi.h>

#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace singa {

struct LoadedPlugin;

// A device type registered by a device plugin (one per name: highest score wins).
class Device {
 public:
  Device(const singa_device_def& def, std::string plugin_path);
  const std::string& name() const { return name_; }
  const std::string& plugin_path() const { return plugin_path_; }
  int32_t dl_device_type() const { return def_.dl_device_type; }
  int32_t score() const { return def_.score; }
  bool host_addressable() const { return def_.dl_device_type == kDLCPU; }
  // Number of usable ids; 0 with `reason` set when the runtime is missing.
  int32_t count(std::string* reason = nullptr) const;

  void* alloc(int32_t id, size_t bytes, size_t alignment = 64);
  void free(int32_t id, void* p);
  void copy(int32_t id, void* dst, size_t dst_off, const void* src, size_t src_off, size_t bytes, singa_copy_kind kind,
            void* stream = nullptr);
  void memset(int32_t id, void* p, size_t off, int value, size_t bytes, void* stream = nullptr);
  void synchronize(int32_t id, void* stream = nullptr);
  bool has_parallel_for() const { return def_.parallel_for != nullptr; }
  void parallel_for(int64_t n, int64_t grain, singa_parallel_fn fn, void* user) const;
  int32_t num_threads() const;
  void set_num_threads(int32_t n);
  const singa_device_def& def() const { return def_; }

 private:
  singa_device_def def_;
  std::string name_, plugin_path_;
};

// A kernel definition as the registry keeps it (strings and constraints owned).
struct KernelEntry {
  singa_kernel_def def;  // struct_size = the core's; fields past the plugin's zeroed
  // The last opset this kernel serves: def.end_version carried on to the op's
  // next version by the table of ONNX op versions (core/onnx/op_versions.hpp).
  int32_t last_opset = 0;
  std::string domain, op_type, device;
  std::vector<std::string> constraint_names;
  std::vector<singa_type_constraint> constraints;
  std::string plugin_path, plugin_name;
};

// A plugin's graph pass (singa_graph_pass_ext, ABI 1.3) as the runtime keeps it.
struct GraphPassEntry {
  std::string name, device, plugin_path;
  int32_t priority = 0;
  void* self = nullptr;
  singa_status* (*run)(void* self, singa_graph* graph, int32_t* rewrites) = nullptr;
};

struct PluginInfo {
  std::string path;
  std::string name, version, description;
  uint32_t abi_major = 0, abi_minor = 0;
  std::vector<std::string> devices;
  size_t kernel_count = 0;
  std::vector<std::string> graph_passes;  // names of its graph passes
  bool loaded = false;
  std::string error;  // why it was skipped
};

struct LoadOptions {
  std::vector<std::string> plugin_dirs;  // searched after the defaults and SINGA_PLUGIN_PATH
  std::vector<std::string> plugins;      // extra plugin files
  bool use_default_dirs = true;          // the build folder, then the install folder
  bool use_env = true;                   // SINGA_PLUGIN_PATH (':'-separated)
};

// The process's registry of plugins, devices and kernels. Loading happens once
// (or again after reset()); lookups are thread-safe afterwards.
class Runtime {
 public:
  static Runtime& instance();
  // Loads plugins in search order: build folder, install folder,
  // SINGA_PLUGIN_PATH, then options' dirs and files. A bad plugin is recorded
  // with its reason and skipped. Returns the search folders used, in order.
  std::vector<std::string> load(const LoadOptions& options = {});
  bool loaded() const { return loaded_; }
  // Loads one plugin file now (returns its record; check .loaded).
  PluginInfo load_plugin(const std::string& path);
  // Unloads everything (tests).
  void reset();

  const std::vector<PluginInfo>& plugins() const { return plugins_; }
  std::vector<Device*> devices() const;
  Device* device(const std::string& name) const;  // nullptr when not registered
  Device* cpu() const { return device("cpu"); }

  // Candidate kernels for an op (any version/device), in registration order.
  const std::vector<KernelEntry*>& kernels(const std::string& domain, const std::string& op_type) const;
  size_t kernel_count() const;
  // The loaded plugins' graph passes, in load order.
  std::vector<GraphPassEntry> graph_passes() const;
  std::vector<std::string> search_dirs(const LoadOptions& options) const;

  ~Runtime();

 private:
  Runtime() = default;
  void load_file(const std::string& path);
  bool loaded_ = false;
  std::vector<PluginInfo> plugins_;
  std::vector<std::unique_ptr<LoadedPlugin>> libs_;
  std::map<std::string, std::unique_ptr<Device>> devices_;
  std::map<std::pair<std::string, std::string>, std::vector<KernelEntry*>> kernels_;
  std::vector<std::unique_ptr<KernelEntry>> kernel_store_;
  std::vector<GraphPassEntry> graph_passes_;
  mutable std::mutex mu_;
  friend struct HostRegistration;
};

// "" and "ai.onnx" are the same domain.
std::string normalize_domain(const std::string& domain);

// The ops the core runs itself at every opset, without a plugin kernel
// (control flow, sequences and optionals: core/control/), as (domain, op).
const std::set<std::pair<std::string, std::string>>& core_op_types();

}  // namespace singa
#endif
