// Concat and Split: both view each tensor as [outer, axis*inner] rows and move
// one contiguous block per (row, tensor).
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>
#include <utility>

namespace singa {
namespace ops {
namespace tensor {
namespace {

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The CPU pack's 16-channel blocks ([N][C/16][H][W][16], plugins/ops_nn/
// layouts.hpp). Along the channel axis, with every C a multiple of 16, one
// image of an input is a contiguous run of C*H*W elements that goes at
// offset C_before*H*W of the output's image: the row copy below, unchanged.
constexpr const char* kBlocked16 = "ai.singa.cpu.nChw16c";
// Inputs a blocked Concat may have (the kernel declares each index); the
// blocked-layout pass (plugins/ops_nn/passes/blocked_layout.cpp) keeps
// Concats with more inputs plain.
constexpr int kMaxBlockedInputs = 64;

class Concat : public KernelBase {
 public:
  explicit Concat(const Node& node) : KernelBase(node) {
    // Concat-1 defaulted axis to 1; from opset 4 it is required.
    if (node.opset() >= 4 && !node.has_attr("axis")) sdk::fail("attribute 'axis' is required");
    axis_ = node.attr_int("axis", 1);
    // A layout other than plain: every input and the output in the same one.
    layout_ = node.output_layout(0);
    for (size_t k = 0; k < node.num_inputs(); ++k)
      if (node.input_layout(k) != layout_)
        fail("input " + std::to_string(k) + " is in layout '" + node.input_layout(k) + "' and the output in '" +
             layout_ + "': a Concat moves one layout");
  }

  void compute(Context& ctx) const {
    std::vector<Tensor> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) ins.push_back(required(ctx, i, "inputs"));
    check(!ins.empty(), "needs at least one input");
    const Shape first = ins[0].shape();
    const int64_t rank = int64_t(first.size());
    check(rank > 0, "cannot concatenate scalars");
    const size_t axis = size_t(normalize_axis(axis_, rank, "axis"));
    if (!layout_.empty()) {
      check(rank == 4 && axis == 1, "values in 16-channel blocks are concatenated along axis 1 of 4 only");
      for (size_t k = 0; k < ins.size(); ++k)
        SINGA_CHECK(ins[k].dim(1) % 16 == 0, "input " + std::to_string(k) + " has " + std::to_string(ins[k].dim(1)) +
                                                 " channels, not a multiple of 16, in 16-channel blocks");
    }
    Shape out = first;
    out[axis] = 0;
    for (size_t k = 0; k < ins.size(); ++k) {
      Shape s = ins[k].shape();
      SINGA_CHECK(ins[k].dl_dtype() == ins[0].dl_dtype(), "input " + std::to_string(k) + " has another element type");
      bool ok = s.size() == first.size();
      for (size_t d = 0; ok && d < s.size(); ++d) ok = d == axis || s[d] == first[d];
      SINGA_CHECK(ok, "input " + std::to_string(k) + " of shape " + shape_str(s) + " does not match input 0 of shape " +
                          shape_str(first) + " outside axis " + std::to_string(axis));
      out[axis] += s[axis];
    }
    Tensor y = ctx.output(0, out, ins[0].dl_dtype());
    const size_t es = elem_size(ins[0]);
    const int64_t outer = prod(out, 0, axis), inner = prod(out, axis + 1, out.size());
    const int64_t out_row = out[axis] * inner * int64_t(es);
    std::vector<int64_t> row_bytes, col_offset;
    int64_t col = 0;
    for (const Tensor& t : ins) {
      row_bytes.push_back(t.dim(int(axis)) * inner * int64_t(es));
      col_offset.push_back(col);
      col += row_bytes.back();
    }
    const int64_t n = int64_t(ins.size());
    char* dst = mutable_bytes(y);
    // Every input already in place (one row): no work to hand to the pool.
    bool in_place = outer == 1;
    for (int64_t k = 0; in_place && k < n; ++k)
      in_place = row_bytes[size_t(k)] == 0 || dst + col_offset[size_t(k)] == bytes(ins[size_t(k)]);
    if (in_place) return;
    int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, out_row / n));
    ctx.parallel_for(outer * n, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t row = i / n, k = i % n;
        if (row_bytes[size_t(k)] == 0) continue;
        char* to = dst + row * out_row + col_offset[size_t(k)];
        const char* from = bytes(ins[size_t(k)]) + row * row_bytes[size_t(k)];
        // The memory plan may have put the input where it goes in the output
        // already (core/memory_plan.hpp, `part_of`): nothing to move.
        if (to != from) std::memcpy(to, from, size_t(row_bytes[size_t(k)]));
      }
    });
  }

 private:
  int64_t axis_ = 1;
  std::string layout_;  // "" plain, or kBlocked16 for every value
};

