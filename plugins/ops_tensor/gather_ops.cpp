// Index-driven reads: Gather, GatherElements, GatherND and Compress. Indices
// are validated (negative ones wrap once) before any byte moves.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

class IndexKernel : public KernelBase {
 protected:
  using KernelBase::KernelBase;
  // Wraps negative indices and rejects those outside [-dim, dim).
  int64_t wrap(int64_t i, int64_t dim, const char* what) const {
    if (i < -dim || i >= dim)
      fail(std::string(what) + " " + std::to_string(i) + " is out of range for a dimension of size " + std::to_string(dim));
    return i < 0 ? i + dim : i;
  }
};

class Gather : public IndexKernel {
 public:
  explicit Gather(const Node& node) : IndexKernel(node), axis_(node.attr_int("axis", 0)) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data"), ind = required(ctx, 1, "indices");
    const Shape in = x.shape();
    check(!in.empty(), "data must have rank >= 1");
    const size_t axis = size_t(normalize_axis(axis_, int64_t(in.size()), "axis"));
    const int64_t dim = in[axis];
    std::vector<int64_t> idx = read_index_tensor(ind);
    for (int64_t& i : idx) i = wrap(i, dim, "index");
    Shape out(in.begin(), in.begin() + int64_t(axis));
    for (int64_t d : ind.shape()) out.push_back(d);
    out.insert(out.end(), in.begin() + int64_t(axis) + 1, in.end());
    Tensor y = ctx.output(0, out, x.dl_dtype());
    const int64_t outer = prod(in, 0, axis), n = int64_t(idx.size());
    const size_t chunk = size_t(prod(in, axis + 1, in.size())) * elem_size(x);
    if (chunk == 0) return;
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    int64_t grain = std::max<int64_t>(1, int64_t(65536 / chunk));
    ctx.parallel_for(outer * n, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t o = i / n, j = i % n;
        std::memcpy(dst + size_t(i) * chunk, src + size_t(o * dim + idx[size_t(j)]) * chunk, chunk);
      }
    });
  }

 private:
  int64_t axis_;
};

class GatherElements : public IndexKernel {
 public:
  explicit GatherElements(const Node& node) : IndexKernel(node), axis_(node.attr_int("axis", 0)) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data"), ind = required(ctx, 1, "indices");
    const Shape in = x.shape(), is = ind.shape();
    check(!in.empty(), "data must have rank >= 1");
    SINGA_CHECK(is.size() == in.size(),
                "indices of shape " + shape_str(is) + " must have the rank of data " + shape_str(in));
    const size_t axis = size_t(normalize_axis(axis_, int64_t(in.size()), "axis"));
    for (size_t d = 0; d < in.size(); ++d)
      SINGA_CHECK(d == axis || is[d] <= in[d], "indices of shape " + shape_str(is) + " exceed data of shape " +
                                                   shape_str(in) + " on axis " + std::to_string(d));
    std::vector<int64_t> idx = read_index_tensor(ind);
    for (int64_t& i : idx) i = wrap(i, in[axis], "index");
    Tensor y = ctx.output(0, is, x.dl_dtype());
    const Shape ds = contiguous_strides(in);
    const size_t es = elem_size(x), r = in.size();
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    ctx.parallel_for(int64_t(idx.size()), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t rem = i, off = 0;
        for (size_t d = r; d-- > 0;) {
          int64_t c = rem % is[d];
          rem /= is[d];
          off += (d == axis ? idx[size_t(i)] : c) * ds[d];
        }
        std::memcpy(dst + size_t(i) * es, src + size_t(off) * es, es);
      }
    });
  }

 private:
  int64_t axis_;
};

