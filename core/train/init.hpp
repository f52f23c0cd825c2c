// init.hpp - weight initialisation shared by the layers (internal to libsinga_core).
#ifndef SINGA_CORE_TRAIN_INIT_HPP
#define SINGA_CORE_TRAIN_INIT_HPP

#include <singa/layer.hpp>

namespace singa {
namespace layer {
namespace detail {

// A trainable float Variable drawn from U(-bound, bound) with the generator
// that manual_seed() seeds: PyTorch's default for Linear, Conv and LSTM
// (bound = 1 / sqrt(fan_in), or 1 / sqrt(hidden) for recurrent layers).
Variable uniform(const Shape& shape, double bound, const std::string& name);

}  // namespace detail
}  // namespace layer
}  // namespace singa
#endif
