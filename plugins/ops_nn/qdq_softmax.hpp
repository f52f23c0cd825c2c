// qdq_softmax.hpp - registers the QdqSoftmax kernel (qdq_softmax.cpp).
#ifndef SINGA_OPS_NN_QDQ_SOFTMAX_HPP
#define SINGA_OPS_NN_QDQ_SOFTMAX_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace nn {
void register_qdq_softmax(sdk::Registrar& reg);
}  // namespace nn
}  // namespace singa
#endif
