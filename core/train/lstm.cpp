// The LSTM layer, unrolled over time on the autograd tape.
#include <singa/layer.hpp>

#include "init.hpp"

#include <singa/error.hpp>

#include <cmath>

namespace singa {
namespace layer {

using autograd::apply;
using autograd::apply1;
using autograd::Attrs;
using autograd::int64s;

LSTM::LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool batch_first, bool return_sequences)
    : input_size_(input_size), hidden_(hidden_size), batch_first_(batch_first), return_sequences_(return_sequences) {
  if (input_size <= 0 || hidden_size <= 0 || num_layers <= 0)
    throw Error(SINGA_INVALID_ARGUMENT, "LSTM: input_size, hidden_size and num_layers must be positive");
  const double bound = 1.0 / std::sqrt(double(hidden_size));
  for (int64_t l = 0; l < num_layers; ++l) {
    const std::string n = "_l" + std::to_string(l);
    Weights w;
    w.w_ih = detail::uniform({4 * hidden_size, l == 0 ? input_size : hidden_size}, bound, "weight_ih" + n);
    w.w_hh = detail::uniform({4 * hidden_size, hidden_size}, bound, "weight_hh" + n);
    w.b_ih = detail::uniform({4 * hidden_size}, bound, "bias_ih" + n);
    w.b_hh = detail::uniform({4 * hidden_size}, bound, "bias_hh" + n);
    weights.push_back(w);
  }
}

Variable LSTM::forward(const Variable& input) {
  const Shape& s = input.shape();
  if (s.size() != 3 || s[2] != input_size_)
    throw Error(SINGA_INVALID_ARGUMENT, "LSTM: input of shape " + shape_to_string(s) + " (expects " +
                                            (batch_first_ ? "[N, T, " : "[T, N, ") + std::to_string(input_size_) + "])");
  // Time-major inside: step t is Gather(x, t) along axis 0.
  Variable x = batch_first_ ? autograd::transpose(input, {1, 0, 2}) : input;
  const int64_t steps = x.shape()[0];
  if (steps == 0) throw Error(SINGA_INVALID_ARGUMENT, "LSTM: the input has no time steps");
  const Variable quarters(int64s({hidden_, hidden_, hidden_, hidden_}));
  std::vector<Variable> hs;
  for (const Weights& w : weights) {
    // The input projection of every step in one product: [T, N, 4H].
    Variable xw = autograd::add(autograd::matmul(x, autograd::transpose(w.w_ih, {1, 0})), autograd::add(w.b_ih, w.b_hh));
    Variable h, c;
    hs.clear();
    for (int64_t t = 0; t < steps; ++t) {
      Variable gates = apply1("Gather", {xw, Variable(Tensor::from_vector<int64_t>({}, SINGA_ONNX_INT64, {t}))},
                              Attrs().set("axis", int64_t(0)));
      // The state starts at zero, so the first step has no recurrent term;
      // leaving it out (rather than adding zeros of a fixed batch size) keeps
      // an exported model's batch dimension free.
      if (h.defined()) gates = apply1("Gemm", {h, w.w_hh, gates}, Attrs().set("transB", int64_t(1)));
      std::vector<Variable> g = apply("Split", {gates, quarters}, Attrs().set("axis", int64_t(1)), 4);
      Variable i = autograd::sigmoid(g[0]), f = autograd::sigmoid(g[1]), cand = autograd::tanh(g[2]),
               o = autograd::sigmoid(g[3]);
      c = c.defined() ? autograd::add(autograd::mul(f, c), autograd::mul(i, cand)) : autograd::mul(i, cand);
      h = autograd::mul(o, autograd::tanh(c));
      hs.push_back(apply1("Unsqueeze", {h, Variable(int64s({0}))}));
    }
    x = hs.size() == 1 ? hs[0] : autograd::concat(hs, 0);  // [T, N, H]: the next layer's input
  }
  if (!return_sequences_) return autograd::reshape(hs.back(), {-1, hidden_});
  return batch_first_ ? autograd::transpose(x, {1, 0, 2}) : x;
}

void LSTM::collect(const std::string& p, NamedVariables& out, NamedVariables&) const {
  for (const Weights& w : weights)
    for (const Variable* v : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh}) out.emplace_back(p + v->name(), *v);
}

}  // namespace layer
}  // namespace singa
