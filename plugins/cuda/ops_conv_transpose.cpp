// ConvTranspose (float, 1-D to 3-D, groups, strides, dilations, pads,
// auto_pad, output_padding, output_shape, bias) through cuDNN: it is the
// backward data pass of the convolution it inverts. cuDNN writes the full
// scattered extent s * (in - 1) + (k - 1) * d + 1 per axis; the ONNX output
// is that extent cropped by the begin pads and extended with zeros by
// output_padding, which one pad kernel does, as ops_nn/conv_transpose.cpp's
// geometry defines it.
#include "broadcast.hpp"
#include "cudnn_conv.hpp"
#include "handles.hpp"
#include "kernels_data.hpp"
#include "register.hpp"
#include "window.hpp"

#include <algorithm>

namespace singa {
namespace cuda {

namespace {

class ConvTranspose : public NodeKernel {
 public:
  explicit ConvTranspose(const sdk::Node& node)
      : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)),
        output_padding_(node.attr_ints("output_padding")), output_shape_(node.attr_ints("output_shape")) {
    if (group_ < 1) fail("attribute group must be positive, got " + std::to_string(group_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), w = required(ctx, 1, "W");
    sdk::Tensor b = ctx.input(2);
    check_float(x, "X");
    check_float(w, "W");
    if (b.present()) check_float(b, "B");
    const sdk::Shape xs = x.shape(), ws = w.shape();
    const std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    check(ws.size() == xs.size(), "W of shape " + shape_str(ws) + " must have the rank of X " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], Mg = ws[1], M = Mg * group_;
    check(ws[0] == C, "W " + shape_str(ws) + " must have X's " + std::to_string(C) + " input channels first");
    check(C % group_ == 0, "X has " + std::to_string(C) + " channels, not a multiple of group " + std::to_string(group_));
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty())
      check(attrs_.kernel_shape == kernel,
            "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W " + shape_str(ws));
    if (b.present()) check(b.numel() == M, "B has " + std::to_string(b.numel()) + " values, expected " + std::to_string(M));

    const size_t r = in.size();
    std::vector<int64_t> full(r), out(r), begin(r), strides(r), dilations(r);
    geometry(in, kernel, full, out, begin, strides, dilations);
    sdk::Shape ys{N, M};
    ys.insert(ys.end(), out.begin(), out.end());
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (y.numel() == 0) return;

    const int dev = device_of(ctx);
    DeviceGuard guard(dev);
    const cudaStream_t stream = stream_of(ctx);
    PadPlan crop;
    crop.rank = int(r + 2);
    crop.n = y.numel();
    crop.out[0] = crop.in[0] = N;
    crop.out[1] = crop.in[1] = M;
    int64_t full_size = N * M;
    for (size_t i = 0; i < r; ++i) {
      crop.in[i + 2] = full[i];
      crop.out[i + 2] = out[i];
      crop.begin[i + 2] = -begin[i];
      full_size *= full[i];
    }
    if (x.numel() == 0 || full_size == 0) {
      check_launch(cudaMemsetAsync(y.data_ptr(), 0, size_t(y.numel()) * sizeof(float), stream), "cudaMemsetAsync");
    } else {
      float* buf = static_cast<float*>(ctx.workspace(size_t(full_size) * sizeof(float)));
      // The inverted convolution maps the full extent [N, M, full] with
      // filter [C, M/group, k] onto X [N, C, in], unpadded.
      const std::vector<int64_t> zeros(r, 0);
      const CudnnConv conv(make_conv_problem(N, M, C, group_, full, kernel, in, zeros, strides, dilations, *this), *this);
      Cudnn h(dev, stream);
      conv.backward_data(ctx, h.get(), w.data<float>(), x.data<float>(), buf);
      check_launch(launch_pad(sizeof(float), buf, y.data_ptr(), crop, stream), "crop kernel");
    }
    if (b.present()) {
      sdk::Shape bs(ys.size(), 1);
      bs[1] = M;
      const BroadcastPlan plan = make_plan(ys, bs, ys, where());
      check_launch(launch_binary<float>(BinaryOp::kAdd, y.data<float>(), b.data<float>(), y.data<float>(), plan, stream),
                   "bias kernel");
    }
  }

 private:
  // Per spatial axis: the full scattered extent, the output size and the
  // begin pad (the CPU's transpose_geometry).
  // ONNX's output size and padding (plugins/common/window_geometry.hpp), per
  // spatial axis; full is the extent the input scatters to before cropping.
  void geometry(const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, std::vector<int64_t>& full,
                std::vector<int64_t>& out, std::vector<int64_t>& begin, std::vector<int64_t>& strides,
                std::vector<int64_t>& dilations) const {
    const window::Geometry g = window::resolve_transpose(attrs_, in, kernel, output_padding_, output_shape_, *this);
    const size_t r = in.size();
    for (size_t i = 0; i < r; ++i) {
      const int j = window::kMaxSpatial - int(r) + int(i);
      strides[i] = g.s[j];
      dilations[i] = g.d[j];
      out[i] = g.out[j];
      begin[i] = g.pb[j];
      full[i] = g.s[j] * (in[i] - 1) + (g.k[j] - 1) * g.d[j] + 1;
    }
  }

  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void register_conv_transpose(sdk::Registrar& reg) {
  reg.kernel<ConvTranspose>("", "ConvTranspose", 1, 10, "cuda", {{"T", 0, kF32}});
  reg.kernel<ConvTranspose>("", "ConvTranspose", 11, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32}});
}

}  // namespace cuda
}  // namespace singa
