// register.hpp - each source file of the ops_image pack registers its kernels.
#ifndef SINGA_OPS_IMAGE_REGISTER_HPP
#define SINGA_OPS_IMAGE_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace image {

void register_image_decoder(sdk::Registrar& reg);

}  // namespace image
}  // namespace singa

#endif
