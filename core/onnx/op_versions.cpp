#include <singa/op_versions.hpp>

#include <singa/singa_abi.h>

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

namespace singa {
namespace onnx {

namespace {

struct Table {
  std::map<std::pair<std::string, std::string>, std::vector<int>> ops;
  std::map<std::string, int> newest;  // per domain
};

const Table& table() {
  static const Table t = [] {
    Table t;
    auto add = [&t](const char* domain, const char* op, std::initializer_list<int> versions) {
      std::vector<int> v(versions);
      std::sort(v.begin(), v.end());
      t.ops[{domain, op}] = v;
    };
#define SINGA_OP_VERSIONS(domain, op, ...) add(domain, op, {__VA_ARGS__});
#define SINGA_NEWEST_OPSET(domain, version) t.newest[domain] = version;
#include "op_versions.inc"
#undef SINGA_OP_VERSIONS
#undef SINGA_NEWEST_OPSET
    for (const auto& [key, v] : t.ops) {
      int& n = t.newest[key.first];
      n = std::max(n, v.back());
    }
    return t;
  }();
  return t;
}

}  // namespace

const std::vector<int>* op_versions(const std::string& domain, const std::string& op) {
  const auto& ops = table().ops;
  auto it = ops.find({domain == "ai.onnx" ? "" : domain, op});
  return it == ops.end() ? nullptr : &it->second;
}

int newest_known_opset(const std::string& domain) {
  const auto& n = table().newest;
  auto it = n.find(domain == "ai.onnx" ? "" : domain);
  return it == n.end() ? 0 : it->second;
}

int op_version_at(const std::string& domain, const std::string& op, int64_t opset) {
  const std::vector<int>* v = op_versions(domain, op);
  if (!v) return 0;
  auto it = std::upper_bound(v->begin(), v->end(), opset);
  return it == v->begin() ? 0 : *(it - 1);
}

int32_t last_served_opset(const std::string& domain, const std::string& op, int32_t since, int32_t end) {
  const std::vector<int>* v = op_versions(domain, op);
  if (!v) return end;
  const int32_t anchor = end == SINGA_VERSION_OPEN ? since : end;
  auto next = std::upper_bound(v->begin(), v->end(), anchor);
  return next == v->end() ? INT32_MAX : *next - 1;
}

std::vector<KnownOp> known_ops() {
  std::vector<KnownOp> out;
  for (const auto& [key, v] : table().ops) out.push_back({key.first, key.second, v});
  return out;
}

std::string opset_range_text(int32_t since, int32_t last) {
  return std::to_string(since) + (last == INT32_MAX ? std::string("+") : "-" + std::to_string(last));
}

std::string versions_text(const std::vector<int>& versions) {
  std::string s;
  for (int x : versions) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

}  // namespace onnx
}  // namespace singa
