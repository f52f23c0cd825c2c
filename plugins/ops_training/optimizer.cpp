// The variadic input/output bookkeeping shared by Adagrad, Adam and Momentum.
#include "optimizer.hpp"

#include <algorithm>
#include <utility>

namespace singa {
namespace training {
namespace {

std::string shape_str(const sdk::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

double scalar_of(const sdk::Tensor& t, const char* name) {
  if (t.numel() != 1) sdk::fail(std::string(name) + " must be a scalar, got shape " + shape_str(t.shape()));
  if (t.dtype() == SINGA_ONNX_FLOAT) return *t.data<float>();
  if (t.dtype() == SINGA_ONNX_DOUBLE) return *t.data<double>();
  if (t.dtype() == SINGA_ONNX_INT64) return double(*t.data<int64_t>());
  sdk::fail(std::string(name) + " has unsupported type " + sdk::dtype_name(t.dtype()));
}

}  // namespace

OptimizerKernel::OptimizerKernel(const sdk::Node& node, std::vector<std::string> names) : names_(std::move(names)) {
  size_t groups = names_.size();
  size_t ins = node.num_inputs();
  if (ins < 2 + groups || (ins - 2) % groups != 0)
    node.fail("expects inputs R, T and then " + std::to_string(groups) + " equal-length lists (" + names_[0] +
              "..., " + names_[1] + "..., ...), got " + std::to_string(ins) + " inputs");
  tensors_ = (ins - 2) / groups;
  size_t outs = node.num_outputs();
  if (outs != tensors_ * (groups - 1))
    node.fail("optimises " + std::to_string(tensors_) + " tensor(s), so it needs " +
              std::to_string(tensors_ * (groups - 1)) + " outputs, got " + std::to_string(outs));
  for (size_t i = 0; i < ins; ++i)
    if (!node.has_input(i)) node.fail("input " + std::to_string(i) + " is missing; none is optional");
}

float OptimizerKernel::required_float(const sdk::Node& node, const char* name) {
  if (!node.has_attr(name)) node.fail(std::string("required attribute ") + name + " is missing");
  return node.attr_float(name, 0.0f);
}

void OptimizerKernel::compute(sdk::Context& ctx) const {
  double r = scalar_of(ctx.input(0), "R");
  sdk::Tensor tt = ctx.input(1);
  if (tt.dtype() != SINGA_ONNX_INT64 || tt.numel() != 1)
    sdk::fail(std::string("T must be an int64 scalar, got ") + sdk::dtype_name(tt.dtype()) + " of shape " +
              shape_str(tt.shape()));
  int64_t t = *tt.data<int64_t>();
  size_t groups = names_.size();
  for (size_t j = 0; j < tensors_; ++j) {
    std::vector<sdk::Tensor> in(groups);
    for (size_t g = 0; g < groups; ++g) in[g] = ctx.input(2 + g * tensors_ + j);
    const sdk::Tensor& x = in[0];
    for (size_t g = 1; g < groups; ++g) {
      if (in[g].shape() != x.shape())
        sdk::fail(names_[g] + "_" + std::to_string(j + 1) + " has shape " + shape_str(in[g].shape()) + " but " +
                  names_[0] + "_" + std::to_string(j + 1) + " has shape " + shape_str(x.shape()));
      if (in[g].dtype() != x.dtype())
        sdk::fail(names_[g] + "_" + std::to_string(j + 1) + " has type " + sdk::dtype_name(in[g].dtype()) + " but " +
                  names_[0] + "_" + std::to_string(j + 1) + " has type " + sdk::dtype_name(x.dtype()));
    }
    if (x.dtype() != SINGA_ONNX_FLOAT && x.dtype() != SINGA_ONNX_DOUBLE)
      sdk::fail(names_[0] + "_" + std::to_string(j + 1) + " has unsupported type " + sdk::dtype_name(x.dtype()));
    std::vector<sdk::Tensor> out(groups - 1);
    for (size_t g = 0; g + 1 < groups; ++g) out[g] = ctx.output(g * tensors_ + j, x.shape(), x.dl_dtype());
    int64_t n = x.numel();
    bool is_float = x.dtype() == SINGA_ONNX_FLOAT;
    // Work in double blocks so one update routine serves both types.
    ctx.parallel_for(n, 4096, [&](int64_t b, int64_t e) {
      int64_t len = e - b;
      std::vector<double> buf(size_t(len) * (2 * groups - 1));
      std::vector<const double*> ip(groups);
      std::vector<double*> op(groups - 1);
      for (size_t g = 0; g < groups; ++g) {
        double* d = buf.data() + g * size_t(len);
        for (int64_t i = 0; i < len; ++i)
          d[i] = is_float ? double(in[g].data<float>()[b + i]) : in[g].data<double>()[b + i];
        ip[g] = d;
      }
      for (size_t g = 0; g + 1 < groups; ++g) op[g] = buf.data() + (groups + g) * size_t(len);
      update(r, t, ip.data(), op.data(), len);
      for (size_t g = 0; g + 1 < groups; ++g)
        for (int64_t i = 0; i < len; ++i) {
          if (is_float)
            out[g].data<float>()[b + i] = float(op[g][i]);
          else
            out[g].data<double>()[b + i] = op[g][i];
        }
    });
  }
}

}  // namespace training
}  // namespace singa
