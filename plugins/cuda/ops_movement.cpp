// Data movement on the device (kernels_data.cu): Transpose, Concat, Split,
// Slice, Gather, Expand, Tile and Pad, for every element type of 1 to 8
// bytes. Shape-like inputs (starts, indices, pads, repeats...) are read on
// the host, where they are checked exactly as the CPU kernels check them
// (ops_tensor/*.cpp), so no index reaches a kernel unchecked.
#include "register.hpp"
#include "strided.hpp"

#include <slice_rule.hpp>

#include <algorithm>
#include <cstring>

namespace singa {
namespace cuda {

namespace {

int64_t prod(const sdk::Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

char* bytes(const sdk::Tensor& t) { return static_cast<char*>(t.data_ptr()); }

class Transpose : public NodeKernel {
 public:
  explicit Transpose(const sdk::Node& node)
      : NodeKernel(node), has_perm_(node.has_attr("perm")), perm_(node.attr_ints("perm")) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    const sdk::Shape in = x.shape();
    const size_t r = in.size();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(r);
      for (size_t i = 0; i < r; ++i) perm[i] = int64_t(r - 1 - i);
    }
    check(perm.size() == r, "perm " + shape_str(perm) + " does not match input rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      p = axis_in(p, int64_t(r), "perm entry");
      check(!seen[size_t(p)], "perm " + shape_str(perm_) + " repeats an axis");
      seen[size_t(p)] = true;
    }
    const std::vector<int64_t> in_strides = contiguous_strides(in);
    sdk::Shape out(r);
    std::vector<int64_t> src_strides(r);
    for (size_t k = 0; k < r; ++k) {
      out[k] = in[size_t(perm[k])];
      src_strides[k] = in_strides[size_t(perm[k])];
    }
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    strided_copy(ctx, *this, elem_size(x), out, y.data_ptr(), contiguous_strides(out), x.data_ptr(), src_strides);
  }

 private:
  bool has_perm_;
  std::vector<int64_t> perm_;
};

// Concat and Split view each tensor as [outer, axis * inner] rows: one 2-D
// strided copy per input (Concat) or output (Split).
class Concat : public NodeKernel {
 public:
  explicit Concat(const sdk::Node& node) : NodeKernel(node) {
    // Concat-1 defaulted axis to 1; from opset 4 it is required.
    if (node.opset() >= 4 && !node.has_attr("axis")) fail("attribute 'axis' is required");
    axis_ = node.attr_int("axis", 1);
  }

  void compute(sdk::Context& ctx) const {
    std::vector<sdk::Tensor> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) ins.push_back(required(ctx, i, "inputs"));
    check(!ins.empty(), "needs at least one input");
    const sdk::Shape first = ins[0].shape();
    check(!first.empty(), "cannot concatenate scalars");
    const size_t axis = size_t(axis_in(axis_, int64_t(first.size()), "axis"));
    sdk::Shape out = first;
    out[axis] = 0;
    for (size_t k = 0; k < ins.size(); ++k) {
      const sdk::Shape s = ins[k].shape();
      check(ins[k].dtype() == ins[0].dtype(), "input " + std::to_string(k) + " has another element type");
      bool ok = s.size() == first.size();
      for (size_t d = 0; ok && d < s.size(); ++d) ok = d == axis || s[d] == first[d];
      check(ok, "input " + std::to_string(k) + " of shape " + shape_str(s) + " does not match input 0 of shape " +
                    shape_str(first) + " outside axis " + std::to_string(axis));
      out[axis] += s[axis];
    }
    sdk::Tensor y = ctx.output(0, out, ins[0].dl_dtype());
    if (y.numel() == 0) return;
    const size_t es = elem_size(y);
    const int64_t outer = prod(out, 0, axis), inner = prod(out, axis + 1, out.size()), out_row = out[axis] * inner;
    DeviceGuard guard(device_of(ctx));
    int64_t col = 0;
    for (const sdk::Tensor& t : ins) {
      const int64_t row = t.dim(int(axis)) * inner;
      strided_copy(ctx, *this, es, {outer, row}, bytes(y) + size_t(col) * es, {out_row, 1}, t.data_ptr(), {row, 1});
      col += row;
    }
  }

