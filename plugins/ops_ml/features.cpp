// features.cpp - feature matrix and attribute readers shared by the ML ops.
#include "features.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace ml {

Features read_features(const sdk::Tensor& x, const std::string& op) {
  if (x.ndim() != 1 && x.ndim() != 2)
    sdk::fail(op + ": X must have rank 1 or 2 ([N, C] or [C]), got rank " + std::to_string(x.ndim()));
  Features f;
  f.rows = x.ndim() == 2 ? x.dim(0) : 1;
  f.cols = x.ndim() == 2 ? x.dim(1) : x.dim(0);
  f.data.resize(size_t(f.rows * f.cols));
  sdk::dispatch(
      x.dtype(),
      [&](auto tag) {
        using T = decltype(tag);
        const T* p = x.data<T>();
        for (size_t i = 0; i < f.data.size(); ++i) f.data[i] = double(p[i]);
      },
      sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE) | sdk::bit(SINGA_ONNX_INT64) | sdk::bit(SINGA_ONNX_INT32));
  return f;
}

std::vector<double> attr_reals(const sdk::Node& node, const std::string& name) {
  const std::string tname = name + "_as_tensor";
  const bool has_list = node.has_attr(name.c_str());
  sdk::Tensor t = node.attr_tensor(tname.c_str());
  if (has_list && t.present()) node.fail("attributes '" + name + "' and '" + tname + "' are both set; give one");
  if (!t.present()) {
    std::vector<float> v = node.attr_floats(name.c_str());
    return std::vector<double>(v.begin(), v.end());
  }
  std::vector<double> out(size_t(t.numel()));
  const int32_t dt = t.dtype();
  if (dt == SINGA_ONNX_FLOAT) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<float>()[i];
  } else if (dt == SINGA_ONNX_DOUBLE) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<double>()[i];
  } else {
    node.fail("attribute '" + tname + "' must be a float or double tensor, got " + sdk::dtype_name(dt));
  }
  return out;
}

ClassLabels::ClassLabels(const sdk::Node& node, const char* ints_name) {
  strings_ = node.attr_strings("classlabels_strings");
  ints_ = node.attr_ints(ints_name);
  if (!strings_.empty() && !ints_.empty())
    node.fail(std::string("both classlabels_strings and ") + ints_name + " are set; the spec allows one");
  if (strings_.empty() && ints_.empty()) node.fail(std::string("attribute '") + ints_name + "' (or classlabels_strings) is missing or empty");
}

void ClassLabels::emit(const sdk::Context& ctx, size_t out, const std::vector<int64_t>& picked) const {
  const int64_t rows = int64_t(picked.size());
  if (strings_.empty()) {
    int64_t* y = ctx.output(out, {rows}, SINGA_ONNX_INT64).data<int64_t>();
    std::copy(picked.begin(), picked.end(), y);
    return;
  }
  ctx.output(out, {rows}, SINGA_ONNX_STRING);
  for (int64_t r = 0; r < rows; ++r) ctx.set_string(out, r, strings_[size_t(picked[size_t(r)])]);
}

void check_len(const sdk::Node& node, const char* attr, size_t n, size_t want) {
  if (n != want)
    node.fail(std::string("attribute '") + attr + "' has " + std::to_string(n) + " values, expected " +
              std::to_string(want));
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
