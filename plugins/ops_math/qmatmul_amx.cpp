#include "qmatmul_amx.hpp"

#include <dnnl_threads.hpp>
#include <line_aligned.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace math {

using dnnl::memory;
using dt = memory::data_type;

namespace {

// One primitive per part height (and lda), with B in the layout it wants.
struct Prim {
  dnnl::matmul mm;
  memory::desc src, dst, scratch;
  memory weights;
};

}  // namespace

struct AmxB8::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  int64_t K = 0, N = 0;
  std::vector<int8_t> b;  // [K, N] row-major, until the first primitive has packed it
  memory packed;          // B in the first primitive's layout, shared by every primitive
  mutable std::mutex mu;
  mutable std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Prim>> prims;  // by (rows, lda)
};

namespace {

// The primitive for `rows` x K parts of A with row stride lda; throws
// dnnl::error where oneDNN has no AMX code for it.
std::unique_ptr<Prim> make_prim(AmxB8::State& s, int64_t rows, int64_t lda) {
  dnnl_single_thread();
  auto p = std::make_unique<Prim>();
  p->src = memory::desc({rows, s.K}, dt::u8, memory::dims{lda, 1});
  p->dst = memory::desc({rows, s.N}, dt::s32, memory::format_tag::ab);
  const memory::desc w_any({s.K, s.N}, dt::s8, memory::format_tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->src, w_any, p->dst), attr, s.eng);
  if (std::string(pd.impl_info_str()).find("amx") == std::string::npos)
    throw dnnl::error(dnnl_unimplemented, "no AMX code for the product");
  p->mm = dnnl::matmul(pd);
  p->scratch = pd.scratchpad_desc();
  if (s.packed && s.packed.get_desc() == pd.weights_desc()) {
    p->weights = s.packed;
    return p;
  }
  // Only one packed copy is kept (the plain B is dropped once packed): a
  // part height that wants another layout runs on the VNNI kernel instead.
  if (s.packed) throw dnnl::error(dnnl_unimplemented, "another weight layout");
  memory user({{s.K, s.N}, dt::s8, memory::format_tag::ab}, s.eng, s.b.data());
  p->weights = memory(pd.weights_desc(), s.eng);
  dnnl::stream st(s.eng);
  dnnl::reorder(user, p->weights).execute(st, user, p->weights);
  st.wait();
  s.packed = p->weights;
  s.b.clear();
  s.b.shrink_to_fit();
  return p;
}

}  // namespace

bool amx_int8_available() {
  static const bool on = [] {
    try {
      return dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return on;
}

AmxB8::~AmxB8() = default;

std::shared_ptr<AmxB8> AmxB8::plan(std::vector<int8_t> b, int64_t K, int64_t N) {
  if (!amx_int8_available() || K <= 0 || N <= 0 || int64_t(b.size()) != K * N) return nullptr;
  std::shared_ptr<AmxB8> m(new AmxB8());
  m->s_ = std::make_unique<State>();
  State& s = *m->s_;
  s.K = K, s.N = N;
  s.b = std::move(b);
  try {
    // The usual part height, planned now so that B is packed at create.
    s.prims.emplace(std::make_pair(int64_t(32), K), make_prim(s, 32, K));
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return m;
}

bool AmxB8::product(int64_t rows, const uint8_t* a, int64_t lda, int32_t* acc) const {
  State& s = *s_;
  const Prim* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.prims.find({rows, lda});
    if (it == s.prims.end()) {
      std::unique_ptr<Prim> made;
      try {
        made = make_prim(s, rows, lda);
      } catch (const dnnl::error&) {
        made = nullptr;
      }
      it = s.prims.emplace(std::make_pair(rows, lda), std::move(made)).first;
    }
    p = it->second.get();
  }
  if (!p) return false;
  dnnl_single_thread();
  // oneDNN's scratchpad is per process unless told otherwise: each thread
  // hands its parts its own.
  thread_local std::vector<float> pad;
  dnnl::stream st(s.eng);
  memory sp(p->scratch, s.eng, fast::line_aligned(pad, (p->scratch.get_size() + 3) / 4));
  memory src(p->src, s.eng, const_cast<uint8_t*>(a)), dst(p->dst, s.eng, acc);
  p->mm.execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p->weights}, {DNNL_ARG_DST, dst},
                     {DNNL_ARG_SCRATCHPAD, sp}});
  st.wait();
  return true;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
