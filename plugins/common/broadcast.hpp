// broadcast.hpp - numpy-style (ONNX multidirectional) broadcasting for op packs.
// Internal to the in-tree op packs: header-only, links nothing from the core.
#ifndef SINGA_PLUGINS_BROADCAST_HPP
#define SINGA_PLUGINS_BROADCAST_HPP

#include <singa/kernel.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace singa {
namespace ops {

using sdk::Shape;

inline std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// The broadcast result of several shapes; throws naming both shapes when they
// cannot be broadcast.
inline Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[s.size() - 1 - i];
      int64_t& o = out[rank - 1 - i];
      if (d == o || d == 1) continue;
      if (o == 1) { o = d; continue; }
      std::string all;
      for (const auto& t : shapes) all += shape_str(t) + " ";
      sdk::fail("shapes cannot be broadcast: " + all);
    }
  }
  return out;
}

// Iterates an output of shape `out` whose N inputs broadcast into it. The
// innermost run of `n` elements is handed to
//   f(int64 out_offset, const int64* in_offsets, const int64* in_steps, int64 n)
// where in_steps[k] is 0 (input k repeats along the run) or 1 (contiguous).
// Adjacent dims are coalesced so the inner run is as long as possible.
template <size_t N>
class Broadcaster {
 public:
  Broadcaster(const Shape& out, const std::array<Shape, N>& ins) {
    size_t rank = out.size();
    // per-input strides in elements, 0 on broadcast dims
    std::vector<std::array<int64_t, N>> strides(rank);
    for (size_t k = 0; k < N; ++k) {
      const Shape& s = ins[k];
      int64_t st = 1;
      for (size_t i = 0; i < rank; ++i) {
        size_t d = rank - 1 - i;
        int64_t dim = i < s.size() ? s[s.size() - 1 - i] : 1;
        strides[d][k] = (dim == 1) ? 0 : st;
        st *= dim;
      }
    }
    // coalesce dims (drop size-1 dims, merge when every input stays contiguous)
    for (size_t d = 0; d < rank; ++d) {
      if (out[d] == 1) continue;
      if (!dims_.empty()) {
        bool merge = true;
        for (size_t k = 0; k < N; ++k)
          if (strides_.back()[k] != strides[d][k] * out[d]) merge = false;
        if (merge) {
          dims_.back() *= out[d];
          strides_.back() = strides[d];
          continue;
        }
      }
      dims_.push_back(out[d]);
      strides_.push_back(strides[d]);
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      strides_.push_back({});
      for (size_t k = 0; k < N; ++k) strides_.back()[k] = 0;
    }
    inner_ = dims_.back();
    total_ = 1;
    for (int64_t d : dims_) total_ *= d;
    for (size_t k = 0; k < N; ++k) {
      steps_[k] = strides_.back()[k];
      general_ = general_ || (steps_[k] != 0 && steps_[k] != 1);
    }
  }
  int64_t total() const { return total_; }
  int64_t inner() const { return inner_; }
  int64_t rows() const { return inner_ ? total_ / inner_ : 0; }  // an empty output has a 0 dim

  // Calls f for outer rows [row_begin, row_end).
  template <typename F>
  void run_rows(int64_t row_begin, int64_t row_end, F&& f) const {
    size_t outer = dims_.size() - 1;
    std::array<int64_t, N> off{};
    for (int64_t r = row_begin; r < row_end; ++r) {
      int64_t rem = r;
      off.fill(0);
      for (size_t i = outer; i-- > 0;) {
        int64_t idx = rem % dims_[i];
        rem /= dims_[i];
        for (size_t k = 0; k < N; ++k) off[k] += idx * strides_[i][k];
      }
      f(r * inner_, off.data(), steps_.data(), inner_);
    }
  }

 private:
  std::vector<int64_t> dims_;
  std::vector<std::array<int64_t, N>> strides_;
  std::array<int64_t, N> steps_{};
  int64_t inner_ = 1, total_ = 1;
  bool general_ = false;
};

// Elementwise op over broadcast inputs, parallel over rows:
//   out[i] = op(a[...], b[...]).
template <typename TOut, typename TA, typename TB, typename Op>
void binary_broadcast(const sdk::Context& ctx, const sdk::Tensor& a, const sdk::Tensor& b, const sdk::Tensor& out, Op op) {
  Broadcaster<2> bc(out.shape(), {a.shape(), b.shape()});
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TOut* po = out.data<TOut>();
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, bc.inner()));
  ctx.parallel_for(bc.rows(), grain, [&](int64_t rb, int64_t re) {
    bc.run_rows(rb, re, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
      const TA* x = pa + off[0];
      const TB* y = pb + off[1];
      TOut* z = po + o;
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], y[i]);
      } else if (st[0] == 1) {
        TB yv = y[0];
        for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], yv);
      } else if (st[1] == 1) {
        TA xv = x[0];
        for (int64_t i = 0; i < n; ++i) z[i] = op(xv, y[i]);
      } else {
        TOut v = op(x[0], y[0]);
        for (int64_t i = 0; i < n; ++i) z[i] = v;
      }
    });
  });
}

}  // namespace ops
}  // namespace singa
#endif
