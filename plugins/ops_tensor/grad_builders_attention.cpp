// Gradient of TensorScatter, the KV-cache write of the attention family, as
// a builder of backward nodes (gradient.hpp).
#include <singa/gradient.hpp>

namespace {

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

// Y is past_cache with update's rows written over positions start_b + j
// (mod the cache length in circular mode) of the sequence axis. past_cache's
// gradient is dY with those positions zeroed: the same op writing zeros.
// update's gradient is dY read back at those positions (GatherElements with
// the positions, which the host knows from write_indices).
SINGA_GRADIENT("", "TensorScatter", [](GradBuilder& b) {
  const auto& n = b.node();
  const Value past = b.input(0), upd = b.input(1), dy = b.output_grad(0);
  const bool has_idx = b.num_inputs() > 2 && !b.input(2).empty();
  const Shape ps = b.shape(past), us = b.shape(upd);
  const int64_t rank = int64_t(ps.size());
  int64_t axis = n.attr_int("axis", -2);
  if (axis < 0) axis += rank;
  singa::sdk::check(axis > 0 && axis < rank, "gradient of TensorScatter: attribute axis is out of range");
  if (b.needs(0)) {
    Emit e;
    e.op_type = "TensorScatter";
    e.opset = n.opset();
    e.inputs = {dy, b.zeros(us, b.dtype(upd))};
    if (has_idx) e.inputs.push_back(b.input(2));
    e.forward_attrs = true;
    b.set(0, b.emit(e)[0]);
  }
  if (!b.needs(1)) return;
  const int64_t batch = ps[0], max_len = ps[size_t(axis)], len = us[size_t(axis)];
  const bool circular = n.attr_string("mode", "linear") == "circular";
  std::vector<int64_t> starts(size_t(batch), 0);
  if (has_idx) {
    starts = b.input_ints(2);
    singa::sdk::check(int64_t(starts.size()) == batch, "gradient of TensorScatter: write_indices must hold one index per batch entry");
  }
  // The position of every (b, j), as [batch, 1.., len, 1..] expanded to update's shape.
  std::vector<int64_t> pos(size_t(batch * len));
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < len; ++j) {
      int64_t p = starts[size_t(i)] + j;
      if (circular && max_len > 0) p = ((p % max_len) + max_len) % max_len;
      pos[size_t(i * len + j)] = p;
    }
  Shape ishape(size_t(rank), 1);
  ishape[0] = batch;
  ishape[size_t(axis)] = len;
  const Value idx = b.emit("Expand", {b.reshape(b.int64s(pos), ishape), b.int64s(us)});
  b.set(1, b.emit("GatherElements", {dy, idx}, {Attr("axis", axis)}));
});

}  // namespace
