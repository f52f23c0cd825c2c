// Scan: iterates a body over slices of its scan inputs, carrying state.
// Opset 8 has a leading batch axis (each batch entry scans on its own) and
// optional sequence lengths; opset 9 drops the batch axis and adds per-input
// axes and directions.
#include "attrs.hpp"
#include "body.hpp"

#include <algorithm>

namespace singa {
namespace control {

namespace {

class ScanOp : public CoreOp {
 public:
  ScanOp(const graph::Graph& g, const graph::Node& node, const ExecConfig& config)
      : where_(g.source + ": " + node.label), body_(node, "body", config, where_), batched_(node.opset < 9) {
    const auto& p = node.proto;
    if (!find_attr(p, "num_scan_inputs")) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": attribute 'num_scan_inputs' is required");
    m_ = size_t(attr_int(p, "num_scan_inputs", 0, where_));
    size_t explicit_in = node.explicit_inputs - (batched_ ? 1 : 0);
    if (m_ < 1 || m_ > explicit_in)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": num_scan_inputs " + std::to_string(m_) + " does not fit the node's " +
                                              std::to_string(explicit_in) + " inputs");
    n_ = explicit_in - m_;
    if (body_.num_inputs() != n_ + m_)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the body takes " + std::to_string(body_.num_inputs()) + " inputs, expected " +
                                              std::to_string(n_ + m_));
    if (body_.num_outputs() < n_ || node.outputs.size() != body_.num_outputs())
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the body's " + std::to_string(body_.num_outputs()) + " outputs do not match the node's " +
                                              std::to_string(node.outputs.size()));
    k_ = body_.num_outputs() - n_;
    in_dirs_ = attr_ints(p, batched_ ? "directions" : "scan_input_directions", where_);
    in_axes_ = attr_ints(p, "scan_input_axes", where_);
    out_dirs_ = attr_ints(p, "scan_output_directions", where_);
    out_axes_ = attr_ints(p, "scan_output_axes", where_);
    in_dirs_.resize(m_, 0);
    in_axes_.resize(m_, 0);
    out_dirs_.resize(k_, 0);
    out_axes_.resize(k_, 0);
    for (auto* list : {&in_dirs_, &out_dirs_})
      for (int64_t d : *list)
        if (d != 0 && d != 1) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": scan directions must be 0 or 1, got " + std::to_string(d));
  }

  void run(CoreCall& c) const override {
    std::vector<Value> implicit = implicit_values(c);
    size_t first = batched_ ? 1 : 0;
    std::vector<Tensor> states, scans;
    for (size_t k = 0; k < n_; ++k) states.push_back(input(c, first + k, "initial state " + std::to_string(k)));
    for (size_t k = 0; k < m_; ++k) scans.push_back(input(c, first + n_ + k, "scan input " + std::to_string(k)));
    if (!batched_) {
      auto outs = scan(states, scans, in_axes_, implicit);
      for (size_t k = 0; k < outs.size(); ++k) c.outputs[k] = outs[k];
      return;
    }
    if (batched_ && c.inputs[0] && !c.inputs[0]->is_none())
      check_lengths(tensor_of(*c.inputs[0], "sequence_lens", where_), scans);
    // Opset 8: axis 0 is the batch, each entry scans its own axis 1 (axis 0 once the batch is taken).
    int64_t batch = scans[0].ndim() > 0 ? scans[0].shape()[0] : 0;
    // Every state and scan input is sliced along axis 0 for each batch entry,
    // so all of them must have that axis with the same length.
    auto check_batch = [&](const Tensor& t, const std::string& what) {
      if (t.ndim() < 1 || t.shape()[0] != batch)
        throw Error(SINGA_INVALID_ARGUMENT, where_ + ": " + what + " has shape " + shape_to_string(t.shape()) +
                                                ", but opset 8's Scan needs the batch (" + std::to_string(batch) +
                                                ") as its first dimension");
    };
    for (size_t k = 0; k < n_; ++k) check_batch(states[k], "initial state " + std::to_string(k));
    for (size_t k = 0; k < m_; ++k) check_batch(scans[k], "scan input " + std::to_string(k));
    std::vector<std::vector<Tensor>> per_output(n_ + k_);
    std::vector<int64_t> axes(m_, 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> st, sc;
      for (const auto& s : states) st.push_back(take(s, 0, b));
      for (const auto& s : scans) sc.push_back(take(s, 0, b));
      auto outs = scan(st, sc, axes, implicit);
      for (size_t k = 0; k < outs.size(); ++k) per_output[k].push_back(outs[k]);
    }
    const auto& bg = body_.graph();
    for (size_t k = 0; k < per_output.size(); ++k)
      c.outputs[k] = stack_or_empty(per_output[k], 0, bg.values[size_t(bg.outputs[k])], where_);
  }

 private:
  Tensor input(const CoreCall& c, size_t i, const std::string& what) const {
    if (i >= c.inputs.size() || !c.inputs[i]) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": " + what + " is missing");
    return tensor_of(*c.inputs[i], what, where_).to_host();
  }

  void check_lengths(const Tensor& lens_in, const std::vector<Tensor>& scans) const {
    Tensor lens = lens_in.to_host();
    int64_t full = scans[0].ndim() > 1 ? scans[0].shape()[1] : 0;
    for (int64_t i = 0; i < lens.numel(); ++i) {
      int64_t l = lens.dtype() == SINGA_ONNX_INT64 ? lens.data<int64_t>()[i] : int64_t(lens.data<int32_t>()[i]);
      if (l != full)
        throw Error(SINGA_UNIMPLEMENTED, where_ + ": sequence_lens shorter than the scan axis (" + std::to_string(l) + " < " +
                                             std::to_string(full) + ") are not supported");
    }
  }

  // One scan over the scan inputs' axes; returns final states then stacked outputs.
  std::vector<Tensor> scan(std::vector<Tensor> states, const std::vector<Tensor>& scans, const std::vector<int64_t>& axes_in,
                           const std::vector<Value>& implicit) const {
    std::vector<int64_t> axes(m_);
    int64_t len = -1;
    for (size_t j = 0; j < m_; ++j) {
      axes[j] = normalize_axis(axes_in[j], scans[j].ndim(), where_);
      int64_t l = scans[j].shape()[size_t(axes[j])];
      if (len >= 0 && l != len)
        throw Error(SINGA_INVALID_ARGUMENT, where_ + ": scan input " + std::to_string(j) + " has " + std::to_string(l) +
                                                " steps, scan input 0 has " + std::to_string(len));
      len = l;
    }
    std::vector<std::vector<Tensor>> outs(k_);
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Value> ins(states.begin(), states.end());
      for (size_t j = 0; j < m_; ++j) ins.push_back(take(scans[j], axes[j], in_dirs_[j] ? len - 1 - t : t));
      std::vector<Value> got = body_.run(std::move(ins), implicit);
      for (size_t k = 0; k < n_; ++k) states[k] = tensor_of(got[k], "state output " + std::to_string(k), where_);
      for (size_t k = 0; k < k_; ++k) outs[k].push_back(tensor_of(got[n_ + k], "scan output " + std::to_string(k), where_));
    }
    std::vector<Tensor> result = states;
    const auto& bg = body_.graph();
    for (size_t k = 0; k < k_; ++k) {
      if (out_dirs_[k]) std::reverse(outs[k].begin(), outs[k].end());
      if (outs[k].empty()) {
        result.push_back(stack_or_empty({}, 0, bg.values[size_t(bg.outputs[n_ + k])], where_));
        continue;
      }
      int64_t rank = outs[k][0].ndim() + 1;
      result.push_back(concat(outs[k], normalize_axis(out_axes_[k], rank, where_), true, where_));
    }
    return result;
  }

  std::string where_;
  Body body_;
  bool batched_;
  size_t n_ = 0, m_ = 0, k_ = 0;
  std::vector<int64_t> in_dirs_, in_axes_, out_dirs_, out_axes_;
};

}  // namespace

std::unique_ptr<CoreOp> make_scan(const graph::Graph& g, const graph::Node& node, const ExecConfig& config) {
  return std::make_unique<ScanOp>(g, node, config);
}

}  // namespace control
}  // namespace singa
