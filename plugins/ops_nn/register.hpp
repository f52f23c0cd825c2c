// register.hpp - each source file of the pack registers its own kernels.
#ifndef SINGA_OPS_NN_REGISTER_HPP
#define SINGA_OPS_NN_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace nn {

void register_activations(sdk::Registrar& reg);
void register_clip(sdk::Registrar& reg);
void register_dropout(sdk::Registrar& reg);
void register_conv(sdk::Registrar& reg);
void register_conv_relu_pool(sdk::Registrar& reg);
void register_expand_depthwise_project(sdk::Registrar& reg);
void register_attention(sdk::Registrar& reg);
void register_conv_transpose(sdk::Registrar& reg);
void register_pool(sdk::Registrar& reg);
void register_global_pool(sdk::Registrar& reg);
void register_batch_norm(sdk::Registrar& reg);
void register_instance_norm(sdk::Registrar& reg);
void register_layer_norm(sdk::Registrar& reg);
void register_lrn(sdk::Registrar& reg);
void register_quant_conv(sdk::Registrar& reg);
void register_qdq_elementwise(sdk::Registrar& reg);
void register_mvn(sdk::Registrar& reg);
void register_max_unpool(sdk::Registrar& reg);
void register_losses(sdk::Registrar& reg);
void register_quantize_linear(sdk::Registrar& reg);
void register_grid_sample(sdk::Registrar& reg);
void register_random(sdk::Registrar& reg);
void register_group_norm(sdk::Registrar& reg);
void register_affine_grid(sdk::Registrar& reg);
void register_col2im(sdk::Registrar& reg);
void register_deform_conv(sdk::Registrar& reg);
void register_lp_norm(sdk::Registrar& reg);
void register_onnx_attention(sdk::Registrar& reg);
void register_rotary_embedding(sdk::Registrar& reg);
void register_rms_norm(sdk::Registrar& reg);
void register_swiglu(sdk::Registrar& reg);
void register_glu(sdk::Registrar& reg);
void register_channel_gate(sdk::Registrar& reg);
void register_causal_conv_state(sdk::Registrar& reg);
void register_linear_attention(sdk::Registrar& reg);
void register_grid_sample_grad(sdk::Registrar& reg);

}  // namespace nn
}  // namespace singa

#endif
