// Col2Im (opset 18): the inverse of im2col. input (N, C * prod(block_shape), L)
// holds, for each of the L sliding-block positions, the block's values; they
// are summed back into an image of shape image_shape (N, C, *image_shape),
// with the block positions set by strides, dilations and pads as in Conv.
#include "nn_common.hpp"
#include "register.hpp"

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace singa {
namespace nn {
namespace {

template <class T, bool kInt>
struct SumType { using type = acc_t<T>; };
template <class T>
struct SumType<T, true> { using type = std::make_unsigned_t<T>; };

class Col2Im : public NodeKernel {
 public:
  explicit Col2Im(const sdk::Node& node)
      : NodeKernel(node),
        dilations_(node.attr_ints("dilations")),
        pads_(node.attr_ints("pads")),
        strides_(node.attr_ints("strides")) {
    for (int64_t d : dilations_)
      if (d <= 0) fail("attribute dilations must be positive, got " + shape_str(dilations_));
    for (int64_t s : strides_)
      if (s <= 0) fail("attribute strides must be positive, got " + shape_str(strides_));
    for (int64_t p : pads_)
      if (p < 0) fail("attribute pads must not be negative, got " + shape_str(pads_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const std::vector<int64_t> image = required(ctx, 1, "image_shape").to_int_vector();
    const std::vector<int64_t> block = required(ctx, 2, "block_shape").to_int_vector();
    const size_t r = image.size();
    check(r >= 1, "image_shape must not be empty");
    SINGA_CHECK(block.size() == r,
                "block_shape " + shape_str(block) + " must have as many values as image_shape " + shape_str(image));
    auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
      SINGA_CHECK(v.empty() || v.size() == want, std::string("attribute ") + name + " has " + std::to_string(v.size()) +
                                                     " values, expected " + std::to_string(want));
    };
    check_len(dilations_, r, "dilations");
    check_len(strides_, r, "strides");
    check_len(pads_, 2 * r, "pads");
    const Shape xs = x.shape();
    SINGA_CHECK(xs.size() == 3, "input must be 3-D (N, C * prod(block_shape), L), got shape " + shape_str(xs));
    const int64_t limit = int64_t(1) << 40;
    int64_t kernel = 1, blocks = 1, pixels = 1;
    std::vector<int64_t> nb(r), dil(r), str(r), pb(r);
    for (size_t i = 0; i < r; ++i) {
      SINGA_CHECK(image[i] > 0, "image_shape " + shape_str(image) + " must be positive");
      SINGA_CHECK(block[i] > 0, "block_shape " + shape_str(block) + " must be positive");
      dil[i] = dilations_.empty() ? 1 : dilations_[i];
      str[i] = strides_.empty() ? 1 : strides_[i];
      pb[i] = pads_.empty() ? 0 : pads_[i];
      const int64_t pe = pads_.empty() ? 0 : pads_[i + r];
      check(image[i] < limit && block[i] < limit && dil[i] < limit && str[i] < limit && pb[i] < limit && pe < limit,
            "image_shape, block_shape and the attributes are too large");
      const int64_t extent = dil[i] * (block[i] - 1) + 1;
      const int64_t span = image[i] + pb[i] + pe - extent;
      SINGA_CHECK(span >= 0, "block of extent " + std::to_string(extent) +
                                 " does not fit the padded image along axis " + std::to_string(i));
      nb[i] = span / str[i] + 1;
      check(kernel <= limit / block[i] && blocks <= limit / nb[i] && pixels <= limit / image[i],
            "image_shape and block_shape are too large");
      kernel *= block[i];
      blocks *= nb[i];
      pixels *= image[i];
    }
    const int64_t N = xs[0];
    SINGA_CHECK(xs[1] % kernel == 0, "input's dim 1 (" + std::to_string(xs[1]) +
                                         ") is not a multiple of prod(block_shape) = " + std::to_string(kernel));
    SINGA_CHECK(xs[2] == blocks, "input's dim 2 (" + std::to_string(xs[2]) +
                                     ") must equal the number of sliding blocks, " + std::to_string(blocks));
    const int64_t C = xs[1] / kernel;
    Shape ys{N, C};
    ys.insert(ys.end(), image.begin(), image.end());
    SINGA_CHECK(N * C == 0 || pixels <= limit / (N * C), "output " + shape_str(ys) + " is too large");
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (N * C == 0 || pixels == 0) return;
    dispatch_among<float, double, half, bfloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                   uint64_t>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      // Integers sum with wrap-around (unsigned, so overflow is defined).
      using A = typename SumType<T, std::is_integral<T>::value>::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(N * C, 1, [&](int64_t pb0, int64_t pe0) {
        std::vector<A> acc(static_cast<size_t>(pixels));
        std::vector<int64_t> k(r), b(r);
        for (int64_t p = pb0; p < pe0; ++p) {
          std::fill(acc.begin(), acc.end(), A(0));
          const T* src = px + p * kernel * blocks;
          std::fill(k.begin(), k.end(), 0);
          for (int64_t kc = 0; kc < kernel; ++kc) {
            std::fill(b.begin(), b.end(), 0);
            for (int64_t bc = 0; bc < blocks; ++bc) {
              int64_t at = 0;
              bool inside = true;
              for (size_t i = 0; i < r; ++i) {
                const int64_t pos = b[i] * str[i] - pb[i] + k[i] * dil[i];
                inside = inside && pos >= 0 && pos < image[i];
                at = at * image[i] + pos;
              }
              if (inside) acc[size_t(at)] += to_acc<A>(src[kc * blocks + bc]);
              for (size_t i = r; i-- > 0;) {  // next block position, last axis fastest
                if (++b[i] < nb[i]) break;
                b[i] = 0;
              }
            }
            for (size_t i = r; i-- > 0;) {  // next kernel offset
              if (++k[i] < block[i]) break;
              k[i] = 0;
            }
          }
          T* dst = py + p * pixels;
          for (int64_t i = 0; i < pixels; ++i) dst[i] = from_acc<T>(acc[size_t(i)]);
        }
      });
    });
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

void register_col2im(sdk::Registrar& reg) {
  const uint64_t i64 = bit(SINGA_ONNX_INT64);
  reg.kernel<Col2Im>("", "Col2Im", 18, SINGA_VERSION_OPEN, "cpu",
                     {{"T", 0, kRealTypes | sdk::kIntTypes}, {"i", 1, i64}}, 0, 0b110);
}

}  // namespace nn
}  // namespace singa
