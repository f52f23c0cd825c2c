// `singa train`: SINGA's sonnx MNIST workflow on Fashion-MNIST, in stages.
//   train     the seed CNN from scratch, then test accuracy
//   export    the trained CNN to ONNX (to_onnx)
//   import    the exported file back through prepare(), test accuracy
//   retrain   the imported model trained further on the autograd tape
//   transfer  the imported model cut before its last layer (last_layers=-1),
//             with Linear 500->128->32->10 appended, trained
// Each stage prints its accuracy (one JSON line with --json).
// With --classes, `singa train --model FILE.onnx --cut -1 --classes 10`
// fine-tunes any ONNX image classifier instead (stage "finetune"): the
// imported model cut, a new head, Fashion-MNIST resized to its input, the
// result exported to --export. A checkpoint
// written after every epoch lets --resume continue where a run stopped.
// Under `mpirun -np N` (or srun) the ranks train data-parallel through
// DistOpt (docs/distributed.md): each step's global batch is N x --batch,
// split among the ranks; rank 0 alone prints, checkpoints and exports.
#include "cli.hpp"
#include "json.hpp"

#include <singa/autograd.hpp>
#include <singa/checkpoint.hpp>
#include <singa/dataset.hpp>
#include <singa/dist.hpp>
#include <singa/frontend.hpp>
#include <singa/layer.hpp>
#include <singa/loss.hpp>
#include <singa/onnx.hpp>
#include <singa/optim.hpp>

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace singa {
namespace cli {

namespace {

using autograd::Variable;
using Clock = std::chrono::steady_clock;

const char* const kStages[] = {"train", "export", "import", "retrain", "transfer"};
constexpr float kMean = 0.2860f, kStd = 0.3530f;  // of Fashion-MNIST's training images

struct Config {
  std::string data_dir, model_path, checkpoint;
  std::vector<std::string> stages;
  int64_t epochs = 3, batch = 64, limit_train = 0, limit_test = 0, opset = 17, warmup_steps = 0;
  double lr = 0.02, momentum = 0.9, weight_decay = 0;
  std::string optimizer = "sgd", schedule = "cosine";
  uint64_t seed = 1;
  bool json = false, progress = false, resume = false, optimize = true;
  // Fine-tuning an imported classifier (--classes): cut, classes, input size,
  // frozen parameters, where the result goes; `prep` turns a batch of
  // Fashion-MNIST images into the model's input.
  bool finetune = false;
  std::string cut = "-1", freeze, export_path;
  int64_t classes = 0, image_size = 0;
  std::function<Tensor(const Tensor&)> prep;
  std::map<std::string, std::string> meta;  // more for the checkpoint (how to rebuild the model)
  // Data-parallel training (a single rank when not launched by mpirun/srun).
  std::shared_ptr<dist::Communicator> comm;
  dist::Mode dist_mode = dist::Mode::kFp32;
  double spars = 0.05, dist_timeout = 300;
  int64_t bucket_kb = 1024;
  std::string local_model_path;  // where this rank writes and reads the exported model
  bool distributed() const { return comm && comm->size() > 1; }
  bool leader() const { return !comm || comm->rank() == 0; }
};

// Rows [begin, end) of a global batch that rank r of n takes.
std::pair<int64_t, int64_t> shard(int64_t begin, int64_t end, int rank, int n) {
  const int64_t len = end - begin;
  return {begin + len * rank / n, begin + len * (rank + 1) / n};
}

// Stage-by-stage progress on stderr.
class ProgressBar {
 public:
  ProgressBar(bool on, std::string label, int64_t total) : on_(on), label_(std::move(label)), total_(total), start_(Clock::now()) {}
  void update(int64_t done, double loss, int64_t images) {
    if (!on_) return;
    const int width = 30;
    const int filled = total_ ? int(width * done / total_) : width;
    double s = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "\r%s [%s%s] %3d%% loss %.4f %6.0f img/s", label_.c_str(), std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), int(total_ ? 100 * done / total_ : 100), loss,
                 s > 0 ? double(images) / s : 0.0);
    std::fflush(stderr);
  }
  void finish() {
    if (on_) std::fprintf(stderr, "\n");
  }

 private:
  bool on_;
  std::string label_;
  int64_t total_;
  Clock::time_point start_;
};

// The seed CNN of SINGA's MNIST example.
std::shared_ptr<layer::Sequential> seed_cnn() {
  auto m = std::make_shared<layer::Sequential>();
  m->emplace<layer::Conv2d>(1, 20, 5)
      .emplace<layer::ReLU>()
      .emplace<layer::MaxPool2d>(2)
      .emplace<layer::Conv2d>(20, 50, 5)
      .emplace<layer::ReLU>()
      .emplace<layer::MaxPool2d>(2)
      .emplace<layer::Flatten>()
      .emplace<layer::Linear>(800, 500)
      .emplace<layer::ReLU>()
      .emplace<layer::Linear>(500, 10);
  return m;
}

// The imported model cut before its last node, with a new head.
std::shared_ptr<layer::Sequential> transfer_model(std::shared_ptr<onnx::Rep> rep) {
  auto m = std::make_shared<layer::Sequential>();
  m->add(std::make_shared<layer::ImportedModel>(rep, -1));
  m->emplace<layer::Linear>(500, 128)
      .emplace<layer::ReLU>()
      .emplace<layer::Linear>(128, 32)
      .emplace<layer::ReLU>()
      .emplace<layer::Linear>(32, 10);
  return m;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Config& c, const layer::NamedVariables& params) {
  if (c.optimizer == "sgd") return std::make_unique<optim::SGD>(params, c.lr, c.momentum, c.weight_decay);
  if (c.optimizer == "adam") return std::make_unique<optim::Adam>(params, c.lr, 0.9, 0.999, 1e-8, c.weight_decay);
  if (c.optimizer == "adamw") return std::make_unique<optim::AdamW>(params, c.lr, 0.9, 0.999, 1e-8, c.weight_decay);
  throw UsageError("--optimizer must be sgd, adam or adamw, got '" + c.optimizer + "'");
}

// Test accuracy; each rank scores its share of the test set and the counts are summed.
template <class Predict>
double accuracy_of(const Config& c, const data::Split& test, Predict&& predict) {
  int64_t correct = 0;
  std::mt19937_64 unused;
  auto order = data::permutation(test.size(), unused, false);
  auto [first, last] = c.distributed() ? shard(0, test.size(), c.comm->rank(), c.comm->size()) : std::make_pair(int64_t(0), test.size());
  for (int64_t b = first; b < last; b += 500) {
    data::Split batch = data::batch(test, order, b, std::min(last, b + 500));
    correct += loss::count_correct(predict(batch.images), batch.labels);
  }
  if (c.distributed()) {
    double n = double(correct);
    c.comm->allreduce(&n, 1, dist::Elem::kFloat64, "summing the test accuracy");
    correct = int64_t(n);
  }
  return test.size() ? double(correct) / double(test.size()) : 0.0;
}

double accuracy(const Config& c, layer::Layer& model, const data::Split& test) {
  autograd::NoGradGuard ng;
  model.eval();
  double a = accuracy_of(c, test, [&](const Tensor& x) { return model(Variable(c.prep ? c.prep(x) : x)).data(); });
  model.train();
  return a;
}

double accuracy(const Config& c, const onnx::Rep& rep, const data::Split& test) {
  return accuracy_of(c, test, [&](const Tensor& x) { return rep.run(std::vector<Tensor>{x})[0].second; });
}

void save_state(const Config& c, const std::string& stage, int64_t epochs_done, const layer::Layer& model,
                const optim::Optimizer& opt, uint64_t rng_epoch_seed) {
  if (c.checkpoint.empty() || !c.leader()) return;
  Checkpoint ck;
  ck.meta["stage"] = stage;
  ck.meta["epochs_done"] = std::to_string(epochs_done);
  ck.meta["model"] = c.model_path;
  ck.meta["seed"] = std::to_string(rng_epoch_seed);
  for (const auto& [k, v] : c.meta) ck.meta[k] = v;
  if (c.distributed()) {
    ck.meta["ranks"] = std::to_string(c.comm->size());
    ck.meta["dist_mode"] = dist::mode_name(c.dist_mode);
  }
  for (const auto& [n, v] : model.parameters()) ck.tensors["param/" + n] = v.data();
  for (const auto& [n, v] : model.buffers()) ck.tensors["buffer/" + n] = v.data();
  for (const auto& [n, t] : opt.state()) ck.tensors["opt/" + n] = t;
  save_checkpoint(ck, c.checkpoint);
}

void load_params(const Checkpoint& ck, const layer::Layer& model, const std::string& file) {
  auto assign = [&](const layer::NamedVariables& vars, const std::string& kind) {
    for (auto [n, v] : vars) {
      auto it = ck.tensors.find(kind + "/" + n);
      if (it == ck.tensors.end()) throw Error(SINGA_INVALID_ARGUMENT, "checkpoint '" + file + "' has no " + kind + " '" + n + "'");
      if (it->second.shape() != v.shape() || it->second.dtype() != v.dtype())
        throw Error(SINGA_INVALID_ARGUMENT, "checkpoint '" + file + "': " + kind + " '" + n + "' is " +
                                                shape_to_string(it->second.shape()) + ", the model's is " + shape_to_string(v.shape()));
      v.set_data(it->second.clone());
    }
  };
  assign(model.parameters(), "param");
  assign(model.buffers(), "buffer");
}

std::map<std::string, Tensor> opt_state(const Checkpoint& ck) {
  std::map<std::string, Tensor> s;
  for (const auto& [n, t] : ck.tensors)
    if (n.rfind("opt/", 0) == 0) s[n.substr(4)] = t;
  return s;
}

struct StageResult {
  std::string stage;
  double accuracy = -1, loss = -1, images_per_second = 0, seconds = 0;
  int64_t epochs = 0;
  std::string note;
};

void report(const Config& c, const StageResult& r) {
  if (!c.leader()) return;
  if (c.json) {
    std::ostringstream o;
    o << "{\"stage\":" << json_quote(r.stage);
    if (r.accuracy >= 0) o << ",\"test_accuracy\":" << json_number(r.accuracy);
    if (r.epochs) o << ",\"epochs\":" << r.epochs << ",\"train_loss\":" << json_number(r.loss)
                    << ",\"images_per_second\":" << json_number(r.images_per_second);
    if (r.epochs && c.distributed())
      o << ",\"ranks\":" << c.comm->size() << ",\"global_batch\":" << c.comm->size() * c.batch
        << ",\"dist_mode\":" << json_quote(dist::mode_name(c.dist_mode));
    o << ",\"seconds\":" << json_number(r.seconds);
    if (!r.note.empty()) o << ",\"note\":" << json_quote(r.note);
    o << "}";
    std::cout << o.str() << std::endl;
    return;
  }
  std::printf("%-9s", r.stage.c_str());
  if (r.accuracy >= 0) std::printf("  test accuracy %.2f%%", 100 * r.accuracy);
  if (r.epochs) std::printf("  (%lld epochs, last loss %.4f, %.0f img/s)", (long long)r.epochs, r.loss, r.images_per_second);
  std::printf("  %.1f s", r.seconds);
  if (!r.note.empty()) std::printf("  %s", r.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

// Trains `model` from epoch `first` on, checkpointing after every epoch.
StageResult fit(const Config& c, const std::string& stage, layer::Layer& model, optim::Optimizer& opt,
                const data::Split& train, const data::Split& test, int64_t first) {
  StageResult r{stage};
  auto t0 = Clock::now();
  double train_seconds = 0;
  int64_t images = 0;
  model.train();
  // Under a launcher every step averages the ranks' gradients; all ranks
  // start from rank 0's state (its initialisation or its checkpoint).
  std::unique_ptr<dist::DistOpt> dopt;
  if (c.distributed()) {
    dist::DistOptions o;
    o.bucket_bytes = c.bucket_kb * 1024;
    o.timeout_seconds = c.dist_timeout;
    dopt = std::make_unique<dist::DistOpt>(opt, c.comm, o);
    dopt->broadcast_state(model.buffers());
  }
  const int ranks = c.distributed() ? c.comm->size() : 1, rank = c.distributed() ? c.comm->rank() : 0;
  const int64_t global_batch = c.batch * ranks;
  std::unique_ptr<optim::Schedule> sched;
  if (c.schedule == "cosine") sched = std::make_unique<optim::CosineLR>(c.lr, c.epochs, c.lr * 0.01);
  if (c.schedule == "step") sched = std::make_unique<optim::StepLR>(c.lr, std::max<int64_t>(1, c.epochs / 3), 0.1);
  for (int64_t e = first; e < c.epochs; ++e) {
    if (sched) opt.set_lr(sched->at(e));
    std::mt19937_64 rng(c.seed * 1000003 + uint64_t(e) + std::hash<std::string>()(stage));
    auto order = data::permutation(train.size(), rng);
    // A last global batch smaller than the number of ranks is dropped: some rank would have nothing.
    int64_t steps = (train.size() + global_batch - 1) / global_batch;
    if (steps > 0 && train.size() - (steps - 1) * global_batch < ranks) --steps;
    ProgressBar bar(c.progress, stage + " epoch " + std::to_string(e + 1) + "/" + std::to_string(c.epochs), steps);
    auto e0 = Clock::now();
    double running = 0;
    int64_t seen = 0, untimed = 0;
    for (int64_t s = 0; s < steps; ++s) {
      // The first steps of a stage (kernel creation, first-touch buffers) are
      // left out of images/s when asked, as a benchmark's warm-up.
      if (e == first && s == c.warmup_steps && s > 0) e0 = Clock::now(), untimed = seen;
      const int64_t g0 = s * global_batch, g1 = std::min(train.size(), (s + 1) * global_batch);
      auto [b0, b1] = shard(g0, g1, rank, ranks);
      data::Split b = data::batch(train, order, b0, b1);
      Variable logits = model(Variable(c.prep ? c.prep(b.images) : b.images));
      Variable l = loss::softmax_cross_entropy(logits, Variable(b.labels));
      if (dopt) {
        // A rank's mean loss weighs as its share of the global batch.
        dopt->train_step(c.dist_mode, l, float(c.spars), double(ranks) * double(b1 - b0) / double(g1 - g0));
      } else {
        autograd::backward(l);
        opt.step();
      }
      opt.zero_grad();
      const double lv = double(*l.data().data<float>());
      running = s == 0 ? lv : 0.95 * running + 0.05 * lv;
      seen += b.size();
      if (s % 20 == 0 || s + 1 == steps) bar.update(s + 1, running, seen);
    }
    bar.finish();
    train_seconds += std::chrono::duration<double>(Clock::now() - e0).count();
    images += seen - untimed;
    r.loss = running;
    // Partial updates leave the ranks' models apart; the checkpoint holds their average.
    if (dopt && c.dist_mode == dist::Mode::kPartial) dopt->average_parameters();
    save_state(c, stage, e + 1, model, opt, c.seed);
  }
  r.epochs = c.epochs - first;
  r.images_per_second = train_seconds > 0 ? double(images) * ranks / train_seconds : 0;
  r.accuracy = accuracy(c, model, test);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

void export_model(const Config& c, layer::Layer& model, const data::Split& test) {
  model.eval();
  std::mt19937_64 unused;
  auto order = data::permutation(test.size(), unused, false);
  data::Split sample = data::batch(test, order, 0, std::min<int64_t>(2, test.size()));
  Variable x(c.prep ? c.prep(sample.images) : sample.images, false, "input");
  Variable y = model(x);
  onnx::ExportOptions o;
  o.opset = c.opset;
  o.input_names = {"input"};
  o.output_names = {"output"};
  o.initializer_names = model.parameters();
  for (const auto& b : model.buffers()) o.initializer_names.push_back(b);
  onnx::save_model(onnx::to_onnx({x}, {y}, o), c.local_model_path);
  model.train();
}

// Rank 0 reads the checkpoint and sends it to the others, which need not see
// the same file system; a failure to read it is every rank's error.
Checkpoint load_shared_checkpoint(const Config& c) {
  if (!c.distributed()) return load_checkpoint(c.checkpoint);
  std::string bytes;
  if (c.leader()) {
    try {
      load_checkpoint(c.checkpoint);  // validates before anything is sent
      std::ifstream f(c.checkpoint, std::ios::binary);
      bytes = "K" + std::string(std::istreambuf_iterator<char>(f), {});
    } catch (const std::exception& e) {
      bytes = std::string("E") + e.what();
    }
  }
  bytes = c.comm->broadcast_bytes(bytes, 0, "sending the checkpoint of rank 0");
  if (bytes.empty() || bytes[0] != 'K') throw Error(SINGA_INVALID_ARGUMENT, "rank 0: " + bytes.substr(1));
  if (c.leader()) return load_checkpoint(c.checkpoint);
  std::string tmp = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/singa-ckpt-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw Error(SINGA_UNAVAILABLE, "cannot create a temporary file for rank 0's checkpoint in " + tmp);
  ::close(fd);
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data() + 1, std::streamsize(bytes.size() - 1));
  }
  Checkpoint ck = load_checkpoint(tmp);
  std::remove(tmp.c_str());
  return ck;
}

int run_train(const Config& c) {
  std::optional<Checkpoint> ck;
  std::string resume_stage;
  int64_t resume_epochs = 0;
  if (c.resume) {
    if (c.checkpoint.empty()) throw UsageError("--resume needs --checkpoint FILE");
    ck = load_shared_checkpoint(c);
    resume_stage = ck->meta["stage"];
    resume_epochs = std::stoll(ck->meta.count("epochs_done") ? ck->meta["epochs_done"] : "0");
  }
  data::Split train = data::load_mnist(c.data_dir, "train", c.limit_train);
  data::Split test = data::load_mnist(c.data_dir, "t10k", c.limit_test);
  data::normalize(train.images, kMean, kStd);
  data::normalize(test.images, kMean, kStd);
  auto wanted = [&](const std::string& s) { return std::find(c.stages.begin(), c.stages.end(), s) != c.stages.end(); };
  // Stages before the checkpoint's are done; the checkpoint's own resumes.
  auto skip = [&](const std::string& s) {
    if (resume_stage.empty()) return false;
    int a = 0, b = 0;
    for (int i = 0; i < 5; ++i) {
      if (s == kStages[i]) a = i;
      if (resume_stage == kStages[i]) b = i;
    }
    return a < b;
  };
  layer::manual_seed(c.seed);

  std::shared_ptr<layer::Sequential> cnn;
  if (wanted("train") || wanted("export")) {
    cnn = seed_cnn();
    if (wanted("train") && !skip("train")) {
      auto opt = make_optimizer(c, cnn->parameters());
      int64_t first = 0;
      if (ck && resume_stage == "train") {
        load_params(*ck, *cnn, c.checkpoint);
        opt->load_state(opt_state(*ck));
        first = resume_epochs;
      }
      report(c, fit(c, "train", *cnn, *opt, train, test, first));
    } else if (ck && (resume_stage == "train" || skip("train"))) {
      if (resume_stage == "train") load_params(*ck, *cnn, c.checkpoint);
    }
  }
  if (wanted("export") && !skip("export")) {
    auto t0 = Clock::now();
    if (!wanted("train") && !(ck && resume_stage == "train"))
      throw UsageError("the export stage needs the train stage (or --resume from a train checkpoint)");
    export_model(c, *cnn, test);
    StageResult r{"export"};
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.note = "wrote " + c.model_path + " (opset " + std::to_string(c.opset) + ")";
    if (c.distributed()) c.comm->barrier("waiting for the export");
    report(c, r);
  }
  std::shared_ptr<onnx::Rep> rep;
  auto imported = [&]() {
    if (!rep) rep = layer::ImportedModel::prepare_for_training(c.local_model_path);
    return rep;
  };
  if (wanted("import") && !skip("import")) {
    auto t0 = Clock::now();
    StageResult r{"import"};
    onnx::PrepareOptions po;
    po.optimize = c.optimize;  // the inference path, with graph passes by default
    r.accuracy = accuracy(c, *onnx::prepare(c.local_model_path, po), test);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.note = "prepare(" + c.model_path + ")";
    report(c, r);
  }
  auto staged_fit = [&](const std::string& stage, std::shared_ptr<layer::Layer> model) {
    auto opt = make_optimizer(c, model->parameters());
    int64_t first = 0;
    if (ck && resume_stage == stage) {
      load_params(*ck, *model, c.checkpoint);
      opt->load_state(opt_state(*ck));
      first = resume_epochs;
    }
    report(c, fit(c, stage, *model, *opt, train, test, first));
  };
  if (wanted("retrain") && !skip("retrain")) staged_fit("retrain", std::make_shared<layer::ImportedModel>(imported()));
  if (wanted("transfer") && !skip("transfer")) staged_fit("transfer", transfer_model(imported()));
  return kExitOk;
}

// ---------------------------------------------------------------- fine-tuning
// The image input of a classifier: [N, C, H, W].
struct ImageInput {
  int64_t channels = 0, height = 0, width = 0;
  std::string text() const {
    return std::to_string(channels) + "x" + std::to_string(height) + "x" + std::to_string(width);
  }
};

ImageInput image_input(const onnx::Rep& rep, int64_t image_size) {
  const auto& ins = rep.inputs();
  if (ins.size() != 1)
    throw Error(SINGA_INVALID_ARGUMENT, rep.source() + " takes " + std::to_string(ins.size()) +
                                            " inputs; fine-tuning from the CLI needs one image input [N, C, H, W]");
  const onnx::ValueInfo& v = ins[0];
  if (!v.rank_known || v.dims.size() != 4 || v.dtype != SINGA_ONNX_FLOAT)
    throw Error(SINGA_INVALID_ARGUMENT, rep.source() + ": input '" + v.name +
                                            "' is not a float image batch [N, C, H, W]; fine-tuning from the CLI needs one");
  ImageInput in{v.dims[1] > 0 ? v.dims[1] : 3, v.dims[2], v.dims[3]};
  for (int64_t* d : {&in.height, &in.width}) {
    if (*d > 0 && image_size > 0 && *d != image_size)
      throw UsageError("--image-size " + std::to_string(image_size) + ": " + rep.source() + " takes images of " +
                       std::to_string(v.dims[2]) + " x " + std::to_string(v.dims[3]));
    if (*d <= 0) *d = image_size;
  }
  if (in.height <= 0 || in.width <= 0)
    throw UsageError(rep.source() + ": input '" + v.name + "' has no fixed height and width; give --image-size N");
  return in;
}

// The imported model cut (`cut`: "-k" or a node name), then Flatten when its
// output has more than two dims, then Linear to `classes`.
std::shared_ptr<layer::Sequential> finetune_model(std::shared_ptr<onnx::Rep> rep, const std::string& cut, int64_t classes,
                                                  const ImageInput& in, const std::string& freeze) {
  std::shared_ptr<layer::ImportedModel> base;
  size_t used = 0;
  int k = 0;
  try {
    k = std::stoi(cut, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == cut.size() && !cut.empty()) {
    if (k > 0) throw UsageError("--cut must be 0 or negative (-k: drop the last k nodes) or a node name, got " + cut);
    base = std::make_shared<layer::ImportedModel>(rep, k);
  } else {
    base = std::make_shared<layer::ImportedModel>(rep, cut);
  }
  // What the head reads: the cut model's output for one image.
  Shape out;
  {
    autograd::NoGradGuard ng;
    base->eval();
    out = base->forward(Variable(Tensor::zeros({1, in.channels, in.height, in.width}, SINGA_ONNX_FLOAT))).shape();
    base->train();
  }
  if (out.size() < 2)
    throw Error(SINGA_INVALID_ARGUMENT, rep->source() + " cut at " + cut + " gives " + shape_to_string(out) +
                                            ", no [N, features] for a new head");
  int64_t features = 1;
  for (size_t i = 1; i < out.size(); ++i) features *= out[i];
  auto m = std::make_shared<layer::Sequential>();
  m->add(base);
  if (out.size() > 2) m->emplace<layer::Flatten>();
  m->emplace<layer::Linear>(features, classes);
  if (!freeze.empty()) base->set_trainable(freeze, false);
  return m;
}

int run_finetune(const Config& given) {
  Config c = given;
  auto rep = layer::ImportedModel::prepare_for_training(c.model_path);
  const ImageInput in = image_input(*rep, c.image_size);
  c.prep = [in](const Tensor& x) { return data::resize_images(x, in.channels, in.height, in.width); };
  c.meta = {{"cut", c.cut}, {"classes", std::to_string(c.classes)}, {"input", in.text()}, {"freeze", c.freeze}};
  std::optional<Checkpoint> ck;
  if (c.resume) {
    if (c.checkpoint.empty()) throw UsageError("--resume needs --checkpoint FILE");
    ck = load_shared_checkpoint(c);
    if (ck->meta["stage"] != "finetune")
      throw Error(SINGA_INVALID_ARGUMENT, "'" + c.checkpoint + "' is a checkpoint of stage '" + ck->meta["stage"] +
                                              "', not of fine-tuning");
  }
  data::Split train = data::load_mnist(c.data_dir, "train", c.limit_train);
  data::Split test = data::load_mnist(c.data_dir, "t10k", c.limit_test);
  data::normalize(train.images, kMean, kStd);
  data::normalize(test.images, kMean, kStd);
  layer::manual_seed(c.seed);
  auto model = finetune_model(rep, c.cut, c.classes, in, c.freeze);
  auto opt = make_optimizer(c, model->parameters());
  int64_t first = 0;
  if (ck) {
    load_params(*ck, *model, c.checkpoint);
    opt->load_state(opt_state(*ck));
    first = std::stoll(ck->meta.count("epochs_done") ? ck->meta["epochs_done"] : "0");
  }
  StageResult r = fit(c, "finetune", *model, *opt, train, test, first);
  if (c.leader()) {
    c.local_model_path = c.export_path;
    export_model(c, *model, test);
  }
  r.note = "cut " + c.cut + ", input " + in.text() + ", wrote " + c.export_path;
  report(c, r);
  return kExitOk;
}

int cmd_train(const std::vector<std::string>& args) {
  CommandSpec spec{"train", "[options]",
                   "Runs SINGA's sonnx MNIST workflow on Fashion-MNIST (IDX files, gzipped or not): trains the seed CNN\n"
                   "(conv 1->20 5x5, relu, maxpool 2, conv 20->50 5x5, relu, maxpool 2, flatten, linear 800->500, relu,\n"
                   "linear 500->10), exports it to ONNX, imports it back with prepare(), re-trains the imported model and\n"
                   "transfer-learns (the imported model without its last layer plus Linear 500->128->32->10), printing\n"
                   "the test accuracy after each stage. A progress bar is shown on a terminal (or with --progress).\n"
                   "With --checkpoint FILE the state is saved after every epoch; --resume continues from it.\n"
                   "Under `mpirun -np N` (or srun) the N ranks train data-parallel: each step's global batch is\n"
                   "N x --batch, gradients are averaged with --dist-mode, and rank 0 alone prints, checkpoints and\n"
                   "exports (docs/distributed.md).\n"
                   "With --classes N it fine-tunes the ONNX image classifier --model FILE.onnx instead: the model is\n"
                   "cut (--cut -k drops its last k nodes, as Rep::nodes() and `singa info --nodes` list them, or\n"
                   "--cut NODE stops after that node), a new head (Flatten if needed, Linear to N classes) appended,\n"
                   "trained on Fashion-MNIST resized to the model's input (a grey image in every channel), and the\n"
                   "result exported to --export FILE."};
  po::options_description own("Options");
  own.add_options()
      ("data", po::value<std::string>()->value_name("DIR")->default_value("/usr/share/datasets/fashion-mnist"), "folder of the IDX files")
      ("stages", po::value<std::string>()->value_name("LIST")->default_value("train,export,import,retrain,transfer"), "comma-separated stages to run")
      ("epochs", po::value<int64_t>()->value_name("N")->default_value(3), "epochs per training stage")
      ("batch", po::value<int64_t>()->value_name("N")->default_value(64), "batch size")
      ("lr", po::value<double>()->value_name("X")->default_value(0.02), "learning rate (of the first epoch)")
      ("momentum", po::value<double>()->value_name("X")->default_value(0.9), "SGD momentum")
      ("weight-decay", po::value<double>()->value_name("X")->default_value(0.0), "weight decay")
      ("optimizer", po::value<std::string>()->value_name("NAME")->default_value("sgd"), "sgd, adam or adamw")
      ("schedule", po::value<std::string>()->value_name("NAME")->default_value("cosine"),
       "learning rate per epoch: none, step (x0.1 every third of the epochs) or cosine")
      ("model,o", po::value<std::string>()->value_name("FILE")->default_value("fashion_mnist.onnx"), "the exported model (read back by the later stages)")
      ("opset", po::value<int64_t>()->value_name("N")->default_value(17), "opset of the exported model (13-17)")
      ("limit-train", po::value<int64_t>()->value_name("N")->default_value(0), "use only the first N training images")
      ("limit-test", po::value<int64_t>()->value_name("N")->default_value(0), "use only the first N test images")
      ("warmup-steps", po::value<int64_t>()->value_name("N")->default_value(0),
       "leave a stage's first N steps out of its images/s (a benchmark's warm-up; they still train)")
      ("seed", po::value<uint64_t>()->value_name("S")->default_value(1), "seed of initialisation and shuffling")
      ("checkpoint", po::value<std::string>()->value_name("FILE"), "save the training state here after every epoch")
      ("resume", "continue from --checkpoint")
      ("dist-mode", po::value<std::string>()->value_name("MODE")->default_value("fp32"),
       "under mpirun/srun: fp32, fp16, partialUpdate, sparseTopK or sparseThreshold (SINGA's DistOpt updates)")
      ("spars", po::value<double>()->value_name("X")->default_value(0.05),
       "sparseTopK: share of the gradient values sent; sparseThreshold: smallest |value| sent")
      ("bucket-kb", po::value<int64_t>()->value_name("N")->default_value(1024), "gradient bucket size of the all-reduce")
      ("dist-timeout", po::value<double>()->value_name("S")->default_value(300),
       "seconds a rank waits for the others before stopping with an error naming the missing ranks")
      ("classes", po::value<int64_t>()->value_name("N"), "fine-tune --model FILE.onnx with a new head of N classes")
      ("cut", po::value<std::string>()->value_name("K|NODE")->default_value("-1"),
       "fine-tuning: drop the model's last K nodes (-1: its classifier layer), or stop after node NODE")
      ("image-size", po::value<int64_t>()->value_name("N")->default_value(0),
       "fine-tuning: height and width of the input where the model leaves them open")
      ("freeze", po::value<std::string>()->value_name("GLOB"),
       "fine-tuning: keep the imported parameters whose names match fixed (e.g. '*' trains the head only)")
      ("export", po::value<std::string>()->value_name("FILE")->default_value("finetuned.onnx"),
       "fine-tuning: where the fine-tuned model is written")
      ("no-optimize", "prepare the import stage's model without graph passes")
      ("progress", "show the progress bar even when stderr is not a terminal")
      ("json", "print one JSON line per stage");
  Parsed p = parse_command(spec, args, own, "");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  Config c;
  c.data_dir = p.vm["data"].as<std::string>();
  c.model_path = p.vm["model"].as<std::string>();
  c.epochs = p.vm["epochs"].as<int64_t>();
  c.batch = p.vm["batch"].as<int64_t>();
  c.lr = p.vm["lr"].as<double>();
  c.momentum = p.vm["momentum"].as<double>();
  c.weight_decay = p.vm["weight-decay"].as<double>();
  c.optimizer = p.vm["optimizer"].as<std::string>();
  c.schedule = p.vm["schedule"].as<std::string>();
  if (c.schedule != "none" && c.schedule != "step" && c.schedule != "cosine")
    throw UsageError("--schedule must be none, step or cosine, got '" + c.schedule + "'");
  c.opset = p.vm["opset"].as<int64_t>();
  c.limit_train = p.vm["limit-train"].as<int64_t>();
  c.limit_test = p.vm["limit-test"].as<int64_t>();
  c.warmup_steps = p.vm["warmup-steps"].as<int64_t>();
  c.seed = p.vm["seed"].as<uint64_t>();
  if (p.vm.count("checkpoint")) c.checkpoint = p.vm["checkpoint"].as<std::string>();
  c.resume = p.vm.count("resume") > 0;
  c.json = p.vm.count("json") > 0;
  c.optimize = p.vm.count("no-optimize") == 0;
  c.progress = p.vm.count("progress") > 0 || ::isatty(2);
  c.finetune = p.vm.count("classes") > 0;
  c.cut = p.vm["cut"].as<std::string>();
  c.image_size = p.vm["image-size"].as<int64_t>();
  c.export_path = p.vm["export"].as<std::string>();
  if (p.vm.count("freeze")) c.freeze = p.vm["freeze"].as<std::string>();
  if (c.finetune) {
    c.classes = p.vm["classes"].as<int64_t>();
    if (c.classes < 2) throw UsageError("--classes must be at least 2");
    if (p.vm["model"].defaulted()) throw UsageError("--classes fine-tunes a model: give it with --model FILE.onnx");
    if (!p.vm["stages"].defaulted()) throw UsageError("--stages is for the seed CNN's workflow, not for fine-tuning (--classes)");
    if (c.image_size < 0) throw UsageError("--image-size must be positive");
  } else if (!p.vm["cut"].defaulted() || !p.vm["image-size"].defaulted() || !p.vm["export"].defaulted() ||
             p.vm.count("freeze")) {
    throw UsageError("--cut, --image-size, --freeze and --export go with --classes (fine-tuning)");
  }
  std::stringstream ss(p.vm["stages"].as<std::string>());
  for (std::string s; std::getline(ss, s, ',');) {
    if (std::find(std::begin(kStages), std::end(kStages), s) == std::end(kStages))
      throw UsageError("--stages: unknown stage '" + s + "' (stages: train, export, import, retrain, transfer)");
    c.stages.push_back(s);
  }
  if (c.epochs < 1 || c.batch < 1) throw UsageError("--epochs and --batch must be positive");
  if (c.opset < 13 || c.opset > 17) throw UsageError("--opset must be 13 to 17");
  if (c.limit_train < 0 || c.limit_test < 0 || c.warmup_steps < 0)
    throw UsageError("--limit-train, --limit-test and --warmup-steps must be >= 0");
  try {
    c.dist_mode = dist::parse_mode(p.vm["dist-mode"].as<std::string>());
  } catch (const Error& e) {
    throw UsageError(std::string("--dist-mode: ") + e.what());
  }
  c.spars = p.vm["spars"].as<double>();
  c.bucket_kb = p.vm["bucket-kb"].as<int64_t>();
  c.dist_timeout = p.vm["dist-timeout"].as<double>();
  if (c.bucket_kb < 1 || !(c.dist_timeout > 0)) throw UsageError("--bucket-kb and --dist-timeout must be positive");
  if (c.dist_mode == dist::Mode::kSparseTopK ? !(c.spars > 0 && c.spars <= 1) : !(c.spars >= 0))
    throw UsageError("--spars must be in (0, 1] for sparseTopK and >= 0 for sparseThreshold");
  c.comm = dist::world();
  c.comm->set_timeout(c.dist_timeout);
  c.local_model_path = c.model_path;
  if (!c.leader()) {
    c.progress = false;
    // Every rank holds the same trained model; the others write theirs to a
    // private file, so that no rank needs to see rank 0's.
    if (std::find(c.stages.begin(), c.stages.end(), "export") != c.stages.end())
      c.local_model_path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/singa-train-rank" +
                           std::to_string(c.comm->rank()) + "-" + std::to_string(::getpid()) + ".onnx";
  }
  load_runtime(p.global);
  if (p.global.threads > 0)
    if (Device* cpu = Runtime::instance().cpu()) cpu->set_num_threads(p.global.threads);
  auto run = [](const Config& cfg) { return cfg.finetune ? run_finetune(cfg) : run_train(cfg); };
  if (!c.distributed()) return run(c);
  // An error on one rank ends the job: the others would wait for it forever.
  int rc = kExitFailure;
  try {
    rc = run(c);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    std::cerr << "singa: error: rank " << c.comm->rank() << " of " << c.comm->size() << ": " << msg << std::endl;
    if (c.local_model_path != c.model_path) std::remove(c.local_model_path.c_str());
    c.comm->abort(kExitFailure);
  }
  if (c.local_model_path != c.model_path) std::remove(c.local_model_path.c_str());
  c.comm->barrier("finishing");
  return rc;
}

}  // namespace

// Used by `singa export` (cmd_export.cpp): the architectures live here.
std::string export_checkpoint(const std::string& checkpoint, const std::string& out, int64_t opset) {
  Checkpoint ck = load_checkpoint(checkpoint);
  const std::string stage = ck.meta["stage"];
  std::shared_ptr<layer::Layer> model;
  Shape input{1, 1, 28, 28};
  if (stage == "finetune") {
    auto rep = layer::ImportedModel::prepare_for_training(ck.meta["model"]);
    ImageInput in;
    if (std::sscanf(ck.meta["input"].c_str(), "%" SCNd64 "x%" SCNd64 "x%" SCNd64, &in.channels, &in.height, &in.width) != 3)
      throw Error(SINGA_INVALID_ARGUMENT, "'" + checkpoint + "': the fine-tuning checkpoint has no input size");
    model = finetune_model(rep, ck.meta["cut"], std::stoll(ck.meta["classes"]), in, "");
    input = {1, in.channels, in.height, in.width};
  } else if (stage == "train") {
    model = seed_cnn();
  } else if (stage == "retrain" || stage == "transfer") {
    auto rep = layer::ImportedModel::prepare_for_training(ck.meta["model"]);
    model = stage == "retrain" ? std::shared_ptr<layer::Layer>(std::make_shared<layer::ImportedModel>(rep)) : transfer_model(rep);
  } else {
    throw Error(SINGA_INVALID_ARGUMENT, "'" + checkpoint + "' is not a checkpoint of `singa train` (stage '" + stage + "')");
  }
  load_params(ck, *model, checkpoint);
  model->eval();
  Variable x(Tensor::zeros(input, SINGA_ONNX_FLOAT), false, "input");
  Variable y = (*model)(x);
  onnx::ExportOptions o;
  o.opset = opset;
  o.input_names = {"input"};
  o.output_names = {"output"};
  o.initializer_names = model->parameters();
  for (const auto& b : model->buffers()) o.initializer_names.push_back(b);
  onnx::save_model(onnx::to_onnx({x}, {y}, o), out);
  return stage + " after " + ck.meta["epochs_done"] + " epochs";
}

const CommandRegistrar kTrain("train", cmd_train, "train, export, re-import and transfer-learn a CNN on Fashion-MNIST");

}  // namespace cli
}  // namespace singa
