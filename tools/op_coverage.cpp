// `singa plugins --coverage`: every operator of ONNX's table of op versions
// (core/onnx/op_versions.inc) against the loaded kernels of one device: which
// ops have a kernel for their newest version, which only for older ones (a
// version bump nobody has reviewed yet), and which have none.
#include "op_coverage.hpp"

#include <singa/op_versions.hpp>
#include <singa/runtime.hpp>

#include <climits>

namespace singa {
namespace cli {

OpCoverage op_coverage(const std::string& device) {
  OpCoverage c;
  const Runtime& rt = Runtime::instance();
  for (const auto& op : onnx::known_ops()) {
    const int newest = op.versions.back();
    const int opset = onnx::newest_known_opset(op.domain);
    const std::string name = (op.domain.empty() ? "" : op.domain + "::") + op.op;
    if (core_op_types().count({op.domain, op.op})) {
      ++c.core;
      continue;
    }
    int served_until = 0;  // the newest opset some kernel on `device` serves
    bool any = false;
    for (const KernelEntry* k : rt.kernels(op.domain, op.op)) {
      if (k->device != device) continue;
      any = true;
      if (k->last_opset >= opset) served_until = INT_MAX;
      else if (k->last_opset > served_until) served_until = k->last_opset;
    }
    if (!any)
      c.missing.push_back(name + "-" + std::to_string(newest));
    else if (served_until == INT_MAX)
      ++c.current;
    else
      c.stale.push_back(name + "-" + std::to_string(newest) + " (kernels up to opset " + std::to_string(served_until) + ")");
  }
  return c;
}

}  // namespace cli
}  // namespace singa
