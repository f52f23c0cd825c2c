#include "cudnn_conv.hpp"

namespace singa {
namespace cuda {

ConvProblem make_conv_problem(int64_t N, int64_t C, int64_t M, int64_t group, const std::vector<int64_t>& x_spatial,
                              const std::vector<int64_t>& kernel, const std::vector<int64_t>& y_spatial,
                              const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& dilations, const NodeKernel& k) {
  const std::string who = k.where();
  ConvProblem p;
  p.group = to_int(group, who + ": group");
  p.x = {to_int(N, who + ": N"), to_int(C, who + ": C")};
  p.w = {to_int(M, who + ": M"), to_int(C / group, who + ": C/group")};
  p.y = {p.x[0], p.w[0]};
  if (x_spatial.size() == 1) {  // cuDNN wants at least two spatial dims
    for (auto* d : {&p.x, &p.w, &p.y}) d->push_back(1);
    p.pads.push_back(0);
    p.strides.push_back(1);
    p.dilations.push_back(1);
  }
  for (size_t i = 0; i < x_spatial.size(); ++i) {
    p.x.push_back(to_int(x_spatial[i], who + ": input size"));
    p.w.push_back(to_int(kernel[i], who + ": kernel size"));
    p.y.push_back(to_int(y_spatial[i], who + ": output size"));
    p.pads.push_back(to_int(pads[i], who + ": pad"));
    p.strides.push_back(to_int(strides[i], who + ": stride"));
    p.dilations.push_back(to_int(dilations[i], who + ": dilation"));
  }
  return p;
}

CudnnConv::CudnnConv(const ConvProblem& p, const NodeKernel& k)
    : k_(k), x_(p.x), y_(p.y), w_(p.w), conv_("cudnnCreateConvolutionDescriptor") {
  const std::string who = k.where();
  std::vector<int> pads = p.pads, strides = p.strides, dilations = p.dilations;
  check_cudnn(cudnnSetConvolutionNdDescriptor(conv_.get(), int(pads.size()), pads.data(), strides.data(),
                                              dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              who + ": cudnnSetConvolutionNdDescriptor");
  check_cudnn(cudnnSetConvolutionGroupCount(conv_.get(), p.group), who + ": cudnnSetConvolutionGroupCount");
  // The caller's output size and cuDNN's must agree, or the descriptors are wrong.
  std::vector<int> expect(p.x.size());
  check_cudnn(cudnnGetConvolutionNdForwardOutputDim(conv_.get(), x_.get(), w_.get(), int(expect.size()), expect.data()),
              who + ": cudnnGetConvolutionNdForwardOutputDim");
  if (expect != p.y)
    k.fail("cuDNN computes output " + shape_str(Shape(expect.begin(), expect.end())) + " but ONNX gives " +
               shape_str(Shape(p.y.begin(), p.y.end())),
           SINGA_INTERNAL);
}

namespace {

// Runs `run(algo, workspace, bytes)` with the heuristically best algorithm
// that accepts the math type; each candidate's workspace is asked first.
template <class Perf, class Algo, class GetAlgos, class GetSize, class Run>
void run_best(const sdk::Context& ctx, const NodeKernel& k, cudnnConvolutionDescriptor_t conv, const char* what,
              GetAlgos get_algos, GetSize get_size, Run run) {
  const std::string who = k.where();
  const bool tf32 = allow_tf32();
  std::vector<Perf> perf(16);
  int returned = 0;
  check_cudnn(get_algos(int(perf.size()), &returned, perf.data()), who + ": " + what + " algorithm heuristics");
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perf[size_t(i)];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    check_cudnn(cudnnSetConvolutionMathType(conv, tf32 ? p.mathType : CUDNN_FMA_MATH),
                who + ": cudnnSetConvolutionMathType");
    size_t bytes = 0;
    last = get_size(p.algo, &bytes);
    if (last != CUDNN_STATUS_SUCCESS) continue;
    void* ws = bytes ? ctx.workspace(bytes) : nullptr;
    last = run(p.algo, ws, bytes);
    if (last == CUDNN_STATUS_NOT_SUPPORTED) continue;  // this algorithm cannot run with the math type
    check_cudnn(last, who + ": " + what);
    return;
  }
  k.fail(std::string("cuDNN has no ") + what + " algorithm for these shapes (" + cudnnGetErrorString(last) + ")",
         SINGA_UNIMPLEMENTED);
}

}  // namespace

void CudnnConv::backward_data(const sdk::Context& ctx, cudnnHandle_t h, const float* w, const float* dy, float* dx) const {
  const float one = 1.f, zero = 0.f;
  run_best<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      ctx, k_, conv_.get(), "cudnnConvolutionBackwardData",
      [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_.get(), y_.get(), conv_.get(), x_.get(), n, got, perf);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_.get(), y_.get(), conv_.get(), x_.get(), algo, bytes);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo, void* ws, size_t bytes) {
        return cudnnConvolutionBackwardData(h, &one, w_.get(), w, y_.get(), dy, conv_.get(), algo, ws, bytes, &zero,
                                            x_.get(), dx);
      });
}

void CudnnConv::backward_filter(const sdk::Context& ctx, cudnnHandle_t h, const float* x, const float* dy,
                                float* dw) const {
  const float one = 1.f, zero = 0.f;
  run_best<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      ctx, k_, conv_.get(), "cudnnConvolutionBackwardFilter",
      [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_.get(), y_.get(), conv_.get(), w_.get(), n, got, perf);
      },
      [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_.get(), y_.get(), conv_.get(), w_.get(), algo, bytes);
      },
      [&](cudnnConvolutionBwdFilterAlgo_t algo, void* ws, size_t bytes) {
        return cudnnConvolutionBackwardFilter(h, &one, x_.get(), x, y_.get(), dy, conv_.get(), algo, ws, bytes, &zero,
                                              w_.get(), dw);
      });
}

}  // namespace cuda
}  // namespace singa
