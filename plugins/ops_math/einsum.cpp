// einsum.cpp - Einsum (opsets 12-17): numpy's einsum over any number of
// operands. The equation is parsed once; at run time every operand becomes a
// strided view with one axis per distinct label (a repeated label is a
// diagonal: its strides add up; a size-1 dim against a larger one broadcasts
// with stride 0). Operands are then contracted left to right, each pair as a
// batched GEMM [batch, M, K] x [batch, K, N], after summing out the labels
// that neither the other operand nor anything later needs.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gemm.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace math {
namespace {

constexpr uint64_t kEinsumTypes = sdk::kFloatTypes | sdk::kIntTypes;
// A term is a list of labels: letters by their character code, kEllipsis where
// "..." stands. At run time the dims "..." covers get labels kBroadcast + j,
// right-aligned across operands like numpy broadcasting.
constexpr int kEllipsis = -1;
constexpr int kBroadcast = 256;
using Term = std::vector<int>;

std::string label_name(int l) {
  if (l >= kBroadcast) return "... dim " + std::to_string(l - kBroadcast);
  return std::string("'") + char(l) + "'";
}

Term parse_term(const std::string& s, const std::string& equation, const sdk::Node& node) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.push_back(c);
    } else if (c == '.') {
      if (s.compare(i, 3, "...") != 0) node.fail("equation '" + equation + "': '.' must be part of '...'");
      if (std::count(t.begin(), t.end(), kEllipsis))
        node.fail("equation '" + equation + "': term '" + s + "' has more than one '...'");
      t.push_back(kEllipsis);
      i += 2;
    } else {
      node.fail("equation '" + equation + "': unexpected character '" + std::string(1, c) + "'");
    }
  }
  return t;
}

// An operand seen through its labels: every label once, with its size and
// its stride (in elements) in the operand's buffer.
struct View {
  std::vector<int> labels;
  Shape dims, strides;
  int find(int label) const {
    auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : int(it - labels.begin());
  }
};

template <typename W, typename S>
W to_work(S v) {
  if constexpr (std::is_same<S, half>::value || std::is_same<S, bfloat16>::value)
    return W(float(v));
  else
    return static_cast<W>(v);
}

