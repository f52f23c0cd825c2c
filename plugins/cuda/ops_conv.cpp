// Conv (1-D to 3-D, groups, strides, dilations, pads, auto_pad) through
// cuDNN, float. cuDNN pads symmetrically; asymmetric pads (SAME_* with an
// odd total, or explicit ones) are applied by copying the input into a
// zero-padded workspace first. 1-D convolutions run as 2-D with height 1.
#include "broadcast.hpp"
#include "cudnn_desc.hpp"
#include "handles.hpp"
#include "register.hpp"
#include "window.hpp"

#include <map>
#include <mutex>

namespace singa {
namespace cuda {

namespace {

struct AlgoChoice {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
  size_t workspace;
};

class Conv : public NodeKernel {
 public:
  explicit Conv(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)) {
    if (group_ <= 0) fail("attribute group must be positive, got " + std::to_string(group_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), w = required(ctx, 1, "W");
    sdk::Tensor b = ctx.input(2);
    check_float(x, "X");
    check_float(w, "W");
    const sdk::Shape xs = x.shape(), ws = w.shape();
    const std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    check(ws.size() == xs.size(), "W " + shape_str(ws) + " must have the rank of X " + shape_str(xs));
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    for (int64_t k : kernel) check(k > 0, "W " + shape_str(ws) + " has an empty kernel");
    if (!attrs_.kernel_shape.empty())
      check(attrs_.kernel_shape == kernel,
            "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " differs from W's " + shape_str(kernel));
    const int64_t N = xs[0], C = xs[1], M = ws[0];
    check(ws[1] * group_ == C, "X has " + std::to_string(C) + " channels but W " + shape_str(ws) + " with group " +
                                   std::to_string(group_) + " expects " + std::to_string(ws[1] * group_));
    check(M % group_ == 0, "W's " + std::to_string(M) + " output channels are not divisible by group " +
                               std::to_string(group_));
    if (b.present()) {
      check_float(b, "B");
      check(b.ndim() == 1 && b.dim(0) == M, "B must be [" + std::to_string(M) + "], got " + shape_str(b.shape()));
    }
    const Window win = resolve_window(attrs_, in, kernel, N * C, *this);
    sdk::Shape ys{N, M};
    for (int64_t d : win.out_dims()) ys.push_back(d);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (y.numel() == 0) return;

    const int dev = device_of(ctx);
    DeviceGuard guard(dev);
    const cudaStream_t stream = stream_of(ctx);
    if (C == 0) {
      // No input channels: every output is the bias (or zero).
      check_launch(cudaMemsetAsync(y.data_ptr(), 0, size_t(y.numel()) * sizeof(float), stream), "cudaMemsetAsync");
    } else {
      convolve(ctx, x, w, y, win, dev, stream);
    }
    if (b.present()) add_bias(b, y, stream);
  }

 private:
  void convolve(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& y,
                const Window& win, int dev, cudaStream_t stream) const {
    const PoolGeometry& g = win.g;
    const float* px = x.data<float>();
    int64_t in[3] = {g.in[0], g.in[1], g.in[2]};
    int64_t pad[3] = {g.pb[0], g.pb[1], g.pb[2]};
    if (!win.symmetric_pads()) {
      int64_t padded[3];
      for (int i = 0; i < 3; ++i) padded[i] = g.in[i] + g.pb[i] + g.pe[i];
      const int64_t planes = x.dim(0) * x.dim(1);
      const size_t bytes = size_t(planes * padded[0] * padded[1] * padded[2]) * sizeof(float);
      float* buf = static_cast<float*>(ctx.workspace(bytes));
      check_launch(launch_pad_planes(px, buf, planes, g.in, padded, g.pb, stream), "padding kernel");
      px = buf;
      for (int i = 0; i < 3; ++i) {
        in[i] = padded[i];
        pad[i] = 0;
      }
    }
    // cuDNN wants at least two spatial dims: a 1-D problem keeps its
    // leading slot of size 1 as the height.
    const int ns = win.rank < 2 ? 2 : win.rank, first = 3 - ns;
    const std::string who = where();
    std::vector<int> xd{to_int(x.dim(0), who + ": N"), to_int(x.dim(1), who + ": C")};
    std::vector<int> wd{to_int(w.dim(0), who + ": M"), to_int(w.dim(1), who + ": C/group")};
    std::vector<int> yd{xd[0], wd[0]};
    std::vector<int> pads, strides, dilations;
    for (int i = first; i < 3; ++i) {
      xd.push_back(to_int(in[i], who + ": input size"));
      wd.push_back(to_int(g.k[i], who + ": kernel size"));
      yd.push_back(to_int(g.out[i], who + ": output size"));
      pads.push_back(to_int(pad[i], who + ": pad"));
      strides.push_back(to_int(g.s[i], who + ": stride"));
      dilations.push_back(to_int(g.d[i], who + ": dilation"));
    }
    TensorDesc xdesc(xd), ydesc(yd);
    FilterDesc wdesc(wd);
    ConvDesc conv("cudnnCreateConvolutionDescriptor");
    check_cudnn(cudnnSetConvolutionNdDescriptor(conv.get(), ns, pads.data(), strides.data(), dilations.data(),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                who + ": cudnnSetConvolutionNdDescriptor");
    check_cudnn(cudnnSetConvolutionGroupCount(conv.get(), to_int(group_, who + ": group")),
                who + ": cudnnSetConvolutionGroupCount");
    // Our output size and cuDNN's must agree, or the descriptors are wrong.
    std::vector<int> expect(xd.size());
    check_cudnn(cudnnGetConvolutionNdForwardOutputDim(conv.get(), xdesc.get(), wdesc.get(), int(expect.size()), expect.data()),
                who + ": cudnnGetConvolutionNdForwardOutputDim");
    if (expect != yd)
      fail("cuDNN computes output " + shape_str(Shape(expect.begin(), expect.end())) + " but ONNX gives " +
               shape_str(Shape(yd.begin(), yd.end())),
           SINGA_INTERNAL);

    Cudnn h(dev, stream);
    std::vector<int> key = xd;
    key.insert(key.end(), wd.begin(), wd.end());
    AlgoChoice choice = algorithm(h.get(), key, xdesc, wdesc, conv, ydesc);
    const float one = 1.f, zero = 0.f;
    auto run = [&] {
      check_cudnn(cudnnSetConvolutionMathType(conv.get(), choice.math), who + ": cudnnSetConvolutionMathType");
      void* ws = choice.workspace ? ctx.workspace(choice.workspace) : nullptr;
      return cudnnConvolutionForward(h.get(), &one, xdesc.get(), px, wdesc.get(), w.data<float>(), conv.get(),
                                     choice.algo, ws, choice.workspace, &zero, ydesc.get(), y.data<float>());
    };
    cudnnStatus_t st = run();
    if (st == CUDNN_STATUS_NOT_SUPPORTED && choice.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) {
      // The heuristics offered an algorithm that cannot run with this math
      // type; the implicit GEMM runs every convolution, without workspace.
      choice = AlgoChoice{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH, 0};
      check_cudnn(cudnnSetConvolutionMathType(conv.get(), choice.math), who + ": cudnnSetConvolutionMathType");
      check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(h.get(), xdesc.get(), wdesc.get(), conv.get(), ydesc.get(),
                                                          choice.algo, &choice.workspace),
                  who + ": cudnnGetConvolutionForwardWorkspaceSize");
      remember(key, choice);
      st = run();
    }
    check_cudnn(st, who + ": cudnnConvolutionForward");
  }

  void remember(const std::vector<int>& key, const AlgoChoice& choice) const {
    std::lock_guard<std::mutex> lock(cache_mu_);
    cache_[key] = choice;
  }

  // The heuristically best algorithm for these shapes, looked up once per
  // input/filter shape (compute runs concurrently: the cache is locked).
  AlgoChoice algorithm(cudnnHandle_t h, const std::vector<int>& key, const TensorDesc& xdesc, const FilterDesc& wdesc,
                       const ConvDesc& conv, const TensorDesc& ydesc) const {
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    const std::string who = where();
    const bool tf32 = allow_tf32();
    check_cudnn(cudnnSetConvolutionMathType(conv.get(), tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
                who + ": cudnnSetConvolutionMathType");
    int max_count = 0;
    check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count), who + ": cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(max_count > 0 ? max_count : 1));
    int returned = 0;
    check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(h, xdesc.get(), wdesc.get(), conv.get(), ydesc.get(),
                                                       int(perf.size()), &returned, perf.data()),
                who + ": cudnnGetConvolutionForwardAlgorithm_v7");
    // Results come best first. Without TF32 every candidate runs with FMA
    // math (full float precision); one that cannot is skipped.
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    bool found = false;
    AlgoChoice choice{};
    for (int i = 0; i < returned && !found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = perf[size_t(i)];
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      choice = AlgoChoice{p.algo, tf32 ? p.mathType : CUDNN_FMA_MATH, 0};
      check_cudnn(cudnnSetConvolutionMathType(conv.get(), choice.math), who + ": cudnnSetConvolutionMathType");
      last = cudnnGetConvolutionForwardWorkspaceSize(h, xdesc.get(), wdesc.get(), conv.get(), ydesc.get(), choice.algo,
                                                     &choice.workspace);
      found = last == CUDNN_STATUS_SUCCESS;
    }
    if (!found)
      fail("cuDNN has no forward algorithm for input and filter dims " + shape_str(Shape(key.begin(), key.end())) + " (" +
               cudnnGetErrorString(last) + ")",
           SINGA_UNIMPLEMENTED);
    remember(key, choice);
    return choice;
  }

  // y[n, m, ...] += b[m], in place through the broadcasting add.
  void add_bias(const sdk::Tensor& b, const sdk::Tensor& y, cudaStream_t stream) const {
    const sdk::Shape ys = y.shape();
    sdk::Shape bs(ys.size(), 1);
    bs[1] = ys[1];
    const BroadcastPlan plan = make_plan(ys, bs, ys, where());
    check_launch(launch_binary<float>(BinaryOp::kAdd, y.data<float>(), b.data<float>(), y.data<float>(), plan, stream),
                 "bias kernel");
  }

  WindowAttrs attrs_;
  int64_t group_;
  mutable std::mutex cache_mu_;
  mutable std::map<std::vector<int>, AlgoChoice> cache_;
};

}  // namespace

void register_conv(sdk::Registrar& reg) {
  // Conv 1 and 11 differ only in auto_pad/pads defaults, handled alike.
  reg.kernel<Conv>("", "Conv", 1, 10, "cuda", {{"T", 0, kF32}, {"T", 1, kF32}});
  reg.kernel<Conv>("", "Conv", 11, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32}, {"T", 1, kF32}});
}

}  // namespace cuda
}  // namespace singa
