// init_throws.cpp - a C++ plugin whose registration body throws after it has
// registered a kernel. SINGA_PLUGIN must turn the exception into a status
// (an exception crossing a C boundary is undefined behaviour), and the host
// must drop the kernel.
#include "negate_kernel.hpp"

#include <stdexcept>

SINGA_PLUGIN("test_init_throws", "0.0.1", "singa test plugin whose registration throws") {
  reg.kernel<singa_test::Negate>("com.singa.test", "ThrowsOp", 1, 10, "cpu", {{"T", 0, singa_test::kFloatOnly}});
  throw std::runtime_error("test_init_throws: registration body threw on purpose");
}