// out[keep...] = sum over the view's other labels of src, in the order of
// `keep` (row-major), as the work type W. The loops run in the source's
// memory order (largest stride outside) so that sums over a strided axis
// still read memory sequentially; the outermost loops that write disjoint
// parts of the output are split over the pool.
template <typename W, typename S>
void gather_into(const sdk::Context& ctx, const S* src, const View& v, const std::vector<int>& keep, W* dst) {
  struct Loop {
    int64_t n, src_stride, out_stride;  // out_stride 0: a summed label
  };
  std::vector<Loop> loops;
  int64_t total = 1;
  for (size_t i = 0; i < v.labels.size(); ++i) {
    int64_t os = 0;
    const auto at = std::find(keep.begin(), keep.end(), v.labels[i]);
    if (at != keep.end()) {
      os = 1;
      for (auto it = at + 1; it != keep.end(); ++it) os *= v.dims[size_t(v.find(*it))];
      total *= v.dims[i];
    }
    if (v.dims[i] != 1) loops.push_back({v.dims[i], v.strides[i], os});
  }
  bool sums = false;
  for (const Loop& l : loops) sums = sums || l.out_stride == 0;
  if (sums || total == 0) std::fill(dst, dst + total, W(0));
  for (const Loop& l : loops)
    if (l.n == 0) return;  // an empty sum is zero
  std::stable_sort(loops.begin(), loops.end(), [](const Loop& a, const Loop& b) {
    return a.src_stride != b.src_stride ? a.src_stride > b.src_stride : a.out_stride > b.out_stride;
  });
  // merge loops that walk both buffers as one (a plain copy becomes one loop)
  std::vector<Loop> merged;
  for (const Loop& l : loops) {
    if (!merged.empty() && merged.back().src_stride == l.src_stride * l.n &&
        merged.back().out_stride == l.out_stride * l.n) {
      merged.back().n *= l.n;
      merged.back().src_stride = l.src_stride;
      merged.back().out_stride = l.out_stride;
    } else {
      merged.push_back(l);
    }
  }
  if (merged.empty()) merged.push_back({1, 0, 1});  // a single element
  size_t np = 0;  // leading loops that only visit kept labels
  int64_t outer = 1;
  while (np < merged.size() && merged[np].out_stride != 0) outer *= merged[np++].n;
  const std::vector<Loop> par(merged.begin(), merged.begin() + long(np)), seq(merged.begin() + long(np), merged.end());
  int64_t inner = 1;
  for (const Loop& l : seq) inner *= l.n;
  ctx.parallel_for(outer, std::max<int64_t>(1, 16384 / inner), [&](int64_t b, int64_t e) {
    Shape pidx(par.size(), 0), sidx(seq.size(), 0);
    int64_t psrc = 0, pout = 0, rem = b;
    for (size_t d = par.size(); d-- > 0;) {
      pidx[d] = rem % par[d].n;
      rem /= par[d].n;
      psrc += pidx[d] * par[d].src_stride;
      pout += pidx[d] * par[d].out_stride;
    }
    if (seq.empty()) {
      // a copy (no sums): runs along the innermost loop are tight loops
      const Loop& last = par.back();
      for (int64_t p = b; p < e;) {
        const int64_t run = std::min(e - p, last.n - pidx.back());
        const S* s = src + psrc;
        W* o = dst + pout;
        for (int64_t j = 0; j < run; ++j) o[j * last.out_stride] = to_work<W>(s[j * last.src_stride]);
        p += run;
        psrc += run * last.src_stride;
        pout += run * last.out_stride;
        pidx.back() += run;
        for (size_t d = par.size(); d-- > 0 && pidx[d] == par[d].n;) {
          psrc -= par[d].src_stride * par[d].n;
          pout -= par[d].out_stride * par[d].n;
          pidx[d] = 0;
          if (d == 0) break;
          psrc += par[d - 1].src_stride;
          pout += par[d - 1].out_stride;
          ++pidx[d - 1];
        }
      }
      return;
    }
    for (int64_t p = b; p < e; ++p) {
      {
        // the last sequential loop is the innermost, written out for speed
        const Loop& last = seq.back();
        const int64_t rows = inner / last.n;
        int64_t ssrc = psrc, sout = pout;
        std::fill(sidx.begin(), sidx.end(), 0);
        for (int64_t r = 0; r < rows; ++r) {
          const S* s = src + ssrc;
          W* o = dst + sout;
          for (int64_t j = 0; j < last.n; ++j)
            o[j * last.out_stride] = W(o[j * last.out_stride] + to_work<W>(s[j * last.src_stride]));
          for (size_t d = seq.size() - 1; d-- > 0;) {
            ssrc += seq[d].src_stride;
            sout += seq[d].out_stride;
            if (++sidx[d] < seq[d].n) break;
            ssrc -= seq[d].src_stride * seq[d].n;
            sout -= seq[d].out_stride * seq[d].n;
            sidx[d] = 0;
          }
        }
      }
      for (size_t d = par.size(); d-- > 0;) {
        psrc += par[d].src_stride;
        pout += par[d].out_stride;
        if (++pidx[d] < par[d].n) break;
        psrc -= par[d].src_stride * par[d].n;
        pout -= par[d].out_stride * par[d].n;
        pidx[d] = 0;
      }
    }
  });
}

template <typename W, typename S>
std::vector<W> gather(const sdk::Context& ctx, const S* src, const View& v, const std::vector<int>& keep) {
  int64_t total = 1;
  for (int l : keep) total *= v.dims[size_t(v.find(l))];
  std::vector<W> out(static_cast<size_t>(total));
  gather_into(ctx, src, v, keep, out.data());
  return out;
}

View contiguous_view(const std::vector<int>& labels, const Shape& dims) {
  View v{labels, dims, Shape(dims.size(), 1)};
  for (size_t i = dims.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * dims[i];
  return v;
}

// Y[b] = A[b] (M x K) @ B[b] (K x N) for every batch b, all contiguous.
template <typename W>
void batched_product(const sdk::Context& ctx, int64_t nb, int64_t M, int64_t K, int64_t N, const W* A, const W* B,
                     W* Y) {
  if constexpr (std::is_same<W, float>::value || std::is_same<W, double>::value) {
    auto one = [&](int64_t b) {
      blas_gemm(ctx, false, false, M, N, K, W(1), A + b * M * K, B + b * K * N, W(0), Y + b * M * N);
    };
    if (nb > 1 && M * N * K < kSmallProduct) {
      ctx.parallel_for(nb, 1, [&](int64_t bb, int64_t be) {
        for (int64_t b = bb; b < be; ++b) one(b);
      });
    } else {
      for (int64_t b = 0; b < nb; ++b) one(b);
    }
  } else {
    const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, N * K));
    ctx.parallel_for(nb * M, grain, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const int64_t b = r / M;
        const W* a = A + r * K;
        const W* bm = B + b * K * N;
        W* y = Y + r * N;
        std::fill(y, y + N, W(0));
        for (int64_t k = 0; k < K; ++k) {
          const W av = a[k];
          const W* brow = bm + k * N;
          for (int64_t j = 0; j < N; ++j) y[j] = W(y[j] + av * brow[j]);
        }
      }
    });
  }
}

// A labelled intermediate result, contiguous in its label order.
template <typename W>
struct Labelled {
  std::vector<W> data;
  View view;
};

