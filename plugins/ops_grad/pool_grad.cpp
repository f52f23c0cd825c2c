// MaxPoolGrad(dY, Indices, X) and AveragePoolGrad(dY, X): the pooled
// gradient goes back to the input positions each window read.
#include "register.hpp"

#include <nn_common.hpp>
#include <pool_f32.hpp>
#include <sgemm.hpp>
#include <spatial.hpp>

#include <algorithm>
#include <atomic>

namespace singa {
namespace grad {
namespace {

using nn::Geometry;
using nn::NodeKernel;
using nn::Shape;

// MaxPool's Indices (row-major, counting from the start of the tensor) say
// where each output came from; each lies in its own (n, c) plane, so planes
// can be filled in parallel.
class MaxPoolGrad : public NodeKernel {
 public:
  // The forward node's attributes tell whether the windows are the usual
  // 2x2/stride-2 ones, which have a vector path.
  explicit MaxPoolGrad(const sdk::Node& node) : NodeKernel(node) {
    auto ints = [&](const char* a) { return node.attr_ints(a); };
    const std::vector<int64_t> two{2, 2}, one{1, 1};
    const std::vector<int64_t> pads = ints("pads"), dil = ints("dilations");
    const std::string ap = node.attr_string("auto_pad", "NOTSET");
    two_by_two_ = ints("kernel_shape") == two && ints("strides") == two && (dil.empty() || dil == one) &&
                  (pads.empty() || pads == std::vector<int64_t>(4, 0)) && (ap == "NOTSET" || ap == "VALID" || ap.empty());
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), idx = required(ctx, 1, "Indices"), x = required(ctx, 2, "X");
    check(idx.dtype() == SINGA_ONNX_INT64 && idx.shape() == dy.shape(), "Indices must be int64 of dY's shape");
    const Shape xs = x.shape(), ys = dy.shape();
    check(xs.size() >= 3 && ys.size() == xs.size(), "X and dY must be [N, C, ...] of one rank");
    const int64_t planes = xs[0] * xs[1], in_size = x.numel() / std::max<int64_t>(1, planes);
    const int64_t out_size = dy.numel() / std::max<int64_t>(1, planes);
    sdk::Tensor dx = ctx.output(0, xs, x.dl_dtype());
    // (Output rows narrower than 8 fill too little of a vector to beat the
    // scatter.)
    if (two_by_two_ && x.dtype() == SINGA_ONNX_FLOAT && xs.size() == 4 && ys[2] == xs[2] / 2 && ys[3] == xs[3] / 2 &&
        ys[3] >= 8 && fast::avx512()) {
      std::atomic<bool> ok{true};
      const float* g = dy.data<float>();
      const int64_t* ix = idx.data<int64_t>();
      float* o = dx.data<float>();
      ctx.parallel_for(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, in_size)), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e && ok; ++p)
          if (!nn::max_pool_2x2_grad_f32(g + p * out_size, ix + p * out_size, p * in_size, xs[2], xs[3], ys[2], ys[3],
                                         o + p * in_size))
            ok = false;
      });
      if (ok) return;  // else not a 2x2 pooling's Indices: the generic scatter below redoes it
    }
    nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* g = dy.data<T>();
      const int64_t* ix = idx.data<int64_t>();
      T* o = dx.data<T>();
      std::atomic<bool> bad{false};
      ctx.parallel_for(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, in_size)), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          T* op = o + p * in_size;
          std::fill(op, op + in_size, T(0));
          for (int64_t j = p * out_size; j < (p + 1) * out_size; ++j) {
            const int64_t at = ix[j] - p * in_size;
            if (at < 0 || at >= in_size) {
              if (ix[j] != -1) bad = true;  // -1: a window entirely in padding
              continue;
            }
            op[at] += g[j];
          }
        }
      });
      check(!bad, "Indices point outside their (n, c) plane");
    });
  }

 private:
  bool two_by_two_ = false;
};

