// toy_fusions.hpp - the toy device's graph pass.
#ifndef TOY_FUSIONS_HPP
#define TOY_FUSIONS_HPP

#include <singa/graph_pass.hpp>

namespace toy {

// The pass's name: the named option "pass.toy.fusions=0" switches it off.
constexpr const char* kPassName = "toy.fusions";

// Claims Gemm -> Relu and Add -> Relu in a graph prepared for the toy
// device and rewrites each pair into toy.vendor::GemmRelu / AddRelu.
// Returns the number of rewrites.
int fuse(singa::sdk::Graph& g);

}  // namespace toy

#endif  // TOY_FUSIONS_HPP