class GatherND : public IndexKernel {
 public:
  explicit GatherND(const Node& node) : IndexKernel(node), batch_dims_(node.attr_int("batch_dims", 0)) {
    if (batch_dims_ < 0) sdk::fail("attribute 'batch_dims' must be >= 0, got " + std::to_string(batch_dims_));
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data"), ind = required(ctx, 1, "indices");
    const Shape in = x.shape(), is = ind.shape();
    const size_t b = size_t(batch_dims_);
    check(!is.empty() && !in.empty(), "data and indices must have rank >= 1");
    SINGA_CHECK(b < is.size() && b < in.size(), "batch_dims " + std::to_string(b) +
                                                    " must be below the ranks of data " + shape_str(in) +
                                                    " and indices " + shape_str(is));
    for (size_t d = 0; d < b; ++d)
      SINGA_CHECK(in[d] == is[d],
                  "batch dimensions of data " + shape_str(in) + " and indices " + shape_str(is) + " differ");
    const size_t k = size_t(is.back());
    SINGA_CHECK(k <= in.size() - b, "indices' last dimension " + std::to_string(k) + " exceeds data rank " +
                                        std::to_string(in.size()) + " minus batch_dims " + std::to_string(b));
    Shape out(is.begin(), is.end() - 1);
    out.insert(out.end(), in.begin() + int64_t(b + k), in.end());
    std::vector<int64_t> idx = read_index_tensor(ind);
    const Shape ds = contiguous_strides(in);
    const int64_t batches = prod(in, 0, b), tuples = prod(is, b, is.size() - 1);
    const int64_t batch_elems = prod(in, b, in.size()), slice = prod(in, b + k, in.size());
    std::vector<int64_t> offsets(size_t(batches * tuples));
    for (int64_t t = 0; t < batches * tuples; ++t) {
      int64_t off = (t / std::max<int64_t>(1, tuples)) * batch_elems;
      for (size_t j = 0; j < k; ++j) off += wrap(idx[size_t(t) * k + j], in[b + j], "index") * ds[b + j];
      offsets[size_t(t)] = off;
    }
    Tensor y = ctx.output(0, out, x.dl_dtype());
    const size_t chunk = size_t(slice) * elem_size(x);
    if (chunk == 0) return;
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    ctx.parallel_for(int64_t(offsets.size()), std::max<int64_t>(1, int64_t(65536 / chunk)), [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t)
        std::memcpy(dst + size_t(t) * chunk, src + size_t(offsets[size_t(t)]) * elem_size(x), chunk);
    });
  }

 private:
  int64_t batch_dims_;
};

class Compress : public KernelBase {
 public:
  explicit Compress(const Node& node) : KernelBase(node), has_axis_(node.has_attr("axis")), axis_(node.attr_int("axis", 0)) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input"), cond = required(ctx, 1, "condition");
    SINGA_CHECK(cond.ndim() == 1, "condition must be 1-d, got shape " + shape_str(cond.shape()));
    const Shape in = x.shape();
    size_t axis = 0;
    Shape view = in;  // without an axis the input is flattened
    if (has_axis_) {
      check(!in.empty(), "input must have rank >= 1 when 'axis' is given");
      axis = size_t(normalize_axis(axis_, int64_t(in.size()), "axis"));
    } else {
      view = {x.numel()};
    }
    const int64_t dim = view[axis];
    const bool* c = cond.data<bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.numel(); ++i) {
      if (!c[i]) continue;
      if (i >= dim) fail("condition selects index " + std::to_string(i) + " beyond the axis size " + std::to_string(dim));
      keep.push_back(i);
    }
    Shape out = has_axis_ ? in : Shape{0};
    out[axis] = int64_t(keep.size());
    Tensor y = ctx.output(0, out, x.dl_dtype());
    const int64_t outer = prod(view, 0, axis), n = int64_t(keep.size());
    const size_t chunk = size_t(prod(view, axis + 1, view.size())) * elem_size(x);
    if (chunk == 0 || n == 0) return;
    const char* src = bytes(x);
    char* dst = mutable_bytes(y);
    ctx.parallel_for(outer * n, std::max<int64_t>(1, int64_t(65536 / chunk)), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        std::memcpy(dst + size_t(i) * chunk, src + size_t((i / n) * dim + keep[size_t(i % n)]) * chunk, chunk);
    });
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

}  // namespace

void register_gather_ops(sdk::Registrar& reg) {
  reg.kernel<Gather>("", "Gather", 1, 17, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<GatherElements>("", "GatherElements", 11, 17, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<GatherND>("", "GatherND", 11, 17, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Compress>("", "Compress", 9, 17, "cpu", {{"T", 0, kMoveTypes}, {"T1", 1, sdk::bit(SINGA_ONNX_BOOL)}}, 0,
                       input_bit(1));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
