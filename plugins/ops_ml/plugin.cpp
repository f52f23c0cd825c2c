// plugin.cpp - the ops_ml pack: the ai.onnx.ml domain (tree ensembles, linear
// models, SVMs and the preprocessing ops) as converters of scikit-learn emit it.
#include "registry.hpp"

SINGA_PLUGIN("ops_ml", "0.1.0", "ai.onnx.ml: tree ensembles (TreeEnsemble-5 too), linear models, SVMs, scalers, encoders (CPU)") {
  using namespace singa::ops::ml;
  register_tree_ensembles(reg);
  register_linear(reg);
  register_svm(reg);
  register_scaling(reg);
  register_encoding(reg);
  register_label_encoder(reg);
  register_tree_ensemble5(reg);
}
