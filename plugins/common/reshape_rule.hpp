// reshape_rule.hpp - ONNX Reshape's target shape (0 copies a dimension unless
// allowzero, one -1 is inferred), shared by every device's Reshape kernel.
#ifndef SINGA_PLUGINS_RESHAPE_RULE_HPP
#define SINGA_PLUGINS_RESHAPE_RULE_HPP

#include "broadcast.hpp"

#include <singa/kernel.hpp>

#include <string>
#include <vector>

namespace singa {
namespace ops {

inline sdk::Shape reshape_target(const sdk::Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  sdk::Shape out(spec.size());
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == 0 && !allowzero) {
      SINGA_CHECK(i < in.size(), "shape " + shape_str(spec) + " copies dimension " + std::to_string(i) + " (value 0) but the input " +
                                    shape_str(in) + " has rank " + std::to_string(in.size()));
      out[i] = in[i];
    } else if (v == -1) {
      SINGA_CHECK(infer < 0, "shape " + shape_str(spec) + " has more than one -1");
      infer = int64_t(i);
      out[i] = 1;
    } else {
      SINGA_CHECK(v >= 0, "shape " + shape_str(spec) + " has invalid dimension " + std::to_string(v));
      has_zero = has_zero || v == 0;
      out[i] = v;
    }
  }
  SINGA_CHECK(!(has_zero && infer >= 0), "shape " + shape_str(spec) + " has both 0 and -1 while allowzero=1");
  const int64_t total = sdk::numel(in);
  if (infer >= 0) {
    const int64_t known = sdk::numel(out);
    SINGA_CHECK(known != 0 && total % known == 0,
               "cannot infer the -1 in shape " + shape_str(spec) + " for an input of shape " + shape_str(in));
    out[size_t(infer)] = total / known;
  }
  SINGA_CHECK(sdk::numel(out) == total, "cannot reshape input of shape " + shape_str(in) + " (" + std::to_string(total) +
                                           " elements) to " + shape_str(out));
  return out;
}

}  // namespace ops
}  // namespace singa
#endif
