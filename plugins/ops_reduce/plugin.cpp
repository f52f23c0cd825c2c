// The ops_reduce pack: reductions, the softmax family, arg-extremes, CumSum, TopK.
#include "reduce_common.hpp"

SINGA_PLUGIN("ops_reduce", "0.1.0", "reductions, softmax family, ArgMax/ArgMin, CumSum, TopK (CPU)") {
  using namespace singa::ops::reduce;
  register_reductions(reg);
  register_softmax(reg);
  register_argminmax(reg);
  register_cumsum(reg);
  register_topk(reg);
}
