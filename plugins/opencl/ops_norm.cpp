// BatchNormalization (float): inference with the given statistics, and from
// opset 14 training_mode=1 with batch statistics and updated running ones.
#include "batch_norm_attrs.hpp"
#include "ops_common.hpp"
#include "register.hpp"

namespace singa {
namespace opencl {

namespace {

class BatchNorm : public NodeKernel {
 public:
  explicit BatchNorm(const sdk::Node& node) : NodeKernel(node), attrs_(ops::read_batch_norm_attrs(node)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), scale = required(ctx, 1, "scale"), bias = required(ctx, 2, "B");
    sdk::Tensor mean = required(ctx, 3, "input_mean"), var = required(ctx, 4, "input_var");
    check_float(x, "X");
    check_float(scale, "scale");
    check_float(bias, "B");
    check_float(mean, "input_mean");
    check_float(var, "input_var");
    const sdk::Shape xs = x.shape();
    check(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1];
    const int64_t S = N * C > 0 ? x.numel() / (N * C) : 0;
    // spatial=0 (before opset 9): statistics per (channel, position).
    const int64_t channels = attrs_.spatial ? C : C * S, inner = attrs_.spatial ? S : 1;
    for (const sdk::Tensor* t : {&scale, &bias, &mean, &var})
      check(t->numel() == channels, "scale, B, mean and var must hold " + std::to_string(channels) + " values for X " +
                                        shape_str(xs) + ", got shape " + shape_str(t->shape()));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (attrs_.training) check(N * inner > 0, "training mode needs a non-empty batch, got X " + shape_str(xs));
    if (y.numel() == 0 && !attrs_.training) return;
    DeviceEnv& e = env(y);
    const cl_int total = to_int(x.numel(), "size"), ch = to_int(channels, "channels"), in = to_int(inner, "inner size");
    Buf mu = buf(mean), sigma2 = buf(var);
    if (attrs_.training) {
      cl_mem stats = static_cast<cl_mem>(ctx.workspace(size_t(2 * channels) * sizeof(float)));
      const Buf batch_mean{stats, 0}, batch_var{stats, ch};
      launch(e, Program::kReduce, "bn_stats").arg(buf(x)).arg(batch_mean).arg(batch_var).arg(to_int(N, "N")).arg(ch).arg(in)
          .run({size_t(channels)});
      if (ctx.num_outputs() > 1) running(ctx, e, 1, mean, batch_mean);
      if (ctx.num_outputs() > 2) running(ctx, e, 2, var, batch_var);
      mu = batch_mean;
      sigma2 = batch_var;
    }
    Launch l = launch(e, Program::kReduce, "bn_apply");
    l.arg(buf(x)).arg(buf(y)).arg(buf(scale)).arg(buf(bias)).arg(mu).arg(sigma2).arg(cl_float(attrs_.epsilon));
    l.arg(total).arg(ch).arg(in).run({size_t(total)});
  }

 private:
  void running(const sdk::Context& ctx, DeviceEnv& e, size_t out, const sdk::Tensor& input, const Buf& batch) const {
    sdk::Tensor r = ctx.output(out, input.shape(), input.dl_dtype());
    launch(e, Program::kReduce, "bn_running").arg(buf(input)).arg(batch).arg(buf(r)).arg(cl_float(attrs_.momentum))
        .arg(to_int(input.numel(), "channels")).run({size_t(input.numel())});
  }

  const ops::BatchNormAttrs attrs_;
};

}  // namespace

void register_norm(sdk::Registrar& reg) {
  // 6 drops consumed_inputs, 7 is_test, 9 spatial; 14 adds training_mode and
  // a type for the statistics; 15 separates scale/B from mean/var.
  reg.kernel<BatchNorm>("", "BatchNormalization", 1, 5, "opencl", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 6, 6, "opencl", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 7, 8, "opencl", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 9, 13, "opencl", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 14, 14, "opencl", {{"T", 0, kF32}, {"U", 3, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 15, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}, {"T1", 1, kF32}, {"T2", 3, kF32}});
}

}  // namespace opencl
}  // namespace singa
