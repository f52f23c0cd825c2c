// Bf16Conv (conv_bf16.hpp): planned once per thread count and input shape,
// on the first run with them (at create when the shape is known). X is
// rounded to bfloat16 channels-last (oneDNN's reorder, in bands of rows on
// the pool); each of N parts convolves a slice of the output channels with
// its own primitive and that slice of W in bfloat16 (rounded at create,
// packed once per layout), then moves its float result into Y's slice
// unless it wrote Y directly. oneDNN itself runs single-threaded inside each
// part (dnnl_threads.hpp says why).
#include "conv_bf16.hpp"

#include "layouts.hpp"
#include "nn_common.hpp"
#include "spatial.hpp"

#include <bf16_compute.hpp>
#include <bf16_dnnl.hpp>
#include <cpu_domain.hpp>
#include <dnnl_threads.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace singa {
namespace nn {

int register_bf16_conv_pass(sdk::Registrar& reg);  // passes/bf16_convs.cpp

namespace {

using dnnl::memory;
using ops::FusedActivation;
using tag = memory::format_tag;
using dt = memory::data_type;

dt dnnl_type(int32_t onnx) { return onnx == SINGA_ONNX_BFLOAT16 ? dt::bf16 : dt::f32; }
size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// Plans kept per input shape and thread count (symbolic dims): past this many the cache starts over.
constexpr size_t kMaxPlans = 16;

struct Part {
  int64_t c0 = 0, c1 = 0;
  dnnl::convolution_forward conv;
  memory weights, bias;
  memory::desc dst;
  size_t dst_at = 0;  // byte offset of the part's float output in the workspace
  dnnl::reorder z_in, y_out;
  memory::desc z_slice, y_slice;
  bool direct = false;  // the primitive writes Y itself (channels-last float Y, one part)
  bool z_post_op = false;  // the primitive reads Z itself (a binary post-op), no copy of Z first
};

struct Band {
  dnnl::reorder to_bf16;
  memory::desc from, to;
};

struct Plan {
  Shape x, y;  // NCHW shapes, for what the plan was made
  Geometry g;
  std::vector<Band> bands;
  std::vector<Part> parts;
  memory::desc src;  // X in bfloat16, channels-last, at the workspace's start
  size_t src_bytes = 0, ws_bytes = 0;
};

class Bf16Conv : public NodeKernel {
 public:
  explicit Bf16Conv(const sdk::Node& node)
      : NodeKernel(node), attrs_(node, *this), act_(node), group_(node.attr_int("group", 1)) {
    if (!ops::cpu_has_bf16())
      throw sdk::Error(SINGA_UNIMPLEMENTED, "a Bf16Conv needs a CPU with AVX512-BF16 (the pass makes none elsewhere)");
    if (group_ != 1) fail("a Bf16Conv takes one group, got group " + std::to_string(group_));
    const singa_value_info xi = node.input_info(0);
    check(xi.ndim == 4, "X must be 4-D (N, C, H, W)");
    const Shape x(xi.dims, xi.dims + 4);
    x_type_ = xi.onnx_dtype;
    check(x_type_ == SINGA_ONNX_FLOAT || x_type_ == SINGA_ONNX_BFLOAT16, "X must be float or bfloat16");
    const sdk::Tensor w = node.constant(1);
    check(w.present() && w.ndim() == 4, "W must be a constant of rank 4");
    check(w.dtype() == SINGA_ONNX_FLOAT || w.dtype() == SINGA_ONNX_BFLOAT16, "W must be float or bfloat16");
    ws_ = w.shape();
    SINGA_CHECK(x[1] <= 0 || ws_[1] == x[1],
                "W " + shape_str(ws_) + " does not match X's " + std::to_string(x[1]) + " channels");
    // W rounded once; a plan's reorder into oneDNN's layout then moves bits only.
    w_.resize(size_t(w.numel()));
    if (w.dtype() == SINGA_ONNX_FLOAT) {
      for (size_t i = 0; i < w_.size(); ++i) w_[i] = ops::bf16_bits(w.data<float>()[i]);
    } else {
      for (size_t i = 0; i < w_.size(); ++i) w_[i] = w.data<bfloat16>()[i].bits;
    }
    bias_.assign(size_t(ws_[0]), 0.f);
    if (node.has_input(2)) {
      const sdk::Tensor b = node.constant(2);
      check(b.present(), "B must be a constant");
      SINGA_CHECK(b.numel() == ws_[0], "B has " + std::to_string(b.numel()) + " values, expected " + std::to_string(ws_[0]));
      for (int64_t i = 0; i < ws_[0]; ++i)
        bias_[size_t(i)] = b.dtype() == SINGA_ONNX_BFLOAT16 ? float(b.data<bfloat16>()[i]) : b.data<float>()[i];
    }
    summand_ = node.has_input(3);
    // Channels-last values between Bf16Convs (the pass sets them): no
    // transposition on the way in or out.
    in_bf16_ = node.input_layout(0) == kChannelsLastBf16Layout;
    out_bf16_ = node.output_layout(0) == kChannelsLastBf16Layout;
    in_nhwc_ = in_bf16_ || node.input_layout(0) == kChannelsLastLayout;
    out_nhwc_ = out_bf16_ || node.output_layout(0) == kChannelsLastLayout;
    z_nhwc_ = summand_ && node.input_layout(3) == kChannelsLastLayout;
    if (!attrs_.kernel_shape.empty())
      SINGA_CHECK(attrs_.kernel_shape == Shape(ws_.begin() + 2, ws_.end()),
                  "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W " + shape_str(ws_));
    dnnl::post_ops po;
    check(ops::append_activation(po, act_), "oneDNN cannot apply the fused activation");
    // A shape known now is planned now, so that one oneDNN refuses fails the
    // prepare rather than the first run; others are planned per run shape.
    if (std::all_of(x.begin(), x.end(), [](int64_t d) { return d > 0; })) plan_for(1, x);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    SINGA_CHECK(x.ndim() == 4 && x.dtype() == x_type_ && x.shape()[1] == ws_[1],
                "X is " + shape_str(x.shape()) + " " + sdk::dtype_name(x.dtype()) + "; expected " +
                    sdk::dtype_name(x_type_) + " [N, " + std::to_string(ws_[1]) + ", H, W]");
    const std::shared_ptr<const Plan> plan = plan_for(std::max(1, ctx.num_threads()), x.shape());
    const Plan& p = *plan;
    sdk::Tensor z = summand_ ? required(ctx, 3, "Z") : sdk::Tensor();
    if (summand_)
      SINGA_CHECK(z.shape() == p.y && z.dtype() == x_type_,
                  "Z is " + shape_str(z.shape()) + " " + sdk::dtype_name(z.dtype()) + ", expected " + shape_str(p.y) +
                      " " + sdk::dtype_name(x_type_));
    sdk::Tensor y = ctx.output(0, p.y, x_type_);
    if (sdk::numel(p.y) == 0) return;
    char* ws = static_cast<char*>(ctx.workspace(p.ws_bytes));
    const auto& eng = ops::bf16_engine();
    // X already in bfloat16 channels-last is read where it is.
    void* src_data = in_bf16_ ? x.data_ptr() : ws;
    ctx.parallel_for(int64_t(p.bands.size()), 1, [&](int64_t b0, int64_t b1) {
      ops::dnnl_single_thread();
      dnnl::stream st(eng);
      for (int64_t b = b0; b < b1; ++b) {
        const Band& band = p.bands[size_t(b)];
        memory from(band.from, eng, x.data_ptr()), to(band.to, eng, ws);
        band.to_bf16.execute(st, from, to);
      }
      st.wait();
    });
    ctx.parallel_for(int64_t(p.parts.size()), 1, [&](int64_t q0, int64_t q1) {
      ops::dnnl_single_thread();
      dnnl::stream st(eng);
      for (int64_t q = q0; q < q1; ++q) {
        const Part& part = p.parts[size_t(q)];
        memory dst(part.dst, eng, part.direct ? y.data_ptr() : ws + part.dst_at);
        memory src(p.src, eng, src_data);
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, part.weights}, {DNNL_ARG_BIAS, part.bias}, {DNNL_ARG_DST, dst}};
        if (summand_) {
          memory zm(part.z_slice, eng, z.data_ptr());
          if (part.z_post_op)
            args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = zm;
          else
            part.z_in.execute(st, zm, dst);
        }
        part.conv.execute(st, args);
        if (part.direct) continue;
        memory ym(part.y_slice, eng, y.data_ptr());
        part.y_out.execute(st, dst, ym);
      }
      st.wait();
    });
  }

