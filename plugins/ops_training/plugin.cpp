// plugin.cpp - the ops_training pack: the optimizer ops of the
// ai.onnx.preview.training domain on the CPU.
#include "optimizer.hpp"

SINGA_PLUGIN("ops_training", "0.1.0", "ai.onnx.preview.training optimizers Adagrad, Adam, Momentum (CPU)") {
  using namespace singa::training;
  register_adagrad(reg);
  register_adam(reg);
  register_momentum(reg);
}
