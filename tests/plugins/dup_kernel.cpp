// dup_kernel.cpp - registers a kernel of its own, then one for
// com.singa.test::TestScale on the CPU over opsets 5-20, which overlaps the
// good plugin's 1-10 for the same dtype. Whichever of the two loads second
// must be refused as a whole: its other kernel must not stay behind.
#include "negate_kernel.hpp"

SINGA_PLUGIN("test_dup_kernel", "0.0.1", "singa test plugin that duplicates TestScale") {
  reg.kernel<singa_test::Negate>("com.singa.test", "DupOther", 1, 10, "cpu", {{"T", 0, singa_test::kFloatOnly}});
  reg.kernel<singa_test::Negate>("com.singa.test", "TestScale", 5, 20, "cpu", {{"T", 0, singa_test::kFloatOnly}});
}
