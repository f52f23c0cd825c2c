// DistOpt's NCCL path: parameters on a CUDA device, K fp32 steps, compared
// with plain SGD on the global batch computed here in double precision.
// Without a CUDA device or libsinga_dist_nccl.so the program prints why and
// exits 77 (meson's SKIP). nccl_test.sh runs it as one rank, and on two ranks
// under mpirun only where two GPUs are visible: NCCL refuses two ranks of
// one communicator on the same GPU ("Duplicate GPU detected").
//
//   test_dist_nccl               run the tests (or exit 77 with the reason)
//   test_dist_nccl --count-gpus  print the number of CUDA devices singa sees
#include <gtest/gtest.h>

#include <singa/autograd.hpp>
#include <singa/dist.hpp>
#include <singa/error.hpp>
#include <singa/optim.hpp>
#include <singa/runtime.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace singa;
using autograd::Variable;

namespace {

constexpr int64_t kBatch = 6, kIn = 5, kOut = 3;  // per-rank batch, features, targets
constexpr int kSteps = 4;
constexpr double kLr = 0.05, kMomentum = 0.9;

Device* cuda() { return Runtime::instance().device("cuda"); }

int gpu_count(std::string* why) {
  Runtime& rt = Runtime::instance();
  if (!rt.loaded()) rt.load();
  Device* d = cuda();
  if (!d) {
    if (why) *why = "the CUDA plugin (singa_cuda.so) is not loaded";
    return 0;
  }
  return d->count(why);
}

// Why this process cannot run the tests, or "" when it can.
std::string unavailable() {
  std::string why;
  if (gpu_count(&why) <= 0) return "no CUDA device: " + why;
  if (!dist::have_nccl()) return "libsinga_dist_nccl.so does not load (CUDA runtime or libnccl missing at run time)";
  return "";
}

std::vector<double> normal(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(0, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

Tensor host_tensor(const Shape& s, const std::vector<double>& v) {
  Tensor t(s, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(v[size_t(i)]);
  return t;
}

// Rank r's shard: rows x (kBatch x kIn) and targets y (kBatch x kOut).
std::vector<double> shard_x(int r) { return normal(kBatch * kIn, 100 + uint64_t(r)); }
std::vector<double> shard_y(int r) { return normal(kBatch * kOut, 200 + uint64_t(r)); }

// The optimizers update parameters through host pointers, so they cannot
// touch CUDA memory yet; this SGD updates a host copy and writes it back,
// which keeps the test about the gradients NCCL averaged.
class DeviceSGD : public optim::SGD {
 public:
  using SGD::SGD;

 protected:
  void update(Tensor& p, const Tensor& g, std::vector<Tensor>& slots) override {
    if (p.on_host() && g.on_host()) return SGD::update(p, g, slots);
    Tensor hp = p.to_host(), hg = g.to_host();
    if (p.on_host()) hp = hp.clone();  // to_host would alias p's storage
    SGD::update(hp, hg, slots);
    if (p.on_host())
      std::memcpy(p.raw_data(), hp.raw_data(), hp.nbytes());
    else
      p.device()->copy(p.device_id(), p.raw_data(), 0, hp.raw_data(), 0, hp.nbytes(), SINGA_COPY_HOST_TO_DEVICE);
  }
};

// Forwards to the job's communicator and counts the float32 all-reduces: the
// host path sends every gradient bucket through them, the NCCL path none.
class CountingComm : public dist::Communicator {
 public:
  explicit CountingComm(std::shared_ptr<dist::Communicator> inner) : in_(std::move(inner)) {}
  int float_allreduces = 0;

  int rank() const override { return in_->rank(); }
  int size() const override { return in_->size(); }
  int local_rank() const override { return in_->local_rank(); }
  std::string backend() const override { return in_->backend(); }
  int64_t start_allreduce(void* data, int64_t count, dist::Elem type) override {
    if (type == dist::Elem::kFloat32) ++float_allreduces;
    return in_->start_allreduce(data, count, type);
  }
  void progress() override { in_->progress(); }
  void wait(int64_t ticket, const std::string& what) override { in_->wait(ticket, what); }
  void allgather(const void* data, size_t bytes, void* out, const std::string& what) override {
    in_->allgather(data, bytes, out, what);
  }
  void broadcast(void* data, size_t bytes, int root, const std::string& what) override {
    in_->broadcast(data, bytes, root, what);
  }
  void barrier(const std::string& what) override { in_->barrier(what); }
  [[noreturn]] void abort(int code) override {
    in_->abort(code);
    std::abort();  // not reached: the inner abort ends the job
  }

 protected:
  void allgatherv(const void* data, size_t bytes, void* out, const std::vector<size_t>&,
                  const std::string& what) override {
    auto all = in_->allgather_bytes(std::string(static_cast<const char*>(data), bytes), what);
    char* o = static_cast<char*>(out);
    for (const auto& s : all) std::memcpy(o, s.data(), s.size()), o += s.size();
  }

 private:
  std::shared_ptr<dist::Communicator> in_;
};

// Reference: SGD with momentum on loss = mean((x w + b - y)^2) over the
// global batch (every rank's shard), in double precision.
void reference(int ranks, std::vector<double>& w, std::vector<double>& b) {
  std::vector<double> x, y;
  for (int r = 0; r < ranks; ++r) {
    auto xr = shard_x(r), yr = shard_y(r);
    x.insert(x.end(), xr.begin(), xr.end());
    y.insert(y.end(), yr.begin(), yr.end());
  }
  const int64_t rows = kBatch * ranks;
  std::vector<double> vw(w.size()), vb(b.size());
  for (int step = 0; step < kSteps; ++step) {
    std::vector<double> gw(w.size(), 0), gb(b.size(), 0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t o = 0; o < kOut; ++o) {
        double pred = b[size_t(o)];
        for (int64_t k = 0; k < kIn; ++k) pred += x[size_t(i * kIn + k)] * w[size_t(k * kOut + o)];
        const double d = 2 * (pred - y[size_t(i * kOut + o)]) / double(rows * kOut);
        gb[size_t(o)] += d;
        for (int64_t k = 0; k < kIn; ++k) gw[size_t(k * kOut + o)] += x[size_t(i * kIn + k)] * d;
      }
    for (size_t i = 0; i < w.size(); ++i) vw[i] = step ? kMomentum * vw[i] + gw[i] : gw[i], w[i] -= kLr * vw[i];
    for (size_t i = 0; i < b.size(); ++i) vb[i] = step ? kMomentum * vb[i] + gb[i] : gb[i], b[i] -= kLr * vb[i];
  }
}

TEST(DistNccl, Fp32OnCudaMatchesTheGlobalBatch) {
  auto comm = std::make_shared<CountingComm>(dist::world());
  const int rank = comm->rank(), ranks = comm->size();
  const int dev = comm->local_rank() % gpu_count(nullptr);
  std::vector<double> w0 = normal(kIn * kOut, 1), b0 = normal(kOut, 2);
  Variable w(host_tensor({kIn, kOut}, w0).to(cuda(), dev), true, "w");
  Variable b(host_tensor({kOut}, b0).to(cuda(), dev), true, "b");
  ASSERT_EQ(w.data().device_name().rfind("cuda", 0), 0u) << w.data().device_name();
  DeviceSGD sgd({{"w", w}, {"b", b}}, kLr, kMomentum);
  dist::DistOptions o;
  o.bucket_bytes = 16;  // w and b in buckets (NCCL groups) of their own
  dist::DistOpt d(sgd, comm, o);
  const int before = comm->float_allreduces;

  Variable x(host_tensor({kBatch, kIn}, shard_x(rank)).to(cuda(), dev));
  Variable y(host_tensor({kBatch, kOut}, shard_y(rank)).to(cuda(), dev));
  for (int step = 0; step < kSteps; ++step) {
    sgd.zero_grad();
    Variable err = autograd::sub(autograd::add(autograd::matmul(x, w), b), y);
    d.backward_and_update(autograd::reduce_mean(autograd::mul(err, err), {}));
    EXPECT_GE(d.last_step().buckets, 2);
  }
  // The gradients went through NCCL: no float32 all-reduce on the host.
  EXPECT_EQ(comm->float_allreduces, before) << "DistOpt averaged on the host, not with NCCL";
  EXPECT_EQ(w.data().device_name().rfind("cuda", 0), 0u) << "w left the GPU: " << w.data().device_name();

  std::vector<double> rw = w0, rb = b0;
  reference(ranks, rw, rb);
  Tensor gw = w.data().to_host(), gb = b.data().to_host();
  for (int64_t i = 0; i < gw.numel(); ++i)
    EXPECT_NEAR(gw.data<float>()[i], rw[size_t(i)], 1e-4 * (1 + std::fabs(rw[size_t(i)]))) << "w[" << i << "]";
  for (int64_t i = 0; i < gb.numel(); ++i)
    EXPECT_NEAR(gb.data<float>()[i], rb[size_t(i)], 1e-4 * (1 + std::fabs(rb[size_t(i)]))) << "b[" << i << "]";

  // Every rank holds the same weights (the sum over ranks is N times ours).
  std::vector<double> mine(gw.data<float>(), gw.data<float>() + gw.numel());
  auto total = d.sum(mine);
  for (size_t i = 0; i < mine.size(); ++i) EXPECT_NEAR(total[i], mine[i] * ranks, 1e-5 * ranks) << "w[" << i << "]";
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "--count-gpus") == 0) {
    std::printf("%d\n", std::max(0, gpu_count(nullptr)));
    return 0;
  }
  const std::string why = unavailable();
  if (!why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