// One axis of a window: input positions start + k * d for k in [kb, ke)
// lie inside [lo, hi). (Mirrors ops_nn's pooling.)
struct Taps {
  int64_t start, d, kb, ke;
  int64_t count() const { return ke > kb ? ke - kb : 0; }
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline Taps taps(int64_t o, int64_t s, int64_t pb, int64_t d, int64_t k, int64_t lo, int64_t hi) {
  Taps t{o * s - pb, d, 0, k};
  if (t.start < lo) t.kb = ceil_div(lo - t.start, d);
  if (t.start + (k - 1) * d >= hi) t.ke = hi > t.start ? ceil_div(hi - t.start, d) : 0;
  if (t.ke < t.kb) t.ke = t.kb;
  return t;
}

class AveragePoolGrad : public NodeKernel {
 public:
  explicit AveragePoolGrad(const sdk::Node& node)
      : NodeKernel(node), attrs_(node, *this), include_pad_(node.attr_int("count_include_pad", 0) != 0) {
    if (attrs_.kernel_shape.empty()) fail("attribute kernel_shape is required");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X");
    const Shape xs = x.shape();
    Geometry g = nn::window_geometry(attrs_, nn::spatial_dims(xs, "X", *this), attrs_.kernel_shape, *this);
    Shape ys{xs[0], xs[1]};
    for (int64_t d : g.out_dims()) ys.push_back(d);
    check(dy.shape() == ys, "dY has shape " + nn::shape_str(dy.shape()) + ", the pooling's output is " + nn::shape_str(ys));
    sdk::Tensor dx = ctx.output(0, xs, x.dl_dtype());
    const int64_t planes = xs[0] * xs[1], in_size = g.in_size(), out_size = g.out_size(), H = g.in[1], W = g.in[2];
    nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* gy = dy.data<T>();
      T* o = dx.data<T>();
      ctx.parallel_for(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, in_size)), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          T* op = o + p * in_size;
          std::fill(op, op + in_size, T(0));
          int64_t j = p * out_size;
          for (int64_t od = 0; od < g.out[0]; ++od) {
            Taps td = taps(od, g.s[0], g.pb[0], g.d[0], g.k[0], 0, g.in[0]);
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
              Taps th = taps(oh, g.s[1], g.pb[1], g.d[1], g.k[1], 0, g.in[1]);
              for (int64_t ow = 0; ow < g.out[2]; ++ow, ++j) {
                Taps tw = taps(ow, g.s[2], g.pb[2], g.d[2], g.k[2], 0, g.in[2]);
                int64_t count = td.count() * th.count() * tw.count();
                if (include_pad_) {
                  count = taps(od, g.s[0], g.pb[0], g.d[0], g.k[0], -g.pb[0], g.in[0] + g.pe[0]).count() *
                          taps(oh, g.s[1], g.pb[1], g.d[1], g.k[1], -g.pb[1], g.in[1] + g.pe[1]).count() *
                          taps(ow, g.s[2], g.pb[2], g.d[2], g.k[2], -g.pb[2], g.in[2] + g.pe[2]).count();
                }
                if (count <= 0) continue;
                const T v = gy[j] / T(count);
                for (int64_t kd = td.kb; kd < td.ke; ++kd)
                  for (int64_t kh = th.kb; kh < th.ke; ++kh) {
                    T* row = op + ((td.start + kd * td.d) * H + th.start + kh * th.d) * W;
                    for (int64_t kw = tw.kb; kw < tw.ke; ++kw) row[tw.start + kw * tw.d] += v;
                  }
              }
            }
          }
        }
      });
    });
  }

 private:
  nn::WindowAttrs attrs_;
  bool include_pad_;
};

}  // namespace

void register_pool_grads(sdk::Registrar& reg) {
  reg.kernel<MaxPoolGrad>(kDomain, "MaxPoolGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}});
  reg.kernel<AveragePoolGrad>(kDomain, "AveragePoolGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
