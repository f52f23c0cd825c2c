// train_scaled_add.cpp - trains a model through the example's custom op,
// built against the installed singa (headers and libsinga_core) only; the op
// pack is found through SINGA_PLUGIN_PATH.
//
// train_model.onnx is D = Relu(ScaledAdd(A, W)) with W a parameter. The
// program checks W's gradient (which can only come from ScaledAdd's backward
// kernel) against central differences, then fits D to a target with SGD and
// prints the loss before and after. Exit status 0 when both checks pass.
//
// usage: train_scaled_add train_model.onnx
#include <singa/autograd.hpp>
#include <singa/layer.hpp>
#include <singa/optim.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>

using singa::Tensor;
using singa::autograd::Variable;
namespace ag = singa::autograd;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: train_scaled_add train_model.onnx\n");
    return 2;
  }
  try {
    singa::layer::ImportedModel model(singa::layer::ImportedModel::prepare_for_training(argv[1]));
    const Variable a(Tensor::from_vector<double>({2, 3}, SINGA_ONNX_DOUBLE, {1.0, -2.0, 3.0, 0.25, -0.5, 4.0}));
    const Variable target(Tensor::from_vector<double>({2, 3}, SINGA_ONNX_DOUBLE, {2.0, 0.0, 3.0, 1.0, 0.0, 2.0}));
    auto loss_of = [&] {
      Variable diff = ag::sub(model.forward(a), target);
      return ag::reduce_sum(ag::mul(diff, diff), {});
    };
    auto params = model.parameters();
    if (params.size() != 1) throw std::runtime_error("expected one parameter (W)");
    Variable w = params[0].second;

    Variable loss = loss_of();
    ag::backward(loss);
    if (!w.grad().defined()) throw std::runtime_error("W received no gradient");
    double worst = 0;
    for (int64_t i = 0; i < w.data().numel(); ++i) {
      ag::NoGradGuard no_grad;
      double* p = w.data().data<double>();
      const double keep = p[i], eps = 1e-6;
      p[i] = keep + eps;
      const double up = loss_of().data().data<double>()[0];
      p[i] = keep - eps;
      const double down = loss_of().data().data<double>()[0];
      p[i] = keep;
      worst = std::fmax(worst, std::fabs(w.grad().data<double>()[i] - (up - down) / (2 * eps)));
    }
    std::printf("gradient of W: largest difference from central differences %.3g\n", worst);

    singa::optim::SGD sgd(params, 0.1);
    const double first = loss.data().data<double>()[0];
    double last = first;
    for (int step = 0; step < 50; ++step) {
      sgd.zero_grad();
      Variable l = loss_of();
      ag::backward(l);
      sgd.step();
      last = l.data().data<double>()[0];
    }
    std::printf("loss: %.6f before, %.6f after 50 SGD steps\n", first, last);
    if (worst > 1e-6) return 1;
    return last < 0.1 * first ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_scaled_add: %s\n", e.what());
    return 1;
  }
}
