// The ops_nn pack: convolution, pooling, normalisation, activations, dropout.
#include "register.hpp"
#include "passes/register_passes.hpp"

SINGA_PLUGIN("ops_nn", "0.1.0", "neural-network ops: conv, pooling, normalisation, activations, dropout (CPU)") {
  using namespace singa::nn;
  register_activations(reg);
  register_clip(reg);
  register_dropout(reg);
  register_conv(reg);
  register_conv_relu_pool(reg);
  register_expand_depthwise_project(reg);
  register_attention(reg);
  register_conv_transpose(reg);
  register_pool(reg);
  register_global_pool(reg);
  register_batch_norm(reg);
  register_instance_norm(reg);
  register_layer_norm(reg);
  register_lrn(reg);
  register_quant_conv(reg);
  register_qdq_elementwise(reg);
  register_mvn(reg);
  register_max_unpool(reg);
  register_losses(reg);
  register_quantize_linear(reg);
  register_grid_sample(reg);
  register_random(reg);
  register_group_norm(reg);
  register_affine_grid(reg);
  register_col2im(reg);
  register_deform_conv(reg);
  register_lp_norm(reg);
  register_onnx_attention(reg);
  register_rotary_embedding(reg);
  register_rms_norm(reg);
  register_swiglu(reg);
  register_glu(reg);
  register_channel_gate(reg);
  register_causal_conv_state(reg);
  register_linear_attention(reg);
  register_grid_sample_grad(reg);
  // The Conv fusions and layouts for graphs prepared on the CPU.
  passes::register_graph_passes(reg);
}
