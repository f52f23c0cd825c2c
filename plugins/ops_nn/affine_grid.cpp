// AffineGrid (opset 20): the sampling grid of an affine transform, as
// GridSample reads it. theta (N, 2, 3) maps the normalised output positions
// (x, y, 1) of an (H, W) image to input positions, theta (N, 3, 4) maps
// (x, y, z, 1) of a (D, H, W) volume; x runs along W, y along H, z along D.
// With align_corners the positions run from -1 to 1 through the corner pixels'
// centres, otherwise through their outer edges (pixel centres at
// -1 + (2i + 1) / n).
#include "nn_common.hpp"
#include "register.hpp"

#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

class AffineGrid : public NodeKernel {
 public:
  explicit AffineGrid(const sdk::Node& node) : NodeKernel(node) {
    const int64_t ac = node.attr_int("align_corners", 0);
    if (ac != 0 && ac != 1) fail("attribute align_corners must be 0 or 1, got " + std::to_string(ac));
    align_corners_ = ac == 1;
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor theta = required(ctx, 0, "theta");
    sdk::Tensor size_in = required(ctx, 1, "size");
    const std::vector<int64_t> size = size_in.to_int_vector();
    SINGA_CHECK(size.size() == 4 || size.size() == 5,
                "size must hold 4 values (N, C, H, W) or 5 (N, C, D, H, W), got " + shape_str(size));
    const size_t nd = size.size() - 2;  // spatial dims: 2 or 3
    for (int64_t d : size) SINGA_CHECK(d >= 0, "size " + shape_str(size) + " has a negative value");
    const int64_t N = size[0];
    SINGA_CHECK(
        theta.ndim() == 3 && theta.dim(0) == N && theta.dim(1) == int64_t(nd) && theta.dim(2) == int64_t(nd) + 1,
        "theta must have shape (" + std::to_string(N) + ", " + std::to_string(nd) + ", " + std::to_string(nd + 1) +
            ") for size " + shape_str(size) + ", got " + shape_str(theta.shape()));
    // Spatial dims in x, y[, z] order (innermost first).
    std::vector<int64_t> dims(size.rbegin(), size.rbegin() + int64_t(nd));
    Shape out{N};
    for (size_t i = 2; i < size.size(); ++i) out.push_back(size[i]);
    out.push_back(int64_t(nd));
    // The product of the sizes must not overflow.
    int64_t points = 1;
    for (int64_t d : dims) {
      SINGA_CHECK(d == 0 || points <= (int64_t(1) << 40) / d, "size " + shape_str(size) + " is too large");
      points *= d;
    }
    SINGA_CHECK(points == 0 || N <= (int64_t(1) << 40) / points, "size " + shape_str(size) + " is too large");
    sdk::Tensor grid = ctx.output(0, out, theta.dl_dtype());
    if (N == 0 || points == 0) return;
    // Normalised positions along each axis.
    std::vector<std::vector<double>> pos(nd);
    for (size_t a = 0; a < nd; ++a) {
      const int64_t n = dims[a];
      pos[a].resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        if (align_corners_)
          pos[a][size_t(i)] = n == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(n - 1);
        else
          pos[a][size_t(i)] = -1.0 + double(2 * i + 1) / double(n);
      }
    }
    dispatch_real(theta.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* pt = theta.data<T>();
      T* pg = grid.data<T>();
      const int64_t cols = int64_t(nd) + 1;
      ctx.parallel_for(N, 1, [&](int64_t nb, int64_t ne) {
        for (int64_t n = nb; n < ne; ++n) {
          A th[3][4];
          for (size_t r = 0; r < nd; ++r)
            for (int64_t c = 0; c < cols; ++c) th[r][c] = to_acc<A>(pt[(n * int64_t(nd) + int64_t(r)) * cols + c]);
          T* g = pg + n * points * int64_t(nd);
          // Points in row-major (D,) H, W order; coordinate a of a point is
          // pos[a][index along that axis].
          for (int64_t p = 0; p < points; ++p) {
            A h[4];
            int64_t rem = p;
            for (size_t a = 0; a < nd; ++a) {
              h[a] = A(pos[a][size_t(rem % dims[a])]);
              rem /= dims[a];
            }
            h[nd] = A(1);
            for (size_t r = 0; r < nd; ++r) {
              A v = A(0);
              for (int64_t c = 0; c < cols; ++c) v += th[r][c] * h[c];
              g[p * int64_t(nd) + int64_t(r)] = from_acc<T>(v);
            }
          }
        }
      });
    });
  }

 private:
  bool align_corners_ = false;
};

}  // namespace

void register_affine_grid(sdk::Registrar& reg) {
  reg.kernel<AffineGrid>("", "AffineGrid", 20, SINGA_VERSION_OPEN, "cpu",
                         {{"T1", 0, kRealTypes}, {"T2", 1, bit(SINGA_ONNX_INT64)}}, 0, 0b10);
}

}  // namespace nn
}  // namespace singa
