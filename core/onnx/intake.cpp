#include "intake.hpp"

#include <singa/error.hpp>

#include <onnx/defs/schema.h>

#include <set>

namespace singa {
namespace onnx {

namespace {

// The newest element type code ONNX defines (UINT2 in ONNX 1.20+).
constexpr int kNewestElemType = 26;

std::string node_label(const ::onnx::NodeProto& n, int i) {
  return "node '" + (n.name().empty() ? "#" + std::to_string(i) : n.name()) + "' (" + n.op_type() + ")";
}

void check_type(const ::onnx::TypeProto& t, const std::string& what, int depth) {
  if (depth > 16) throw Error(SINGA_INVALID_ARGUMENT, what + ": type nested too deeply");
  switch (t.value_case()) {
    case ::onnx::TypeProto::kTensorType: {
      const int e = t.tensor_type().elem_type();
      if (e <= 0 || e > kNewestElemType)
        throw Error(SINGA_INVALID_ARGUMENT, what + ": element type " + std::to_string(e) + " is not an ONNX element type");
      if (t.tensor_type().has_shape())
        for (const auto& d : t.tensor_type().shape().dim())
          if (d.has_dim_value() && d.dim_value() < 0)
            throw Error(SINGA_INVALID_ARGUMENT, what + ": dimension " + std::to_string(d.dim_value()) + " (sizes are >= 0)");
      return;
    }
    case ::onnx::TypeProto::kSequenceType:
      if (!t.sequence_type().has_elem_type()) throw Error(SINGA_INVALID_ARGUMENT, what + ": a sequence type without an element type");
      return check_type(t.sequence_type().elem_type(), what, depth + 1);
    case ::onnx::TypeProto::kOptionalType:
      if (!t.optional_type().has_elem_type()) throw Error(SINGA_INVALID_ARGUMENT, what + ": an optional type without an element type");
      return check_type(t.optional_type().elem_type(), what, depth + 1);
    case ::onnx::TypeProto::kMapType:
      if (!t.map_type().has_value_type()) throw Error(SINGA_INVALID_ARGUMENT, what + ": a map type without a value type");
      return check_type(t.map_type().value_type(), what, depth + 1);
    case ::onnx::TypeProto::kSparseTensorType:
      return;
    default:
      throw Error(SINGA_INVALID_ARGUMENT, what + ": no type");
  }
}

void check_graph(const ::onnx::GraphProto& g, const std::string& where, int depth);

// The attribute's declared type matches the one value field it fills.
void check_attribute(const ::onnx::AttributeProto& a, const std::string& where, int depth) {
  using A = ::onnx::AttributeProto;
  if (a.name().empty()) throw Error(SINGA_INVALID_ARGUMENT, where + ": an attribute has no name");
  const std::string what = where + " attribute '" + a.name() + "'";
  if (!a.ref_attr_name().empty())
    throw Error(SINGA_INVALID_ARGUMENT, what + " refers to '" + a.ref_attr_name() + "', which only a function body may do");
  const int filled = int(a.has_f()) + int(a.has_i()) + int(a.has_s()) + int(a.has_t()) + int(a.has_g()) + int(a.has_sparse_tensor()) +
                     int(a.has_tp()) + int(a.floats_size() > 0) + int(a.ints_size() > 0) + int(a.strings_size() > 0) +
                     int(a.tensors_size() > 0) + int(a.graphs_size() > 0) + int(a.sparse_tensors_size() > 0) +
                     int(a.type_protos_size() > 0);
  if (filled > 1) throw Error(SINGA_INVALID_ARGUMENT, what + " fills more than one value field");
  bool ok = true;
  switch (a.type()) {
    case A::FLOAT: ok = filled == 0 || a.has_f(); break;
    case A::INT: ok = filled == 0 || a.has_i(); break;
    case A::STRING: ok = filled == 0 || a.has_s(); break;
    case A::TENSOR: ok = a.has_t(); break;
    case A::GRAPH: ok = a.has_g(); break;
    case A::SPARSE_TENSOR: ok = a.has_sparse_tensor(); break;
    case A::TYPE_PROTO: ok = a.has_tp(); break;
    case A::FLOATS: ok = filled == 0 || a.floats_size() > 0; break;
    case A::INTS: ok = filled == 0 || a.ints_size() > 0; break;
    case A::STRINGS: ok = filled == 0 || a.strings_size() > 0; break;
    case A::TENSORS: ok = filled == 0 || a.tensors_size() > 0; break;
    case A::GRAPHS: ok = filled == 0 || a.graphs_size() > 0; break;
    case A::SPARSE_TENSORS: ok = filled == 0 || a.sparse_tensors_size() > 0; break;
    case A::TYPE_PROTOS: ok = filled == 0 || a.type_protos_size() > 0; break;
    case A::UNDEFINED: ok = false; break;
    default: ok = false;
  }
  if (!ok)
    throw Error(SINGA_INVALID_ARGUMENT, what + " declares type " + std::to_string(int(a.type())) +
                                            (a.type() == A::UNDEFINED ? " (undefined)" : "") + " but holds another kind of value");
  if (a.has_g()) check_graph(a.g(), what, depth + 1);
  for (const auto& sg : a.graphs()) check_graph(sg, what, depth + 1);
}

void check_graph(const ::onnx::GraphProto& g, const std::string& where, int depth) {
  if (depth > 64) throw Error(SINGA_INVALID_ARGUMENT, where + ": subgraphs nested too deeply");
  const std::string in = depth == 0 ? where : where + " subgraph";
  for (const auto& v : g.input()) {
    if (v.name().empty()) throw Error(SINGA_INVALID_ARGUMENT, in + ": a graph input has no name");
    if (v.has_type()) check_type(v.type(), in + ": graph input '" + v.name() + "'", 0);
    else if (depth == 0) throw Error(SINGA_INVALID_ARGUMENT, in + ": graph input '" + v.name() + "' has no type");
  }
  for (const auto& v : g.output()) {
    if (v.name().empty()) throw Error(SINGA_INVALID_ARGUMENT, in + ": a graph output has no name");
    if (v.has_type()) check_type(v.type(), in + ": graph output '" + v.name() + "'", 0);
  }
  for (const auto& v : g.value_info())
    if (v.has_type()) check_type(v.type(), in + ": value '" + v.name() + "'", 0);
  for (const auto& t : g.initializer())
    if (t.data_type() <= 0 || t.data_type() > kNewestElemType)
      throw Error(SINGA_INVALID_ARGUMENT, in + ": initializer '" + t.name() + "' has data_type " + std::to_string(t.data_type()) +
                                              ", which is not an ONNX element type");
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string label = in + ": " + node_label(n, i);
    if (n.op_type().empty()) throw Error(SINGA_INVALID_ARGUMENT, in + ": node #" + std::to_string(i) + " has no op_type");
    if (n.output_size() == 0) throw Error(SINGA_INVALID_ARGUMENT, label + " has no outputs");
    std::set<std::string> names;
    for (const auto& a : n.attribute()) {
      if (!names.insert(a.name()).second) throw Error(SINGA_INVALID_ARGUMENT, label + " has attribute '" + a.name() + "' twice");
      check_attribute(a, label, depth);
    }
  }
}

}  // namespace

bool library_covers(const ::onnx::ModelProto& model, std::string* why) {
  if (model.ir_version() > ::onnx::IR_VERSION) {
    if (why) *why = "IR version " + std::to_string(model.ir_version()) + " is newer than the onnx library's (" + std::to_string(::onnx::IR_VERSION) + ")";
    return false;
  }
  const auto& ranges = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& op : model.opset_import()) {
    const std::string d = op.domain() == "ai.onnx" ? "" : op.domain();
    auto it = ranges.find(d);
    if (it == ranges.end()) continue;  // a custom domain: the checker passes its nodes by
    if (op.version() > it->second.second) {
      if (why)
        *why = "opset " + std::to_string(op.version()) + " of '" + (d.empty() ? "ai.onnx" : d) + "' is newer than the onnx library's (" +
               std::to_string(it->second.second) + ")";
      return false;
    }
  }
  return true;
}

void validate_model(const ::onnx::ModelProto& model, const std::string& source) {
  if (model.ir_version() > kNewestIrVersion)
    throw Error(SINGA_UNIMPLEMENTED, source + ": IR version " + std::to_string(model.ir_version()) +
                                         " is newer than supported (this singa reads IR versions up to " + std::to_string(kNewestIrVersion) + ")");
  std::set<std::string> domains;
  for (const auto& op : model.opset_import()) {
    const std::string d = op.domain() == "ai.onnx" ? "" : op.domain();
    if (!domains.insert(d).second)
      throw Error(SINGA_INVALID_ARGUMENT, source + ": opset_import names domain '" + (d.empty() ? "ai.onnx" : d) + "' twice");
    if (op.version() < 1)
      throw Error(SINGA_INVALID_ARGUMENT, source + ": opset_import gives domain '" + (d.empty() ? "ai.onnx" : d) + "' version " +
                                              std::to_string(op.version()));
  }
  check_graph(model.graph(), source, 0);
}

}  // namespace onnx
}  // namespace singa
