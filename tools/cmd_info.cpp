// `singa info MODEL`: what a model contains and which of its ops the chosen
// device has no kernel for. Reads the model without preparing it, so a model
// that cannot run can still be described.
#include "cli.hpp"
#include "json.hpp"

#include <singa/onnx.hpp>
#include <singa/op_versions.hpp>
#include <singa/optimize.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

namespace singa {
namespace cli {

namespace {

std::string type_to_string(const ::onnx::TypeProto& t) {
  switch (t.value_case()) {
    case ::onnx::TypeProto::kTensorType: {
      std::string s = dtype_name(t.tensor_type().elem_type());
      if (!t.tensor_type().has_shape()) return s + "[unknown rank]";
      s += "[";
      const auto& shape = t.tensor_type().shape();
      for (int i = 0; i < shape.dim_size(); ++i) {
        const auto& d = shape.dim(i);
        if (i) s += ",";
        s += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
      }
      return s + "]";
    }
    case ::onnx::TypeProto::kSequenceType: return "sequence<" + type_to_string(t.sequence_type().elem_type()) + ">";
    case ::onnx::TypeProto::kOptionalType: return "optional<" + type_to_string(t.optional_type().elem_type()) + ">";
    case ::onnx::TypeProto::kMapType:
      return std::string("map<") + dtype_name(t.map_type().key_type()) + "," + type_to_string(t.map_type().value_type()) + ">";
    case ::onnx::TypeProto::kSparseTensorType: return std::string("sparse ") + dtype_name(t.sparse_tensor_type().elem_type());
    default: return "unknown type";
  }
}

struct OpKey {
  std::string domain, op;
  bool operator<(const OpKey& o) const { return std::tie(domain, op) < std::tie(o.domain, o.op); }
};

// Counts nodes, subgraphs (If/Loop/Scan bodies) included.
void count_ops(const ::onnx::GraphProto& g, std::map<OpKey, int64_t>& hist, int64_t& nodes, int64_t& nested) {
  for (const auto& n : g.node()) {
    ++hist[{normalize_domain(n.domain()), n.op_type()}];
    ++nodes;
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        ++nested;
        count_ops(a.g(), hist, nodes, nested);
      }
      for (const auto& sg : a.graphs()) {
        ++nested;
        count_ops(sg, hist, nodes, nested);
      }
    }
  }
}

std::string domain_label(const std::string& d) { return d.empty() ? "ai.onnx" : d; }
std::string op_label(const OpKey& k) { return k.domain.empty() ? k.op : k.domain + "." + k.op; }

struct MissingKernel {
  OpKey key;
  int64_t opset = -1;                 // -1: the model imports no opset for the domain
  std::vector<std::string> existing;  // "cpu 1-12"
  bool cpu_fallback = false;
};

std::vector<MissingKernel> find_missing(const std::map<OpKey, int64_t>& hist, const std::map<std::string, int64_t>& opsets,
                                        const std::string& device) {
  std::vector<MissingKernel> out;
  for (const auto& [key, count] : hist) {
    MissingKernel m;
    m.key = key;
    auto it = opsets.find(key.domain);
    if (it != opsets.end()) m.opset = it->second;
    bool found = false;
    for (const KernelEntry* k : Runtime::instance().kernels(key.domain, key.op)) {
      bool covers = m.opset >= k->def.since_version && m.opset <= k->last_opset;
      if (covers && k->device == device) found = true;
      if (covers && k->device == "cpu") m.cpu_fallback = true;
      m.existing.push_back(k->device + " " + singa::onnx::opset_range_text(k->def.since_version, k->last_opset));
    }
    if (!found) out.push_back(m);
  }
  return out;
}

std::string describe_missing(const MissingKernel& m, const std::string& device) {
  std::string s = m.opset < 0 ? "domain " + domain_label(m.key.domain) + " not imported by the model"
                              : "opset " + std::to_string(m.opset);
  if (m.existing.empty()) return s + "; no kernel on any device";
  s += "; kernels:";
  for (const auto& e : m.existing) s += " " + e + (&e == &m.existing.back() ? "" : ",");
  if (device != "cpu") s += m.cpu_fallback ? " (falls back to cpu)" : " (no cpu fallback either)";
  return s;
}

// One line per node of the top-level graph: "Op name(inputs) -> outputs [activation=...]"
// (the fused activations, a stage's under its prefix, a fused MaxPool's window
// or GlobalAveragePool, and the layouts of values not plain, as
// optimized_model lists them in the metadata).
void print_nodes(const ::onnx::ModelProto& model) {
  const ::onnx::GraphProto& g = model.graph();
  std::map<std::string, std::string> layouts;
  for (const auto& m : model.metadata_props())
    if (m.key().rfind("singa.layout:", 0) == 0) layouts[m.key().substr(13)] = m.value();
  auto show_layout = [&](const char* side, const std::string& v) {
    auto it = layouts.find(v);
    if (it != layouts.end()) std::cout << "  [" << side << " " << v << ": " << it->second << "]";
  };
  std::cout << "nodes after the passes:\n";
  for (const auto& n : g.node()) {
    std::cout << "  " << n.op_type() << " '" << n.name() << "' (";
    for (int i = 0; i < n.input_size(); ++i) std::cout << (i ? ", " : "") << n.input(i);
    std::cout << ") -> ";
    for (int i = 0; i < n.output_size(); ++i) std::cout << (i ? ", " : "") << n.output(i);
    for (const auto& a : n.attribute()) {
      const std::string& k = a.name();
      if (a.type() == ::onnx::AttributeProto::STRING && k.size() >= 10 && k.compare(k.size() - 10, 10, "activation") == 0)
        std::cout << "  [" << k << "=" << a.s() << "]";
      if (k == "pool_kernel_shape") {
        std::cout << "  [maxpool";
        for (int64_t v : a.ints()) std::cout << " " << v;
        std::cout << "]";
      }
      if (k == "global_average_pool" && a.i() != 0) std::cout << "  [global average pool]";
    }
    for (const auto& v : n.input()) show_layout("in", v);
    for (const auto& v : n.output()) show_layout("out", v);
    std::cout << "\n";
  }
}

// Where each node of the prepared model runs (op types, dtypes and fallback
// decide it), or why the model could not be prepared.
// The model prepared for --placement and --nodes (once for both); null with
// `error` set when it cannot be.
std::shared_ptr<onnx::Rep> prepared(const std::string& path, const GlobalOptions& g, std::string& error) {
  try {
    onnx::PrepareOptions popts;
    apply_prepare_options(g, popts);
    return onnx::prepare(path, popts);
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
}

std::string outputs_text(const onnx::NodeInfo& n) {
  std::string s;
  for (const auto& v : n.outputs) {
    if (v.name.empty()) continue;
    std::string shape = "?";
    if (v.rank_known) {
      shape = "[";
      for (size_t i = 0; i < v.dims.size(); ++i)
        shape += (i ? "," : "") + (v.dims[i] >= 0 ? std::to_string(v.dims[i]) : v.dim_names[i].empty() ? "?" : v.dim_names[i]);
      shape += "]";
    }
    s += (s.empty() ? "" : ", ") + v.name + " " + (v.dtype ? dtype_name(v.dtype) : "?") + shape;
  }
  return s;
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  CommandSpec spec{"info", "MODEL [--device D] [--optimized] [--nodes] [--json]",
                   "Describes an ONNX model: IR version, opsets, producer, inputs and outputs with their shapes\n"
                   "(symbolic dimensions by name), the op histogram (subgraphs included) and the ops that have no\n"
                   "kernel on the chosen device for the model's opset. With a device other than the cpu (or\n"
                   "--placement) it also prepares the model and lists where each node runs."};
  po::options_description own("Options");
  own.add_options()("json", "print one JSON object")(
      "optimized", "describe the graph as prepare() runs it, after its passes (folding, fusions), and list its nodes")(
      "placement", "list the device each node runs on (default when --device is not the cpu)")(
      "nodes", "prepare the model and list its nodes in the order --last-layers counts, each with the --last-layers\n"
               "value that makes it the last node run, its op and its outputs' shapes");
  Parsed p = parse_command(spec, args, own, "model");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  if (!p.vm.count("model")) throw UsageError("info: a MODEL file is required");
  auto models = p.vm["model"].as<std::vector<std::string>>();
  if (models.size() != 1) throw UsageError("info: give exactly one MODEL file");
  const std::string path = models[0];
  const bool json = p.vm.count("json") > 0;

  load_runtime(p.global);
  const std::string device = split_device(p.global.device).first;
  if (!Runtime::instance().device(device)) require_device(p.global.device);  // throws naming the known devices

  ::onnx::ModelProto model = singa::onnx::load_model(path);
  std::map<std::string, int64_t> opsets;
  for (const auto& o : model.opset_import()) opsets[normalize_domain(o.domain())] = o.version();
  std::map<OpKey, int64_t> hist;
  int64_t nodes = 0, subgraphs = 0;
  count_ops(model.graph(), hist, nodes, subgraphs);
  // Kernels are looked up for the model's own ops: the passes' fused nodes
  // (Gelu, LayerNormalization) carry the opset of their kernel, not the model's.
  auto missing = find_missing(hist, opsets, device);
  const bool optimized = p.vm.count("optimized") > 0;
  if (optimized) {
    singa::onnx::PrepareOptions popts;
    apply_prepare_options(p.global, popts);
    model = singa::onnx::optimized_model(model, popts, path, std::filesystem::path(path).parent_path().string());
    hist.clear();
    nodes = subgraphs = 0;
    count_ops(model.graph(), hist, nodes, subgraphs);
  }
  const auto& g = model.graph();
  std::set<std::string> init_names;
  int64_t param_elems = 0;
  for (const auto& t : g.initializer()) {
    init_names.insert(t.name());
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    param_elems += n;
  }
  std::vector<const ::onnx::ValueInfoProto*> inputs, outputs;
  for (const auto& v : g.input())
    if (!init_names.count(v.name())) inputs.push_back(&v);
  for (const auto& v : g.output()) outputs.push_back(&v);
  const bool show_placement = p.vm.count("placement") > 0 || device != "cpu";
  const bool show_nodes = p.vm.count("nodes") > 0;
  std::string placement_error;
  const auto rep = show_placement || show_nodes ? prepared(path, p.global, placement_error) : nullptr;
  const std::string& nodes_error = placement_error;
  const auto placement = rep && show_placement ? rep->placement() : std::vector<onnx::NodePlacement>{};
  const auto order = rep && show_nodes ? rep->nodes() : std::vector<onnx::NodeInfo>{};
  std::vector<std::pair<OpKey, int64_t>> ranked(hist.begin(), hist.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });

  if (json) {
    JsonObject o;
    o.str("model", path).integer("ir_version", model.ir_version());
    JsonObject ops_json, opsets_json;
    for (const auto& [d, v] : opsets) opsets_json.integer(domain_label(d), v);
    o.raw("opsets", opsets_json.dump());
    o.str("producer_name", model.producer_name()).str("producer_version", model.producer_version());
    o.str("graph_name", g.name());
    auto values = [](const std::vector<const ::onnx::ValueInfoProto*>& vs) {
      std::vector<std::string> items;
      for (const auto* v : vs) {
        JsonObject e;
        e.str("name", v->name()).str("type", type_to_string(v->type()));
        if (v->type().has_tensor_type()) {
          e.str("dtype", dtype_name(v->type().tensor_type().elem_type()));
          if (v->type().tensor_type().has_shape()) {
            std::vector<std::string> dims;
            for (const auto& d : v->type().tensor_type().shape().dim())
              dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value())
                                               : d.has_dim_param() ? json_quote(d.dim_param()) : "null");
            e.raw("shape", json_array(dims));
          }
        }
        items.push_back(e.dump());
      }
      return json_array(items);
    };
    o.raw("inputs", values(inputs)).raw("outputs", values(outputs));
    o.integer("initializers", g.initializer_size()).integer("parameter_elements", param_elems);
    o.integer("nodes", nodes).integer("subgraphs", subgraphs);
    for (const auto& [k, n] : ranked) ops_json.integer(op_label(k), n);
    o.raw("ops", ops_json.dump());
    o.str("device", p.global.device);
    std::vector<std::string> miss;
    for (const auto& m : missing) {
      JsonObject e;
      e.str("domain", domain_label(m.key.domain)).str("op", m.key.op);
      if (m.opset >= 0) e.integer("opset", m.opset); else e.raw("opset", "null");
      e.raw("kernels", json_string_array(m.existing)).boolean("cpu_fallback", m.cpu_fallback);
      miss.push_back(e.dump());
    }
    o.raw("missing_kernels", json_array(miss));
    if (show_placement) {
      std::vector<std::string> pl;
      for (const auto& x : placement)
        pl.push_back(JsonObject().str("node", x.node).str("op", x.op_type).str("device", x.device).str("plugin", x.plugin).dump());
      o.raw("placement", json_array(pl));
      if (!placement_error.empty()) o.str("placement_error", placement_error);
    }
    if (show_nodes) {
      std::vector<std::string> items;
      for (size_t i = 0; i < order.size(); ++i)
        items.push_back(JsonObject()
                            .integer("index", int64_t(i))
                            .integer("last_layers", int64_t(i) - int64_t(order.size()) + 1)
                            .str("node", order[i].name)
                            .str("op", order[i].op_type)
                            .str("outputs", outputs_text(order[i]))
                            .dump());
      o.raw("node_order", json_array(items));
      if (!nodes_error.empty()) o.str("nodes_error", nodes_error);
    }
    std::cout << o.dump() << "\n";
    return kExitOk;
  }

  std::cout << "model:        " << path << "\n"
            << "ir version:   " << model.ir_version() << "\n"
            << "opsets:      ";
  for (const auto& [d, v] : opsets) std::cout << " " << domain_label(d) << " " << v;
  std::cout << "\nproducer:     " << (model.producer_name().empty() ? "(none)" : model.producer_name())
            << (model.producer_version().empty() ? "" : " " + model.producer_version()) << "\n";
  if (!g.name().empty()) std::cout << "graph:        " << g.name() << "\n";
  auto print_values = [](const char* title, const std::vector<const ::onnx::ValueInfoProto*>& vs) {
    std::cout << title << " (" << vs.size() << "):\n";
    for (const auto* v : vs) std::cout << "  " << v->name() << "  " << type_to_string(v->type()) << "\n";
  };
  print_values("inputs", inputs);
  print_values("outputs", outputs);
  std::cout << "initializers: " << g.initializer_size() << " (" << param_elems << " elements)\n"
            << "nodes:        " << nodes;
  if (subgraphs) std::cout << " (" << subgraphs << " subgraphs included)";
  std::cout << "\nops:\n";
  for (const auto& [k, n] : ranked) {
    const std::string label = op_label(k);  // padded to a column; a longer name gets one space
    std::cout << "  " << label << std::string(label.size() < 28 ? 28 - label.size() : 1, ' ') << n << "\n";
  }
  std::cout << "ops without a kernel on " << device << ":";
  if (missing.empty()) std::cout << " none";
  std::cout << "\n";
  for (const auto& m : missing) std::cout << "  " << op_label(m.key) << ": " << describe_missing(m, device) << "\n";
  if (optimized) print_nodes(model);
  if (show_nodes) {
    if (!nodes_error.empty()) std::cout << "nodes: not available: " << nodes_error << "\n";
    else std::cout << "nodes in the order --last-layers counts (" << order.size() << "; K = the --last-layers that ends there):\n";
    for (size_t i = 0; i < order.size(); ++i)
      std::cout << "  " << i << "  K=" << int64_t(i) - int64_t(order.size()) + 1 << "  "
                << (order[i].name.empty() ? std::string("(unnamed)") : order[i].name) << "  " << order[i].op_type << "  -> "
                << outputs_text(order[i]) << "\n";
  }
  if (show_placement) {
    if (!placement_error.empty()) std::cout << "placement: not available: " << placement_error << "\n";
    else std::cout << "placement (" << placement.size() << " nodes):\n";
    for (const auto& x : placement)
      std::cout << "  " << (x.node.empty() ? std::string("(unnamed)") : x.node) << "  " << x.op_type << "  " << x.device
                << "  " << x.plugin << "\n";
  }
  return kExitOk;
}

}  // namespace cli
}  // namespace singa
