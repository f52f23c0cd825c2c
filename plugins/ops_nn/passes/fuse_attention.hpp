// fuse_attention.hpp - the ops_nn pack's attention graph pass, cpu.attention:
// softmax(Q K^T s) V over head views -> one ai.singa.cpu Attention node.
#ifndef SINGA_OPS_NN_PASSES_FUSE_ATTENTION_HPP
#define SINGA_OPS_NN_PASSES_FUSE_ATTENTION_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace nn {
namespace passes {

constexpr const char* kAttentionPass = "cpu.attention";
// Between ops_math's cpu.transposed_b (1280), whose FusedMatMuls it reads,
// and cpu.matmul_epilogues (1260); see plugins/ops_math/passes/matmul_passes.hpp.
constexpr int32_t kAttentionPriority = 1270;

// Returns the number of attention blocks fused.
int fuse_attention(sdk::Graph& g);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