 private:
  int64_t axis_ = 1;
};

class Split : public NodeKernel {
 public:
  explicit Split(const sdk::Node& node) : NodeKernel(node), axis_(node.attr_int("axis", 0)), opset_(node.opset()) {
    // Split-2..12 carry `split` as an attribute; Split-1 as attribute or
    // input 1; from 13 only as input 1.
    if (opset_ < 13) attr_split_ = node.attr_ints("split");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const sdk::Shape in = x.shape();
    check(!in.empty(), "cannot split a scalar");
    const size_t axis = size_t(axis_in(axis_, int64_t(in.size()), "axis"));
    const int64_t n = int64_t(ctx.num_outputs()), dim = in[axis];
    std::vector<int64_t> split = attr_split_;
    if (ctx.has_input(1) && (opset_ >= 13 || opset_ == 1)) split = host_ints(ctx.input(1), "split");
    if (split.empty()) {
      check(n > 0 && dim % n == 0, "axis " + std::to_string(axis) + " of size " + std::to_string(dim) +
                                       " cannot be split evenly into " + std::to_string(n) + " outputs");
      split.assign(size_t(n), dim / n);
    }
    check(int64_t(split.size()) == n, "split " + shape_str(split) + " has " + std::to_string(split.size()) +
                                          " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : split) {
      check(s >= 0, "split " + shape_str(split) + " has a negative size");
      sum += s;
    }
    check(sum == dim, "split " + shape_str(split) + " sums to " + std::to_string(sum) + ", not to axis size " +
                          std::to_string(dim));
    const size_t es = elem_size(x);
    const int64_t outer = prod(in, 0, axis), inner = prod(in, axis + 1, in.size()), in_row = dim * inner;
    DeviceGuard guard(device_of(ctx));
    int64_t col = 0;
    for (int64_t k = 0; k < n; ++k) {
      sdk::Shape os = in;
      os[axis] = split[size_t(k)];
      sdk::Tensor y = ctx.output(size_t(k), os, x.dl_dtype());
      const int64_t row = split[size_t(k)] * inner;
      strided_copy(ctx, *this, es, {outer, row}, y.data_ptr(), {row, 1}, bytes(x) + size_t(col) * es, {in_row, 1});
      col += row;
    }
  }

