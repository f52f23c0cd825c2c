// activation.cpp - parsing of the `activations` attribute family.
#include "activation.hpp"

#include <cctype>

namespace singa {
namespace ops {
namespace rnn {
namespace {

struct Spec {
  const char* name;
  ActKind kind;
  int num_params;  // how many of alpha, beta it consumes
  float alpha, beta;  // ONNX's defaults when the lists run short
};

const Spec kSpecs[] = {
    {"relu", ActKind::Relu, 0, 0.f, 0.f},
    {"tanh", ActKind::Tanh, 0, 0.f, 0.f},
    {"sigmoid", ActKind::Sigmoid, 0, 0.f, 0.f},
    {"affine", ActKind::Affine, 2, 1.f, 0.f},
    {"leakyrelu", ActKind::LeakyRelu, 1, 0.01f, 0.f},
    {"thresholdedrelu", ActKind::ThresholdedRelu, 1, 1.f, 0.f},
    {"scaledtanh", ActKind::ScaledTanh, 2, 1.f, 1.f},
    {"hardsigmoid", ActKind::HardSigmoid, 2, 0.2f, 0.5f},
    {"elu", ActKind::Elu, 1, 1.f, 0.f},
    {"softsign", ActKind::Softsign, 0, 0.f, 0.f},
    {"softplus", ActKind::Softplus, 0, 0.f, 0.f},
};

std::string lower(const std::string& s) {
  std::string r = s;
  for (char& c : r) c = char(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

std::vector<Activation> read_activations(const sdk::Node& node, const std::vector<std::string>& defaults,
                                         int num_directions) {
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = node.attr_strings("activations");
  if (names.empty()) {
    for (int d = 0; d < num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && num_directions == 2) {
    // One direction's list given for a bidirectional node: both use it.
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (names.size() != per_dir * size_t(num_directions))
    node.fail("attribute 'activations' has " + std::to_string(names.size()) + " entries, expected " +
              std::to_string(per_dir * size_t(num_directions)) + " (" + std::to_string(per_dir) +
              " per direction)");
  std::vector<float> alphas = node.attr_floats("activation_alpha");
  std::vector<float> betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const Spec* spec = nullptr;
    for (const Spec& s : kSpecs)
      if (lower(name) == s.name) spec = &s;
    if (!spec) node.fail("unsupported activation '" + name + "' in attribute 'activations'");
    Activation a;
    a.kind = spec->kind;
    a.alpha = spec->alpha;
    a.beta = spec->beta;
    if (spec->num_params >= 1 && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (spec->num_params >= 2 && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  return out;
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
