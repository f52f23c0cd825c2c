// The ops_tensor pack: shape and data-movement operators of the ONNX domain,
// CPU kernels for every fixed-size dtype, opsets 1..17.
#include "registry.hpp"

SINGA_PLUGIN("ops_tensor", "0.1.0", "ONNX shape and data-movement operators (Reshape, Transpose, Slice, Gather, ...)") {
  using namespace singa::ops::tensor;
  register_reshape_ops(reg);
  register_transpose_ops(reg);
  register_concat_split(reg);
  register_slice(reg);
  register_gather_ops(reg);
  register_scatter_ops(reg);
  register_shape_ops(reg);
  register_constant_ops(reg);
  register_cast_ops(reg);
  register_bitcast(reg);
  register_expand_tile(reg);
  register_pad(reg);
  register_select_ops(reg);
  register_trilu(reg);
  register_reverse_sequence(reg);
  register_resize(reg);
  register_non_max_suppression(reg);
  register_roi_align(reg);
  register_string_normalizer(reg);
  register_unique(reg);
}
