#include "gemm.hpp"

#include <cstdlib>
#include <cstring>

namespace singa {
namespace opencl {

namespace {

constexpr size_t kTile = 64, kGroup = 16;

}  // namespace

// Option opencl.gemm=simple|tiled|vec forces one kernel (to compare them on a
// device); by default the shape decides.
int gemm_option(const sdk::Node& node) {
  const char* v = node.option("opencl.gemm");
  if (!v) return 0;
  if (std::strcmp(v, "simple") == 0) return 1;
  if (std::strcmp(v, "tiled") == 0) return 2;
  if (std::strcmp(v, "vec") == 0) return 3;
  throw sdk::Error(SINGA_INVALID_ARGUMENT, std::string("option opencl.gemm=") + v + ": expected simple, tiled or vec");
}

void gemm(const NodeKernel& k, DeviceEnv& env, const GemmCall& g) {
  if (g.M == 0 || g.N == 0 || g.nb1 == 0 || g.nb2 == 0) return;
  const int forced = k.forced_gemm();
  const bool fits = env.max_work_group >= kGroup * kGroup;
  // CPU devices (PoCL) run the register-blocked float8 kernel best; GPUs the
  // local-memory tiles, which pay only when both sides fill most of a 64x64
  // tile. Thin products use the one-output kernel.
  enum { kSimple, kTiled, kVec } which = kSimple;
  if (forced == 1)
    which = kSimple;
  else if (forced == 2 && fits)
    which = kTiled;
  else if (forced == 3 && g.sbn == 1)
    which = kVec;
  else if (forced == 0 && env.is_cpu && g.sbn == 1 && g.N >= 8)
    which = kVec;
  else if (forced == 0 && fits && g.M >= 32 && g.N >= 32)
    which = kTiled;
  static const char* names[] = {"gemm_simple", "gemm_tiled", "gemm_vec"};
  Launch l = k.launch(env, Program::kGemm, names[which]);
  l.arg(g.a).arg(g.b).arg(g.bias).arg(g.c).arg(g.M).arg(g.N).arg(g.K);
  l.arg(g.sam).arg(g.sak).arg(g.sbk).arg(g.sbn).arg(g.srm).arg(g.srn).arg(g.alpha).arg(g.beta);
  l.arg(g.nb2).arg(g.sa1).arg(g.sa2).arg(g.sb1).arg(g.sb2).arg(g.sr1).arg(g.sr2);
  const size_t batch = size_t(g.nb1) * size_t(g.nb2);
  if (which == kTiled)
    l.run({(size_t(g.N) + kTile - 1) / kTile * kGroup, (size_t(g.M) + kTile - 1) / kTile * kGroup, batch},
          {kGroup, kGroup, 1});
  else if (which == kVec)
    l.run({(size_t(g.N) + 7) / 8, (size_t(g.M) + 3) / 4, batch});
  else
    l.run({size_t(g.N), size_t(g.M), batch});
}

}  // namespace opencl
}  // namespace singa