// Contracts two operands: labels both share and `later` needs are batch dims,
// shared ones it does not need are summed by the product, the others are
// kept when needed and summed away first when not.
template <typename W, typename SA, typename SB>
Labelled<W> contract(const sdk::Context& ctx, const SA* a, const View& va, const SB* b, const View& vb,
                     const std::set<int>& later) {
  std::vector<int> batch, keep_a, sum_k, keep_b;
  for (int l : va.labels) {
    const bool in_b = vb.find(l) >= 0, needed = later.count(l) > 0;
    if (in_b && needed)
      batch.push_back(l);
    else if (in_b)
      sum_k.push_back(l);
    else if (needed)
      keep_a.push_back(l);
  }
  for (int l : vb.labels)
    if (va.find(l) < 0 && later.count(l)) keep_b.push_back(l);
  auto size_of = [&](const std::vector<int>& ls) {
    int64_t n = 1;
    for (int l : ls) n *= va.find(l) >= 0 ? va.dims[size_t(va.find(l))] : vb.dims[size_t(vb.find(l))];
    return n;
  };
  std::vector<int> order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), keep_a.begin(), keep_a.end());
  order_a.insert(order_a.end(), sum_k.begin(), sum_k.end());
  order_b.insert(order_b.end(), sum_k.begin(), sum_k.end());
  order_b.insert(order_b.end(), keep_b.begin(), keep_b.end());
  const std::vector<W> A = gather<W>(ctx, a, va, order_a);
  const std::vector<W> B = gather<W>(ctx, b, vb, order_b);
  const int64_t nb = size_of(batch), M = size_of(keep_a), K = size_of(sum_k), N = size_of(keep_b);

  std::vector<int> labels = batch;
  labels.insert(labels.end(), keep_a.begin(), keep_a.end());
  labels.insert(labels.end(), keep_b.begin(), keep_b.end());
  Shape dims;
  for (int l : labels) dims.push_back(va.find(l) >= 0 ? va.dims[size_t(va.find(l))] : vb.dims[size_t(vb.find(l))]);
  Labelled<W> r{std::vector<W>(size_t(nb * M * N)), contiguous_view(labels, dims)};
  if (!r.data.empty()) batched_product<W>(ctx, nb, M, K, N, A.data(), B.data(), r.data.data());
  return r;
}

