// toy_kernels.hpp - the kernels that run on the toy device.
//
// Standard ops (float32 only): Add, Relu, MatMul and Gemm. Each declines, at
// create, what it does not take (broadcasts beyond a single element,
// batched MatMul, shapes unknown at prepare time) by throwing
// SINGA_UNIMPLEMENTED: the core then tries the next kernel and finally the
// CPU, so the model still runs.
//
// Fused ops of the toy's own domain, which only the toy's graph pass
// (toy_fusions.hpp) writes into a graph:
//   toy.vendor::AddRelu   Y = Relu(A + B)                 inputs and rules of Add
//   toy.vendor::GemmRelu  Y = Relu(Gemm(A, B, C))         inputs and attributes of Gemm
#ifndef TOY_KERNELS_HPP
#define TOY_KERNELS_HPP

#include <singa/kernel.hpp>

#include <string>

namespace toy {

// The domain of the fused ops.
constexpr const char* kDomain = "toy.vendor";

void register_kernels(singa::sdk::Registrar& reg);

// Why the kernels would decline these prepare-time shapes ("" = they take
// them). The graph pass asks the same questions before it claims a node
// group: a fused op runs nowhere else, so a group its kernel would decline
// must stay unfused.
std::string add_declines(const singa::sdk::Shape& a, const singa::sdk::Shape& b);
std::string dense_declines(const singa::sdk::Shape& a, const singa::sdk::Shape& b);

}  // namespace toy

#endif  // TOY_KERNELS_HPP
