// Gemm and MatMul (float) through the strided batched GEMM of gemm.hpp.
#include "gemm.hpp"
#include "register.hpp"

#include <algorithm>

namespace singa {
namespace opencl {

namespace {

// Y = alpha * op(A) op(B) + beta * C, C broadcast to (M, N): numpy-style from
// opset 7, or by the `broadcast` attribute before (exact shape when 0).
class Gemm : public NodeKernel {
 public:
  explicit Gemm(const sdk::Node& node)
      : NodeKernel(node), alpha_(node.attr_float("alpha", 1.0f)), beta_(node.attr_float("beta", 1.0f)),
        trans_a_(node.attr_int("transA", 0) != 0), trans_b_(node.attr_int("transB", 0) != 0),
        exact_c_(node.opset() < 7 && node.attr_int("broadcast", 0) == 0), c_required_(node.opset() < 11) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B"), c = ctx.input(2);
    check_float(a, "A");
    check_float(b, "B");
    check(a.ndim() == 2 && b.ndim() == 2, "A and B must be 2-D, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
    const int64_t M = trans_a_ ? a.dim(1) : a.dim(0), K = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t Kb = trans_b_ ? b.dim(1) : b.dim(0), N = trans_b_ ? b.dim(0) : b.dim(1);
    check(K == Kb, "inner dimensions differ: A " + shape_str(a.shape()) + (trans_a_ ? " (transposed)" : "") + ", B " +
                       shape_str(b.shape()) + (trans_b_ ? " (transposed)" : ""));
    check(c.present() || !c_required_, "input C is required before opset 11");
    GemmCall g;
    if (c.present() && beta_ != 0.0f) {
      check_float(c, "C");
      const sdk::Shape cs = c.shape();
      check(cs.size() <= 2, "C " + shape_str(cs) + " cannot be broadcast to the output " + shape_str({M, N}));
      const int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
      const bool ok = exact_c_ ? (cs.size() == 2 && cm == M && cn == N)
                               : ((cm == M || cm == 1) && (cn == N || cn == 1));
      check(ok, "C " + shape_str(cs) + " cannot be broadcast to the output " + shape_str({M, N}));
      g.bias = buf(c);
      g.srm = cm == 1 ? 0 : to_int(cn, "C columns");
      g.srn = cn == 1 ? 0 : 1;
      g.beta = beta_;
    }
    sdk::Tensor y = ctx.output(0, {M, N}, a.dl_dtype());
    if (M * N == 0) return;
    DeviceEnv& e = env(y);
    g.a = buf(a);
    g.b = buf(b);
    g.c = buf(y);
    if (g.beta == 0.0f) g.bias = g.c;
    // K == 0 is an empty product: the kernels then write beta * C (or zeros).
    g.M = to_int(M, "M");
    g.N = to_int(N, "N");
    g.K = to_int(K, "K");
    g.sam = trans_a_ ? 1 : g.K;
    g.sak = trans_a_ ? g.M : 1;
    g.sbk = trans_b_ ? 1 : g.N;
    g.sbn = trans_b_ ? g.K : 1;
    g.alpha = alpha_;
    gemm(*this, e, g);
  }