 private:
  // The plan for X of shape `x` in `threads` parts, made on first use.
  std::shared_ptr<const Plan> plan_for(int threads, const Shape& x) const {
    std::vector<int64_t> key = x;
    key.push_back(threads);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    if (plans_.size() >= kMaxPlans) plans_.clear();  // a run holding one keeps it alive
    std::shared_ptr<const Plan> plan = make_plan(threads, x);
    plans_.emplace(key, plan);
    return plan;
  }

  // Output channels [c0, c1) of W in `layout`, packed once and shared by
  // every plan that asks for the same (plans per input shape and thread
  // count would otherwise each hold a copy). Called under mu_.
  memory packed(int64_t c0, int64_t c1, const memory::desc& layout, const memory::desc& w_md, dnnl::stream& st) const {
    for (const Packed& k : packed_)
      if (k.c0 == c0 && k.c1 == c1 && k.layout == layout) return k.weights;
    const auto& eng = ops::bf16_engine();
    Packed k{c0, c1, layout, memory(layout, eng)};
    const memory::desc w_slice = w_md.submemory_desc({c1 - c0, ws_[1], ws_[2], ws_[3]}, {c0, 0, 0, 0});
    memory w_src(w_slice, eng, const_cast<uint16_t*>(w_.data()));
    dnnl::reorder(dnnl::reorder::primitive_desc(eng, w_slice, eng, layout)).execute(st, w_src, k.weights);
    packed_.push_back(k);
    return k.weights;
  }