 private:
  int64_t axis_;
  int64_t opset_;
  std::vector<int64_t> attr_split_;
};

// Attributes starts/ends/axes until opset 9; inputs (with steps) from 10.
class Slice : public NodeKernel {
 public:
  explicit Slice(const sdk::Node& node) : NodeKernel(node), from_attrs_(node.opset() < 10) {
    if (from_attrs_) {
      if (!node.has_attr("starts") || !node.has_attr("ends")) fail("attributes 'starts' and 'ends' are required");
      starts_ = node.attr_ints("starts");
      ends_ = node.attr_ints("ends");
      axes_ = node.attr_ints("axes");
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (!from_attrs_) {
      starts = host_ints(required(ctx, 1, "starts"), "starts");
      ends = host_ints(required(ctx, 2, "ends"), "ends");
      if (ctx.has_input(3)) axes = host_ints(ctx.input(3), "axes");
      if (ctx.has_input(4)) steps = host_ints(ctx.input(4), "steps");
    }
    const ops::SlicePlan plan = ops::plan_slice(x.shape(), starts, ends, axes, steps);
    const sdk::Shape& out = plan.out;
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    if (y.numel() == 0) return;
    const size_t es = elem_size(x);
    DeviceGuard guard(device_of(ctx));
    strided_copy(ctx, *this, es, out, y.data_ptr(), contiguous_strides(out), bytes(x) + plan.offset * int64_t(es),
                 plan.src_strides);
  }

 private:
  bool from_attrs_;
  std::vector<int64_t> starts_, ends_, axes_;
};

// Indices are read on the host: each is checked against [-dim, dim) and
// wrapped once before the device sees it.
class Gather : public NodeKernel {
 public:
  explicit Gather(const sdk::Node& node) : NodeKernel(node), axis_(node.attr_int("axis", 0)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data"), ind = required(ctx, 1, "indices");
    const sdk::Shape in = x.shape();
    check(!in.empty(), "data must have rank >= 1");
    check(ind.raw()->device.device_type == kDLCPU, "indices must be on the host");
    const size_t axis = size_t(axis_in(axis_, int64_t(in.size()), "axis"));
    const int64_t dim = in[axis];
    std::vector<int64_t> idx = ind.to_int_vector();
    for (int64_t& i : idx) {
      check(i >= -dim && i < dim,
            "index " + std::to_string(i) + " is out of range for a dimension of size " + std::to_string(dim));
      if (i < 0) i += dim;
    }
    const sdk::Shape is = ind.shape();
    sdk::Shape out(in.begin(), in.begin() + int64_t(axis));
    out.insert(out.end(), is.begin(), is.end());
    out.insert(out.end(), in.begin() + int64_t(axis) + 1, in.end());
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    if (y.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    const int64_t* didx = static_cast<const int64_t*>(upload(ctx, idx.data(), idx.size() * sizeof(int64_t), where()));
    check_launch(launch_gather(elem_size(x), x.data_ptr(), didx, y.data_ptr(), prod(in, 0, axis), dim,
                               int64_t(idx.size()), prod(in, axis + 1, in.size()), stream_of(ctx)),
                 "gather kernel");
  }

 private:
  int64_t axis_;
};

// Expand and Tile: one strided copy whose source strides are 0 on repeated dims.
class Expand : public NodeKernel {
 public:
  explicit Expand(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const std::vector<int64_t> target = host_ints(required(ctx, 1, "shape"), "shape");
    const sdk::Shape in = x.shape();
    const size_t rank = std::max(in.size(), target.size());
    check(rank <= SINGA_MAX_DIMS, "result rank " + std::to_string(rank) + " is too large");
    sdk::Shape out(rank);
    std::vector<int64_t> src_strides(rank, 0);
    const std::vector<int64_t> in_strides = contiguous_strides(in);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = i + in.size() >= rank ? in[i + in.size() - rank] : 1;
      const int64_t b = i + target.size() >= rank ? target[i + target.size() - rank] : 1;
      check(a == b || a == 1 || b == 1,
            "input of shape " + shape_str(in) + " cannot be expanded to " + shape_str(target));
      check(b >= 0, "shape " + shape_str(target) + " has a negative dimension");
      out[i] = a == 1 ? b : a;
      if (a != 1) src_strides[i] = in_strides[i + in.size() - rank];
    }
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    strided_copy(ctx, *this, elem_size(x), out, y.data_ptr(), contiguous_strides(out), x.data_ptr(), src_strides);
  }
};

class Tile : public NodeKernel {
 public:
  explicit Tile(const sdk::Node& node) : NodeKernel(node), legacy_(node.opset() < 6) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const sdk::Shape in = x.shape();
    std::vector<int64_t> repeats;
    if (legacy_) {
      // Tile-1: a scalar count of tiles along one scalar axis.
      const std::vector<int64_t> tiles = host_ints(required(ctx, 1, "tiles"), "tiles");
      const std::vector<int64_t> axis = host_ints(required(ctx, 2, "axis"), "axis");
      check(tiles.size() == 1 && axis.size() == 1, "tiles and axis must hold one value each");
      repeats.assign(in.size(), 1);
      repeats[size_t(axis_in(axis[0], int64_t(in.size()), "axis"))] = tiles[0];
    } else {
      repeats = host_ints(required(ctx, 1, "repeats"), "repeats");
    }
    check(repeats.size() == in.size(), "repeats " + shape_str(repeats) + " must have one entry per input dimension " +
                                           shape_str(in));
    // The output viewed as [rep_0, d_0, rep_1, d_1, ...] is the tiled tensor, row-major.
    const std::vector<int64_t> in_strides = contiguous_strides(in);
    sdk::Shape out(in.size()), view;
    std::vector<int64_t> src_strides;
    for (size_t i = 0; i < in.size(); ++i) {
      check(repeats[i] >= 0, "repeats " + shape_str(repeats) + " has a negative entry");
      out[i] = in[i] * repeats[i];
      view.insert(view.end(), {repeats[i], in[i]});
      src_strides.insert(src_strides.end(), {0, in_strides[i]});
    }
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    strided_copy(ctx, *this, elem_size(x), view, y.data_ptr(), contiguous_strides(view), x.data_ptr(), src_strides);
  }

