// BatchNormalization (float): inference with the given statistics, and from
// opset 14 training_mode=1 with batch statistics and updated running ones.
// y = x * a + c per channel, with a and c computed on the device so that no
// statistics travel to the host.
#include "batch_norm_attrs.hpp"
#include "ops_common.hpp"
#include "register.hpp"

namespace singa {
namespace cuda {

namespace {

class BatchNorm : public NodeKernel {
 public:
  explicit BatchNorm(const sdk::Node& node) : NodeKernel(node), attrs_(ops::read_batch_norm_attrs(node)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), scale = required(ctx, 1, "scale"), bias = required(ctx, 2, "B");
    sdk::Tensor mean = required(ctx, 3, "input_mean"), var = required(ctx, 4, "input_var");
    for (const auto& named : {std::make_pair(&x, "X"), std::make_pair(&scale, "scale"), std::make_pair(&bias, "B"),
                              std::make_pair(&mean, "input_mean"), std::make_pair(&var, "input_var")})
      check_float(*named.first, named.second);
    const sdk::Shape xs = x.shape();
    check(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1];
    const int64_t S = N * C > 0 ? x.numel() / (N * C) : 0;
    const int64_t channels = attrs_.spatial ? C : C * S, inner = attrs_.spatial ? S : 1;
    for (const sdk::Tensor* t : {&scale, &bias, &mean, &var})
      check(t->numel() == channels, "scale, B, mean and var must hold " + std::to_string(channels) + " values for X " +
                                        shape_str(xs) + ", got shape " + shape_str(t->shape()));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (attrs_.training) check(N * inner > 0, "training mode needs a non-empty batch, got X " + shape_str(xs));
    if (y.numel() == 0 && !attrs_.training) return;

    DeviceGuard guard(device_of(ctx));
    const cudaStream_t stream = stream_of(ctx);
    float* scratch = static_cast<float*>(ctx.workspace(size_t(4 * channels) * sizeof(float)));
    float *a = scratch, *c = scratch + channels;
    const float* mu = mean.data<float>();
    const float* sigma2 = var.data<float>();
    if (attrs_.training) {
      float *batch_mean = scratch + 2 * channels, *batch_var = scratch + 3 * channels;
      check_launch(launch_channel_stats(x.data<float>(), N, channels, inner, batch_mean, batch_var, stream),
                   "batch statistics kernel");
      if (ctx.num_outputs() > 1) running(ctx, 1, mean, batch_mean, stream);
      if (ctx.num_outputs() > 2) running(ctx, 2, var, batch_var, stream);
      mu = batch_mean;
      sigma2 = batch_var;
    }
    check_launch(launch_bn_coeffs(scale.data<float>(), bias.data<float>(), mu, sigma2, attrs_.epsilon, channels, a, c, stream),
                 "batch norm coefficients kernel");
    check_launch(launch_bn_apply(x.data<float>(), y.data<float>(), a, c, N, channels, inner, stream),
                 "batch norm kernel");
  }

 private:
  void running(const sdk::Context& ctx, size_t out, const sdk::Tensor& input, const float* batch,
               cudaStream_t stream) const {
    sdk::Tensor r = ctx.output(out, input.shape(), input.dl_dtype());
    check_launch(launch_bn_running(input.data<float>(), batch, attrs_.momentum, input.numel(), r.data<float>(), stream),
                 "running statistics kernel");
  }

  const ops::BatchNormAttrs attrs_;
};

}  // namespace

void register_norm(sdk::Registrar& reg) {
  // 6 drops consumed_inputs, 7 is_test, 9 spatial; 14 adds training_mode and
  // a type for the statistics; 15 separates scale/B from mean/var.
  reg.kernel<BatchNorm>("", "BatchNormalization", 1, 5, "cuda", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 6, 6, "cuda", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 7, 8, "cuda", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 9, 13, "cuda", {{"T", 0, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 14, 14, "cuda", {{"T", 0, kF32}, {"U", 3, kF32}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 15, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32}, {"T1", 1, kF32}, {"T2", 3, kF32}});
}

}  // namespace cuda
}  // namespace singa