  std::unique_ptr<Plan> make_plan(int threads, const Shape& x) const {
    const auto& eng = ops::bf16_engine();
    dnnl::stream st(eng);
    ops::dnnl_single_thread();
    auto p = std::make_unique<Plan>();
    p->x = x;
    p->g = window_geometry(attrs_, {x[2], x[3]}, Shape(ws_.begin() + 2, ws_.end()), *this);
    p->y = {x[0], ws_[0], p->g.out[1], p->g.out[2]};
    if (sdk::numel(p->y) == 0) return p;
    const Geometry& g = p->g;
    const int64_t N = x[0], C = x[1], H = x[2], W = x[3], M = p->y[1], OH = p->y[2], OW = p->y[3];
    const memory::desc x_md({N, C, H, W}, in_bf16_ ? dt::bf16 : dnnl_type(x_type_), in_nhwc_ ? tag::nhwc : tag::nchw);
    const memory::desc src_md({N, C, H, W}, dt::bf16, tag::nhwc);
    p->src = src_md;
    p->src_bytes = in_bf16_ ? 0 : align64(src_md.get_size());
    // Rows of X in bands, one per thread at most (a band per part keeps each
    // thread's reorder about as long as the others'); none for X in bfloat16.
    const int64_t nb = in_bf16_ ? 0 : std::max<int64_t>(1, std::min<int64_t>(threads, H));
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t h0 = H * b / nb, h1 = H * (b + 1) / nb;
      Band band;
      band.from = x_md.submemory_desc({N, C, h1 - h0, W}, {0, 0, h0, 0});
      band.to = src_md.submemory_desc({N, C, h1 - h0, W}, {0, 0, h0, 0});
      band.to_bf16 = dnnl::reorder(dnnl::reorder::primitive_desc(eng, band.from, eng, band.to));
      p->bands.push_back(std::move(band));
    }
    // Output channels in slices of whole 16-channel blocks, at most one per thread.
    const int64_t blocks = (M + 15) / 16, np = std::max<int64_t>(1, std::min<int64_t>(threads, blocks));
    const memory::desc y_md({N, M, OH, OW}, out_bf16_ ? dt::bf16 : dnnl_type(x_type_), out_nhwc_ ? tag::nhwc : tag::nchw);
    // One part writes Y itself where Y is channels-last, in bfloat16 only
    // without a summand (Z is added in float before the one rounding).
    const bool y_direct = np == 1 && out_nhwc_ && (out_bf16_ ? !summand_ : x_type_ == SINGA_ONNX_FLOAT);
    const memory::desc w_md({M, C, ws_[2], ws_[3]}, dt::bf16, tag::oihw);
    dnnl::post_ops po;
    if (summand_) po.append_sum(1.f);
    ops::append_activation(po, act_);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    // A float channels-last Z read whole (one part) is added by a binary
    // post-op where oneDNN takes one: it saves copying Z into the output.
    const memory::desc z_md({N, M, OH, OW}, dnnl_type(x_type_), z_nhwc_ ? tag::nhwc : tag::nchw);
    const bool try_z_post_op = summand_ && np == 1 && z_nhwc_ && x_type_ == SINGA_ONNX_FLOAT;
    dnnl::primitive_attr z_attr;
    if (try_z_post_op) {
      dnnl::post_ops zpo;
      zpo.append_binary(dnnl::algorithm::binary_add, z_md);
      ops::append_activation(zpo, act_);
      z_attr.set_post_ops(zpo);
    }
    size_t at = p->src_bytes;
    for (int64_t q = 0; q < np; ++q) {
      Part part;
      part.c0 = std::min(M, blocks * q / np * 16), part.c1 = std::min(M, blocks * (q + 1) / np * 16);
      const int64_t Mq = part.c1 - part.c0;
      const dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
          memory::desc({Mq, C, ws_[2], ws_[3]}, dt::bf16, tag::any), memory::desc({Mq}, dt::f32, tag::a),
          memory::desc({N, Mq, OH, OW}, y_direct && out_bf16_ ? dt::bf16 : dt::f32, tag::nhwc), {g.s[1], g.s[2]}, {g.d[1] - 1, g.d[2] - 1},
          {g.pb[1], g.pb[2]}, {g.pe[1], g.pe[2]});
      dnnl::convolution_forward::primitive_desc pd;
      if (try_z_post_op) {
        try {
          pd = dnnl::convolution_forward::primitive_desc(d, z_attr, eng);
          part.z_post_op = true;
        } catch (const dnnl::error&) {
          part.z_post_op = false;  // the copy and a sum post-op instead
        }
      }
      if (!part.z_post_op) pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
      part.conv = dnnl::convolution_forward(pd);
      part.weights = packed(part.c0, part.c1, pd.weights_desc(), w_md, st);
      part.bias = memory(memory::desc({Mq}, dt::f32, tag::a), eng);
      std::copy(bias_.begin() + part.c0, bias_.begin() + part.c1, static_cast<float*>(part.bias.get_data_handle()));
      part.dst = pd.dst_desc();
      part.direct = y_direct && part.dst == y_md;
      part.dst_at = at;
      if (!part.direct) at += align64(part.dst.get_size());
      part.y_slice = y_md.submemory_desc({N, Mq, OH, OW}, {0, part.c0, 0, 0});
      part.y_out = dnnl::reorder(dnnl::reorder::primitive_desc(eng, part.dst, eng, part.y_slice));
      if (summand_) {
        part.z_slice = z_md.submemory_desc({N, Mq, OH, OW}, {0, part.c0, 0, 0});
        if (!part.z_post_op) part.z_in = dnnl::reorder(dnnl::reorder::primitive_desc(eng, part.z_slice, eng, part.dst));
      }
      p->parts.push_back(std::move(part));
    }
    st.wait();
    p->ws_bytes = at;
    return p;
  }

  WindowAttrs attrs_;
  FusedActivation act_;
  int64_t group_;
  Shape ws_;
  int32_t x_type_ = SINGA_ONNX_FLOAT;
  bool summand_ = false, in_nhwc_ = false, out_nhwc_ = false, z_nhwc_ = false;
  bool in_bf16_ = false, out_bf16_ = false;  // X / Y in kChannelsLastBf16Layout
  std::vector<uint16_t> w_;  // W in bfloat16 (OIHW), read when a plan is made
  std::vector<float> bias_;
  mutable std::mutex mu_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const Plan>> plans_;
  struct Packed {
    int64_t c0, c1;
    memory::desc layout;
    memory weights;  // a dnnl::memory shares its buffer between copies
  };
  mutable std::vector<Packed> packed_;
};

}  // namespace

void register_bf16_conv(sdk::Registrar& reg) {
  const uint64_t types = bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_BFLOAT16);
  reg.kernel<Bf16Conv>(ops::kCpuDomain, ops::kBf16ConvOp, 1, 1, "cpu", {{"T", 0, types}},
                       {{0, kChannelsLastBf16Layout},
                        {-1, kChannelsLastBf16Layout},
                        {0, kChannelsLastLayout},
                        {3, kChannelsLastLayout},
                        {-1, kChannelsLastLayout}});
  register_bf16_conv_pass(reg);
}

}  // namespace nn
}  // namespace singa