 private:
  bool legacy_;
};

// Pads are attributes until opset 10 ("paddings" in opset 1) and inputs
// from 11; negative pads crop.
class Pad : public NodeKernel {
 public:
  explicit Pad(const sdk::Node& node) : NodeKernel(node), opset_(node.opset()) {
    const std::string mode = node.attr_string("mode", "constant");
    if (mode == "reflect")
      mode_ = PadMode::kReflect;
    else if (mode == "edge")
      mode_ = PadMode::kEdge;
    else if (mode != "constant")
      fail("attribute 'mode' must be constant, reflect or edge, got '" + mode + "'");
    if (opset_ < 11) {
      const char* name = opset_ < 2 ? "paddings" : "pads";
      if (!node.has_attr(name)) fail(std::string("attribute '") + name + "' is required");
      attr_pads_ = node.attr_ints(name);
      attr_value_ = node.attr_float("value", 0.f);
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    const sdk::Shape in = x.shape();
    const size_t r = in.size(), es = elem_size(x);
    const std::vector<int64_t> pads = opset_ < 11 ? attr_pads_ : host_ints(required(ctx, 1, "pads"), "pads");
    check(pads.size() == 2 * r, "pads " + shape_str(pads) + " must have 2 * rank = " + std::to_string(2 * r) + " entries");
    check(r <= size_t(kMaxPadDims), "rank " + std::to_string(r) + " is above " + std::to_string(kMaxPadDims));
    PadPlan p;
    p.rank = int(r);
    p.mode = mode_;
    sdk::Shape out(r);
    for (size_t d = 0; d < r; ++d) {
      out[d] = in[d] + pads[d] + pads[d + r];
      check(out[d] >= 0, "pads " + shape_str(pads) + " crop axis " + std::to_string(d) + " of size " +
                             std::to_string(in[d]) + " below zero");
      check(mode_ == PadMode::kConstant || in[d] > 0 || out[d] == 0,
            "cannot " + std::string(mode_ == PadMode::kReflect ? "reflect" : "edge") + "-pad the empty axis " +
                std::to_string(d));
      p.out[d] = out[d];
      p.in[d] = in[d];
      p.begin[d] = pads[d];
    }
    if (mode_ == PadMode::kConstant) p.value = fill_value(ctx, x);
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    p.n = y.numel();
    if (p.n == 0) return;
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_pad(es, x.data_ptr(), y.data_ptr(), p, stream_of(ctx)), "pad kernel");
  }

 private:
  // The constant-mode fill element's bytes, in x's type.
  uint64_t fill_value(const sdk::Context& ctx, const sdk::Tensor& x) const {
    uint64_t bits = 0;
    if (opset_ >= 11) {
      if (!ctx.has_input(2)) return 0;  // zero bytes are 0 in every type
      sdk::Tensor v = ctx.input(2);
      check(v.raw()->device.device_type == kDLCPU, "constant_value must be on the host");
      check(v.numel() == 1, "constant_value must hold one element, got shape " + shape_str(v.shape()));
      check(v.dtype() == x.dtype(), "constant_value must have the element type of data");
      std::memcpy(&bits, v.data_ptr(), elem_size(v));
      return bits;
    }
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T v = T(attr_value_);
      std::memcpy(&bits, &v, sizeof(T));
    });
    return bits;
  }

  int64_t opset_;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> attr_pads_;
  float attr_value_ = 0.f;
};

}  // namespace

void register_movement(sdk::Registrar& reg) {
  const uint64_t t = kFixedSizeTypes;
  reg.kernel<Transpose>("", "Transpose", 1, 17, "cuda", {{"T", 0, t}});
  reg.kernel<Concat>("", "Concat", 1, 17, "cuda", {{"T", 0, t}});
  reg.kernel<Split>("", "Split", 1, 1, "cuda", {{"T", 0, t}}, 0, input_bit(1));
  reg.kernel<Split>("", "Split", 2, 12, "cuda", {{"T", 0, t}});
  reg.kernel<Split>("", "Split", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, t}}, 0, input_bit(1));
  reg.kernel<Slice>("", "Slice", 1, 9, "cuda", {{"T", 0, t}});
  reg.kernel<Slice>("", "Slice", 10, 17, "cuda", {{"T", 0, t}, {"Tind", 1, kI32I64}}, 0,
                    input_bit(1) | input_bit(2) | input_bit(3) | input_bit(4));
  reg.kernel<Gather>("", "Gather", 1, 17, "cuda", {{"T", 0, t}, {"Tind", 1, kI32I64}}, 0, input_bit(1));
  reg.kernel<Expand>("", "Expand", 8, 17, "cuda", {{"T", 0, t}}, 0, input_bit(1));
  reg.kernel<Tile>("", "Tile", 1, 5, "cuda", {{"T", 0, t}}, 0, input_bit(1) | input_bit(2));
  reg.kernel<Tile>("", "Tile", 6, 17, "cuda", {{"T", 0, t}}, 0, input_bit(1));
  reg.kernel<Pad>("", "Pad", 1, 1, "cuda", {{"T", 0, t}});
  reg.kernel<Pad>("", "Pad", 2, 10, "cuda", {{"T", 0, t}});
  reg.kernel<Pad>("", "Pad", 11, 17, "cuda", {{"T", 0, t}}, 0, input_bit(1) | input_bit(2));
}

}  // namespace cuda
}  // namespace singa
