// fuse_qdq_softmax.hpp - the pass that turns a QDQ attention score step into QdqSoftmax.
#ifndef SINGA_OPS_NN_PASSES_FUSE_QDQ_SOFTMAX_HPP
#define SINGA_OPS_NN_PASSES_FUSE_QDQ_SOFTMAX_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace nn {
namespace passes {

constexpr const char* kQdqSoftmaxPass = "cpu.qdq_softmax";
int fuse_qdq_softmaxes(sdk::Graph& g);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