class Einsum {
 public:
  explicit Einsum(const sdk::Node& node) {
    const std::string raw = node.attr_string("equation", "");
    std::string eq;
    for (char c : raw)
      if (c != ' ') eq += c;
    if (eq.empty()) node.fail("the equation attribute is required");
    const size_t arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    size_t start = 0;
    while (true) {
      const size_t comma = lhs.find(',', start);
      inputs_.push_back(parse_term(lhs.substr(start, comma - start), raw, node));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (inputs_.size() != node.num_inputs())
      node.fail("equation '" + raw + "' has " + std::to_string(inputs_.size()) + " operand terms but the node has " +
                std::to_string(node.num_inputs()) + " inputs");
    std::map<int, int> uses;
    bool any_ellipsis = false;
    for (const Term& t : inputs_)
      for (int l : t) {
        if (l == kEllipsis)
          any_ellipsis = true;
        else
          ++uses[l];
      }
    if (arrow != std::string::npos) {
      output_ = parse_term(eq.substr(arrow + 2), raw, node);
      std::set<int> seen;
      for (int l : output_) {
        if (l == kEllipsis) {
          if (!any_ellipsis) node.fail("equation '" + raw + "': the output has '...' but no operand has");
          continue;
        }
        if (!uses.count(l)) node.fail("equation '" + raw + "': output label " + label_name(l) + " is in no operand");
        if (!seen.insert(l).second)
          node.fail("equation '" + raw + "': output label " + label_name(l) + " appears more than once");
      }
    } else {
      // numpy's implicit output: broadcast dims first, then the labels used once, sorted
      if (any_ellipsis) output_.push_back(kEllipsis);
      for (const auto& [l, n] : uses)
        if (n == 1) output_.push_back(l);
    }
  }

  void compute(sdk::Context& ctx) const {
    const size_t n = inputs_.size();
    std::vector<sdk::Tensor> x(n);
    for (size_t k = 0; k < n; ++k) {
      x[k] = ctx.input(k);
      if (!x[k].present()) sdk::fail("operand " + std::to_string(k) + " is missing");
      if (x[k].dtype() != x[0].dtype())
        sdk::fail("operand " + std::to_string(k) + " has element type " + sdk::dtype_name(x[k].dtype()) +
                  ", operand 0 has " + sdk::dtype_name(x[0].dtype()));
    }
    // How many dims "..." covers in each operand, and the widest.
    std::vector<int64_t> ell(n, 0);
    int64_t E = 0;
    for (size_t k = 0; k < n; ++k) {
      const Term& t = inputs_[k];
      const bool has = std::count(t.begin(), t.end(), kEllipsis) > 0;
      const int64_t letters = int64_t(t.size()) - (has ? 1 : 0);
      const int64_t r = x[k].ndim();
      if (has ? r < letters : r != letters)
        sdk::fail("operand " + std::to_string(k) + " has rank " + std::to_string(r) + " but its term has " +
                  std::to_string(letters) + " labels" + (has ? " and '...'" : ""));
      ell[k] = has ? r - letters : 0;
      E = std::max(E, ell[k]);
    }
    // Per-axis labels, and every label's size (size-1 dims broadcast).
    std::vector<std::vector<int>> axis_labels(n);
    std::map<int, int64_t> size;
    for (size_t k = 0; k < n; ++k) {
      for (int l : inputs_[k]) {
        if (l != kEllipsis) {
          axis_labels[k].push_back(l);
          continue;
        }
        for (int64_t j = 0; j < ell[k]; ++j) axis_labels[k].push_back(kBroadcast + int(E - ell[k] + j));
      }
      for (size_t i = 0; i < axis_labels[k].size(); ++i) {
        const int l = axis_labels[k][i];
        const int64_t d = x[k].dim(int(i));
        auto it = size.find(l);
        if (it == size.end() || it->second == 1)
          size[l] = d;
        else if (d != 1 && d != it->second)
          sdk::fail("label " + label_name(l) + " has size " + std::to_string(it->second) + " in one place and " +
                    std::to_string(d) + " in operand " + std::to_string(k));
      }
    }
    std::vector<int> out_labels;
    for (int l : output_) {
      if (l != kEllipsis) {
        out_labels.push_back(l);
        continue;
      }
      for (int64_t j = 0; j < E; ++j) out_labels.push_back(kBroadcast + int(j));
    }
    Shape out_shape;
    for (int l : out_labels) out_shape.push_back(size.at(l));

    std::vector<View> views(n);
    for (size_t k = 0; k < n; ++k) {
      const Shape& s = x[k].shape();
      int64_t stride = 1;
      for (size_t i = s.size(); i-- > 0;) {
        const int l = axis_labels[k][i];
        const int64_t st = s[i] == 1 ? 0 : stride;  // a size-1 dim broadcasts
        stride *= s[i];
        View& v = views[k];
        const int at = v.find(l);
        if (at >= 0) {
          v.strides[size_t(at)] += st;  // a repeated label walks the diagonal
        } else {
          v.labels.insert(v.labels.begin(), l);
          v.dims.insert(v.dims.begin(), size.at(l));
          v.strides.insert(v.strides.begin(), st);
        }
      }
    }
    sdk::Tensor y = ctx.output(0, out_shape, x[0].dl_dtype());
    sdk::dispatch(
        x[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (in_mask<T>(kEinsumTypes)) run<T>(ctx, x, views, out_labels, y);
        },
        kEinsumTypes);
  }

 private:
  template <typename T>
  void run(const sdk::Context& ctx, const std::vector<sdk::Tensor>& x, const std::vector<View>& views,
           const std::vector<int>& out_labels, const sdk::Tensor& y) const {
    using W = acc_t<T>;
    std::vector<W> result;
    if (x.size() == 1) {
      if constexpr (std::is_same<W, T>::value) {
        gather_into(ctx, x[0].data<T>(), views[0], out_labels, y.data<T>());
        return;
      }
      result = gather<W>(ctx, x[0].data<T>(), views[0], out_labels);
    } else {
      std::set<int> later(out_labels.begin(), out_labels.end());
      std::vector<std::set<int>> needed(x.size());  // labels needed after contracting operand k
      for (size_t k = x.size(); k-- > 1;) {
        needed[k] = later;
        later.insert(views[k].labels.begin(), views[k].labels.end());
      }
      Labelled<W> cur = contract<W>(ctx, x[0].data<T>(), views[0], x[1].data<T>(), views[1], needed[1]);
      for (size_t k = 2; k < x.size(); ++k)
        cur = contract<W>(ctx, cur.data.data(), cur.view, x[k].data<T>(), views[k], needed[k]);
      if constexpr (std::is_same<W, T>::value) {
        gather_into(ctx, cur.data.data(), cur.view, out_labels, y.data<T>());
        return;
      }
      result = gather<W>(ctx, cur.data.data(), cur.view, out_labels);
    }
    T* out = y.data<T>();
    for (size_t i = 0; i < result.size(); ++i) {
      if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value)
        out[i] = T(float(result[i]));
      else
        out[i] = static_cast<T>(result[i]);
    }
  }

  std::vector<Term> inputs_;
  Term output_;
};

}  // namespace

void register_einsum(sdk::Registrar& reg) {
  reg.kernel<Einsum>("", "Einsum", 12, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kEinsumTypes}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