 private:
  float alpha_, beta_;
  bool trans_a_, trans_b_, exact_c_, c_required_;
};

// numpy matmul: 1-D operands gain (and then lose) a unit dim, batch dims
// broadcast. Batch dims are coalesced into at most two groups per launch;
// more groups are walked on the host.
class MatMul : public NodeKernel {
 public:
  explicit MatMul(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    check_float(a, "A");
    check_float(b, "B");
    sdk::Shape as = a.shape(), bs = b.shape();
    check(!as.empty() && !bs.empty(), "MatMul needs inputs of rank >= 1, got " + shape_str(as) + " and " + shape_str(bs));
    const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
    if (a_vec) as.insert(as.begin(), 1);
    if (b_vec) bs.push_back(1);
    const int64_t M = as[as.size() - 2], K = as.back(), Kb = bs[bs.size() - 2], N = bs.back();
    check(K == Kb, "inner dimensions differ: A " + shape_str(a.shape()) + ", B " + shape_str(b.shape()));
    const size_t ar = as.size() - 2, br = bs.size() - 2, r = std::max(ar, br);
    sdk::Shape batch(r, 1);
    std::vector<int64_t> sa(r, 0), sb(r, 0);
    int64_t stride_a = M * K, stride_b = K * N;
    for (size_t i = r; i-- > 0;) {
      const int64_t da = i >= r - ar ? as[i - (r - ar)] : 1, db = i >= r - br ? bs[i - (r - br)] : 1;
      check(da == db || da == 1 || db == 1,
            "batch dimensions of A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()) + " do not broadcast");
      batch[i] = std::max(da, db);
      if (da != 1) sa[i] = stride_a;
      if (db != 1) sb[i] = stride_b;
      stride_a *= da;
      stride_b *= db;
    }
    sdk::Shape ys = batch;
    if (!a_vec) ys.push_back(M);
    if (!b_vec) ys.push_back(N);
    sdk::Tensor y = ctx.output(0, ys, a.dl_dtype());
    if (sdk::numel(ys) == 0) return;
    DeviceEnv& e = env(y);
    GemmCall g;
    g.a = buf(a);
    g.b = buf(b);
    g.c = buf(y);
    g.bias = g.c;
    g.M = to_int(M, "M");
    g.N = to_int(N, "N");
    g.K = to_int(K, "K");
    g.sam = g.K;
    g.sak = 1;
    g.sbk = g.N;
    g.sbn = 1;

    // Coalesce batch dims (dropping 1s) where both operands step alike.
    std::vector<int64_t> dims, ga, gb;
    for (size_t i = 0; i < r; ++i) {
      if (batch[i] == 1) continue;
      if (!dims.empty() && ga.back() == sa[i] * batch[i] && gb.back() == sb[i] * batch[i]) {
        dims.back() *= batch[i];
        ga.back() = sa[i];
        gb.back() = sb[i];
        continue;
      }
      dims.push_back(batch[i]);
      ga.push_back(sa[i]);
      gb.push_back(sb[i]);
    }
    // B shared by a contiguous batch of A: one taller product.
    if (dims.size() == 1 && gb[0] == 0 && ga[0] == M * K) {
      g.M = to_int(dims[0] * M, "batch * M");
      gemm(*this, e, g);
      return;
    }
    while (dims.size() < 2) {
      dims.insert(dims.begin(), 1);
      ga.insert(ga.begin(), 0);
      gb.insert(gb.begin(), 0);
    }
    const size_t outer = dims.size() - 2;
    int64_t loops = 1;
    for (size_t i = 0; i < outer; ++i) loops *= dims[i];
    g.nb1 = to_int(dims[outer], "batch");
    g.nb2 = to_int(dims[outer + 1], "batch");
    g.sa1 = to_int(ga[outer], "A batch stride");
    g.sa2 = to_int(ga[outer + 1], "A batch stride");
    g.sb1 = to_int(gb[outer], "B batch stride");
    g.sb2 = to_int(gb[outer + 1], "B batch stride");
    const int64_t per_loop = int64_t(g.nb1) * g.nb2 * M * N;
    for (int64_t l = 0; l < loops; ++l) {
      int64_t rem = l, oa = 0, ob = 0;
      for (size_t i = outer; i-- > 0;) {
        const int64_t idx = rem % dims[i];
        rem /= dims[i];
        oa += idx * ga[i];
        ob += idx * gb[i];
      }
      GemmCall gl = g;
      gl.a.offset = to_int(g.a.offset + oa, "A offset");
      gl.b.offset = to_int(g.b.offset + ob, "B offset");
      gl.c.offset = to_int(g.c.offset + l * per_loop, "Y offset");
      gemm(*this, e, gl);
    }
  }
};

}  // namespace

void register_blas(sdk::Registrar& reg) {
  reg.kernel<MatMul>("", "MatMul", 1, 17, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}});
  // Gemm 7 drops `broadcast` (numpy rules), 11 makes C optional.
  reg.kernel<Gemm>("", "Gemm", 1, 6, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}, {"T", 2, kF32}});
  reg.kernel<Gemm>("", "Gemm", 7, 10, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}, {"T", 2, kF32}});
  reg.kernel<Gemm>("", "Gemm", 11, 17, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}, {"T", 2, kF32}});
}

}  // namespace opencl
}  // namespace singa
