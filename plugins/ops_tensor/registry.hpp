// registry.hpp - one registration function per source file of the pack.
#ifndef SINGA_OPS_TENSOR_REGISTRY_HPP
#define SINGA_OPS_TENSOR_REGISTRY_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace tensor {

void register_reshape_ops(sdk::Registrar& reg);    // Reshape Flatten Squeeze Unsqueeze Identity
void register_transpose_ops(sdk::Registrar& reg);  // Transpose DepthToSpace SpaceToDepth
void register_concat_split(sdk::Registrar& reg);   // Concat Split
void register_slice(sdk::Registrar& reg);          // Slice
void register_gather_ops(sdk::Registrar& reg);     // Gather GatherElements GatherND Compress
void register_scatter_ops(sdk::Registrar& reg);    // Scatter ScatterElements ScatterND
void register_shape_ops(sdk::Registrar& reg);      // Shape Size
void register_constant_ops(sdk::Registrar& reg);   // Constant ConstantOfShape EyeLike Range
void register_cast_ops(sdk::Registrar& reg);       // Cast CastLike
void register_bitcast(sdk::Registrar& reg);        // BitCast
void register_expand_tile(sdk::Registrar& reg);    // Expand Tile
void register_pad(sdk::Registrar& reg);            // Pad
void register_select_ops(sdk::Registrar& reg);     // NonZero OneHot
void register_trilu(sdk::Registrar& reg);          // Trilu
void register_reverse_sequence(sdk::Registrar& reg);
void register_resize(sdk::Registrar& reg);         // Resize Upsample
void register_non_max_suppression(sdk::Registrar& reg);
void register_roi_align(sdk::Registrar& reg);
void register_string_normalizer(sdk::Registrar& reg);
void register_unique(sdk::Registrar& reg);  // Unique

}  // namespace tensor
}  // namespace ops
}  // namespace singa

#endif
