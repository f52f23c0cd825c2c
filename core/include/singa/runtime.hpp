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

  // Streams and events (singa_event_ext, ABI 1.4). True when the device
  // offers stream_create/stream_destroy and a complete events extension: an
  // Executor run then queues its work on a stream of its own and orders
  // hand-offs with events (docs/abi.md, "Streams and events").
  bool has_events() const { return has_events_; }
  void* stream_create(int32_t id);
  void stream_destroy(int32_t id, void* stream);
  void* event_create(int32_t id);
  void event_destroy(int32_t id, void* event);
  void event_record(int32_t id, void* event, void* stream);
  void stream_wait_event(int32_t id, void* stream, void* event);
  void event_synchronize(int32_t id, void* event);

 private:
  void read_extensions();
  singa_device_def def_;
  std::string name_, plugin_path_;
  singa_event_ext events_{};
  bool has_events_ = false;
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
  // Runtime-wide named options (docs/options.md), set as with
  // Runtime::set_option before any plugin loads; SINGA_OPTIONS then adds the
  // keys neither these nor earlier set_option calls set.
  std::map<std::string, std::string> options;
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
  // Unloads everything and forgets the runtime options (tests).
  void reset();

  // Runtime-wide named options ("cpu.spin_us", docs/options.md). Device-level
  // keys are read by the plugins when they load (host->runtime_option), so
  // they must be set before load(); after it they take effect only with the
  // next reset() and load(). Every later prepare also sees these options
  // where it does not set a key itself. A malformed value of a key singa
  // documents throws Error(SINGA_INVALID_ARGUMENT) naming the key, and
  // nothing is set.
  void set_option(const std::string& key, const std::string& value);
  // The value of a runtime option, or nullptr when unset. The pointer stays
  // valid until that key is set again or reset().
  const std::string* option(const std::string& key) const;
  std::map<std::string, std::string> options() const;

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
  // Separate from mu_: plugins read options during load, which holds mu_.
  std::map<std::string, std::string> options_;
  mutable std::mutex options_mu_;
  friend struct HostRegistration;
};

// "" and "ai.onnx" are the same domain.
std::string normalize_domain(const std::string& domain);

// The ops the core runs itself at every opset, without a plugin kernel
// (control flow, sequences and optionals: core/control/), as (domain, op).
const std::set<std::pair<std::string, std::string>>& core_op_types();

}  // namespace singa
#endif
