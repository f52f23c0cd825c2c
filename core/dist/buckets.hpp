// buckets.hpp - how DistOpt packs parameters (or their gradients) into flat
// buffers, one collective per bucket.
#ifndef SINGA_CORE_DIST_BUCKETS_HPP
#define SINGA_CORE_DIST_BUCKETS_HPP

#include <singa/dist.hpp>

#include <cstdint>
#include <vector>

namespace singa {
namespace dist {

struct Bucket {
  std::vector<size_t> params;     // indices into the parameter list
  std::vector<int64_t> offsets;   // of each parameter in the flat buffer
  int64_t count = 0;              // elements
  // Per step:
  size_t ready = 0;               // parameters whose gradient is final
  bool started = false;
  int64_t ticket = -1;
  bool on_device = false;         // averaged in place on the parameters' GPU (NCCL): f32/f16 unused
  std::vector<float> f32;
  std::vector<uint16_t> f16;
};

// Groups parameters of `numels` (in reverse order: backward finishes the
// last layers first) into buckets of about `bytes` bytes of float32 each; a
// parameter is never split. `bucket_of` gets each parameter's bucket.
std::vector<Bucket> make_buckets(const std::vector<int64_t>& numels, int64_t bytes, std::vector<size_t>& bucket_of);

// Sparse exchange: the entries of `v` sent this step, as (index + base,
// value) pairs. top_k: the max(1, round(spars * n)) largest |v|; otherwise
// |v| >= spars. Sent entries are zeroed in `v`, so that v is what is kept
// back (the residual).
void select_sparse(std::vector<float>& v, bool top_k, float spars, int64_t base, std::vector<int32_t>& idx,
                   std::vector<float>& val);

}  // namespace dist
}  // namespace singa
#endif
