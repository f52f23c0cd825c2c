// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim values
// of every head's vector by the angles whose cosines and sines the caches
// hold:
//
//   X [B, H, S, D], or [B, S, H * D] with attribute num_heads;
//   cos_cache, sin_cache [P, R/2] picked by position_ids [B, S], or
//   [B, S, R/2] without position_ids;
//   pairs (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2), the pair being
//   (i, i + R/2) or, with interleaved = 1, (2i, 2i + 1); the values past R
//   pass through.
#include "nn_common.hpp"
#include "register.hpp"

#include <cstring>

namespace singa {
namespace nn {
namespace {

class RotaryEmbedding : public NodeKernel {
 public:
  explicit RotaryEmbedding(const sdk::Node& node)
      : NodeKernel(node),
        interleaved_(node.attr_int("interleaved", 0)),
        rotary_dim_(node.attr_int("rotary_embedding_dim", 0)),
        num_heads_(node.attr_int("num_heads", 0)) {
    if (interleaved_ != 0 && interleaved_ != 1)
      fail("attribute interleaved must be 0 or 1, got " + std::to_string(interleaved_));
    if (rotary_dim_ < 0) fail("attribute rotary_embedding_dim must not be negative, got " + std::to_string(rotary_dim_));
    if (num_heads_ < 0) fail("attribute num_heads must not be negative, got " + std::to_string(num_heads_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor cosc = required(ctx, 1, "cos_cache");
    sdk::Tensor sinc = required(ctx, 2, "sin_cache");
    sdk::Tensor pos = ctx.input(3);
    const Shape xs = x.shape();
    SINGA_CHECK(xs.size() == 3 || xs.size() == 4,
                "X must be 3-D [B, S, hidden] or 4-D [B, H, S, D], got " + shape_str(xs));
    check(cosc.dtype() == x.dtype() && sinc.dtype() == x.dtype(), "cos_cache and sin_cache must have X's element type");
    const int64_t B = xs[0];
    int64_t H, S, D;
    if (xs.size() == 4) {
      H = xs[1], S = xs[2], D = xs[3];
    } else {
      S = xs[1];
      check(num_heads_ > 0, "a 3-D X needs attribute num_heads");
      SINGA_CHECK(xs[2] % num_heads_ == 0, "X's hidden size " + std::to_string(xs[2]) +
                                               " is not a multiple of num_heads " + std::to_string(num_heads_));
      H = num_heads_, D = xs[2] / num_heads_;
    }
    const int64_t R = rotary_dim_ == 0 ? D : rotary_dim_;
    SINGA_CHECK(R <= D && R % 2 == 0, "rotary_embedding_dim " + std::to_string(R) +
                                          " must be even and at most the head size " + std::to_string(D));
    const int64_t half = R / 2;
    SINGA_CHECK(cosc.shape() == sinc.shape(), "cos_cache " + shape_str(cosc.shape()) + " and sin_cache " +
                                                  shape_str(sinc.shape()) + " must have one shape");
    const Shape cs = cosc.shape();
    std::vector<int64_t> rows(size_t(B * S));  // the cache row of each (b, s)
    if (pos.present()) {
      SINGA_CHECK((pos.shape() == Shape{B, S}), "position_ids must be [" + std::to_string(B) + ", " +
                                                    std::to_string(S) + "], got " + shape_str(pos.shape()));
      SINGA_CHECK(cs.size() == 2 && cs[1] == half, "with position_ids, cos_cache must be [max_position, " +
                                                       std::to_string(half) + "], got " + shape_str(cs));
      check(pos.dtype() == SINGA_ONNX_INT64, "position_ids must be int64");
      const int64_t* p = pos.data<int64_t>();
      for (int64_t i = 0; i < B * S; ++i) {
        SINGA_CHECK(p[i] >= 0 && p[i] < cs[0], "position_ids holds " + std::to_string(p[i]) + ", outside the cache's " +
                                                   std::to_string(cs[0]) + " positions");
        rows[size_t(i)] = p[i];
      }
    } else {
      SINGA_CHECK((cs == Shape{B, S, half}), "without position_ids, cos_cache must be [" + std::to_string(B) + ", " +
                                                 std::to_string(S) + ", " + std::to_string(half) + "], got " +
                                                 shape_str(cs));
      for (int64_t i = 0; i < B * S; ++i) rows[size_t(i)] = i;
    }
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (y.numel() == 0) return;
    const bool four = xs.size() == 4;
    const bool inter = interleaved_ == 1;
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      const T* pc = cosc.data<T>();
      const T* ps = sinc.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(B * S * H, std::max<int64_t>(1, 4096 / D), [&](int64_t tb, int64_t te) {
        for (int64_t t = tb; t < te; ++t) {
          const int64_t h = t % H, bs = t / H, s = bs % S, b = bs / S;
          const int64_t off = four ? ((b * H + h) * S + s) * D : bs * H * D + h * D;
          const T* xr = px + off;
          T* yr = py + off;
          const T* c = pc + rows[size_t(bs)] * half;
          const T* sn = ps + rows[size_t(bs)] * half;
          const int64_t i1 = inter ? 2 : 1, o2 = inter ? 1 : half;
          for (int64_t i = 0; i < half; ++i) {
            const A x1 = to_acc<A>(xr[i * i1]), x2 = to_acc<A>(xr[i * i1 + o2]);
            const A cv = to_acc<A>(c[i]), sv = to_acc<A>(sn[i]);
            yr[i * i1] = from_acc<T>(A(cv * x1 - sv * x2));
            yr[i * i1 + o2] = from_acc<T>(A(sv * x1 + cv * x2));
          }
          if (D > R) std::memcpy(yr + R, xr + R, size_t(D - R) * sizeof(T));
        }
      });
    });
  }

 private:
  int64_t interleaved_, rotary_dim_, num_heads_;
};

}  // namespace

void register_rotary_embedding(sdk::Registrar& reg) {
  reg.kernel<RotaryEmbedding>("", "RotaryEmbedding", 23, SINGA_VERSION_OPEN, "cpu",
                              {{"T", 0, kRealTypes}, {"M", 3, sdk::bit(SINGA_ONNX_INT64)}});
}

}  // namespace nn
}  // namespace singa