// Concat on plain values or on 16-channel blocks (inputs 0..kMaxBlockedInputs-1).
template <size_t... I>
void register_concat(sdk::Registrar& reg, std::index_sequence<I...>) {
  reg.kernel<Concat>("", "Concat", 1, 17, "cpu", {{"T", 0, kMoveTypes}},
                     {sdk::LayoutAccept{int32_t(I), kBlocked16}..., sdk::LayoutAccept{-1, kBlocked16}});
}

class Split : public KernelBase {
 public:
  explicit Split(const Node& node) : KernelBase(node), axis_(node.attr_int("axis", 0)), opset_(node.opset()) {
    // Split-2..12 carry `split` as an attribute; Split-1 as attribute or input 1;
    // from 13 only as input 1.
    if (opset_ < 13) attr_split_ = node.attr_ints("split");
    // Split-18: `num_outputs` instead of `split` gives ceil(dim / n)-sized
    // parts, the last one smaller.
    if (opset_ >= 18 && node.has_attr("num_outputs")) {
      num_outputs_ = node.attr_int("num_outputs", 0);
      if (num_outputs_ < 1) node.fail("attribute 'num_outputs' must be positive, got " + std::to_string(num_outputs_));
      if (size_t(num_outputs_) != node.num_outputs())
        node.fail("attribute 'num_outputs' is " + std::to_string(num_outputs_) + " but the node has " +
                  std::to_string(node.num_outputs()) + " outputs");
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    Shape in = x.shape();
    check(!in.empty(), "cannot split a scalar");
    const size_t axis = size_t(normalize_axis(axis_, int64_t(in.size()), "axis"));
    const int64_t n = int64_t(ctx.num_outputs()), dim = in[axis];
    std::vector<int64_t> split = attr_split_;
    if (ctx.has_input(1) && (opset_ >= 13 || opset_ == 1)) split = read_ints(ctx.input(1), "split");
    if (num_outputs_ > 0) {
      check(split.empty(), "only one of input 'split' and attribute 'num_outputs' may be given");
      const int64_t part = (dim + n - 1) / n, last = dim - part * (n - 1);
      SINGA_CHECK(last >= 0, "axis " + std::to_string(axis) + " of size " + std::to_string(dim) +
                                 " cannot be split into " + std::to_string(n) + " parts of " + std::to_string(part) +
                                 " (the last one would be negative)");
      split.assign(size_t(n), part);
      split.back() = last;
    }
    if (split.empty()) {
      SINGA_CHECK(n > 0 && dim % n == 0, "axis " + std::to_string(axis) + " of size " + std::to_string(dim) +
                                             " cannot be split evenly into " + std::to_string(n) + " outputs");
      split.assign(size_t(n), dim / n);
    }
    SINGA_CHECK(int64_t(split.size()) == n, "split " + ints_str(split) + " has " + std::to_string(split.size()) +
                                                " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : split) {
      SINGA_CHECK(s >= 0, "split " + ints_str(split) + " has a negative size");
      sum += s;
    }
    SINGA_CHECK(sum == dim, "split " + ints_str(split) + " sums to " + std::to_string(sum) + ", not to axis size " +
                                std::to_string(dim));
    const size_t es = elem_size(x);
    const int64_t outer = prod(in, 0, axis), inner = prod(in, axis + 1, in.size());
    const int64_t in_row = dim * inner * int64_t(es);
    int64_t col = 0;
    for (int64_t k = 0; k < n; ++k) {
      Shape os = in;
      os[axis] = split[size_t(k)];
      Tensor y = ctx.output(size_t(k), os, x.dl_dtype());
      const int64_t row = split[size_t(k)] * inner * int64_t(es);
      if (row > 0) {
        char* dst = mutable_bytes(y);
        const char* src = bytes(x) + col;
        int64_t grain = std::max<int64_t>(1, 65536 / row);
        ctx.parallel_for(outer, grain, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) std::memcpy(dst + r * row, src + r * in_row, size_t(row));
        });
      }
      col += row;
    }
  }

 private:
  int64_t axis_;
  int64_t opset_;
  int64_t num_outputs_ = 0;
  std::vector<int64_t> attr_split_;
};

}  // namespace

void register_concat_split(sdk::Registrar& reg) {
  register_concat(reg, std::make_index_sequence<kMaxBlockedInputs>());
  // Split-1 could take `split` as input 1; 2..12 only as an attribute.
  reg.kernel<Split>("", "Split", 1, 1, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
  reg.kernel<Split>("", "Split", 2, 12, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Split>("", "Split", 13, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
  reg.kernel<Split>("", "Split", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
