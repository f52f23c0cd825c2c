// The cpu.attention pass and the Attention kernel (plugins/ops_nn) on the
// forms exporters write: HF BERT (separate projections, K^T by
// Transpose(0,2,3,1), a scale and an additive mask), a GPT-2 decoder step (a
// KV cache Concat, K^T by Transpose(0,1,3,2), a padding mask, a causal mask
// by Where) and torch's MultiheadAttention (sequence first, Slices of a
// packed projection, Q scaled before the product). Each fused model is checked against the same model
// with the pass off (`pass.cpu.attention=0`), whose Softmax and MatMuls are
// the reference, at several head counts, sequence lengths (1 and odd ones
// included) and threads, with random, -1e4 and -inf masks and rows whose keys
// are all masked.
#include "model_builder.hpp"
#include "test_util.hpp"

#include <singa/onnx.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::count_op;
using testing_util::i64_tensor;
using testing_util::random_floats;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs `m` with the attention pass on and off; checks the outputs agree
// (NaN where the reference has NaN) and returns the Attention nodes used.
int check_against_unfused(const ModelBuilder& m, const std::vector<Tensor>& inputs, int threads, double tol = 2e-5) {
  singa::onnx::PrepareOptions on, off;
  on.threads = off.threads = threads;
  off.options["pass.cpu.attention"] = "0";
  auto fused = singa::onnx::prepare_bytes(m.bytes(), on);
  auto plain = singa::onnx::prepare_bytes(m.bytes(), off);
  EXPECT_EQ(count_op(*plain, "Attention"), 0);
  auto a = fused->run(inputs), b = plain->run(inputs);
  EXPECT_EQ(a.size(), b.size());
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    const Tensor &x = a[k].second, &y = b[k].second;
    EXPECT_EQ(x.shape(), y.shape()) << a[k].first;
    if (x.shape() != y.shape()) continue;
    double worst = 0;
    int64_t nan_mismatch = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float u = x.data<float>()[i], v = y.data<float>()[i];
      if (std::isnan(u) || std::isnan(v))
        nan_mismatch += std::isnan(u) != std::isnan(v);
      else
        worst = std::max(worst, double(std::fabs(u - v)));
    }
    EXPECT_LE(worst, tol) << "output " << a[k].first;
    EXPECT_EQ(nan_mismatch, 0) << "output " << a[k].first;
  }
  return count_op(*fused, "Attention");
}

// ---------------------------------------------------------------- HF BERT

enum class MaskKind { kNone, kPadding, kFull, kCausal, kSquare, kTwoDim };

struct BertCase {
  int64_t B = 1, S = 7, H = 2, D = 8;
  MaskKind mask = MaskKind::kPadding;
  float masked = -1e4f;  // the value masked keys get
  bool fully_masked_row = false;
};

int64_t embed(const BertCase& c) { return c.H * c.D; }

// The mask input's shape: [B,1,1,S], [B,1,S,S], [1,1,S,S], [S,S], [B,H,S,S].
singa::Shape mask_shape(const BertCase& c) {
  switch (c.mask) {
    case MaskKind::kPadding: return {c.B, 1, 1, c.S};
    case MaskKind::kSquare: return {c.B, 1, c.S, c.S};
    case MaskKind::kCausal: return {1, 1, c.S, c.S};
    case MaskKind::kFull: return {c.B, c.H, c.S, c.S};
    case MaskKind::kTwoDim: return {c.S, c.S};
    case MaskKind::kNone: break;
  }
  return {};
}

// Separate Q/K/V projections -> Reshape [B, S, H, D] -> Transpose(0,2,1,3)
// (K: (0,2,3,1)), scores / sqrt(D) + mask, Softmax, x V, Transpose,
// Reshape [B, S, H * D], as HF's BERT exports it.
ModelBuilder bert_block(const BertCase& c) {
  ModelBuilder m(17);
  const int64_t E = embed(c);
  m.input("x", SINGA_ONNX_FLOAT, {c.B, c.S, E});
  if (c.mask != MaskKind::kNone) m.input("mask", SINGA_ONNX_FLOAT, mask_shape(c));
  m.initializer("split", i64_tensor({c.B, c.S, c.H, c.D}));
  unsigned seed = 10;
  for (const char* p : {"q", "k", "v"}) {
    const std::string n = p;
    m.initializer("w" + n, random_floats({E, E}, seed++, -0.4f, 0.4f));
    m.initializer("b" + n, random_floats({E}, seed++, -0.2f, 0.2f));
    m.node("MatMul", {"x", "w" + n}, {n + "0"}).node("Add", {n + "0", "b" + n}, {n + "1"});
    m.node("Reshape", {n + "1", "split"}, {n + "4"}).node("Transpose", {n + "4"}, {n});
    add_ints(m.last(), "perm", n == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
  }
  m.initializer("root_d", Tensor::from_vector({}, SINGA_ONNX_FLOAT, std::vector<float>{std::sqrt(float(c.D))}));
  m.node("MatMul", {"q", "k"}, {"qk"}).node("Div", {"qk", "root_d"}, {"scores"});
  std::string logits = "scores";
  if (c.mask != MaskKind::kNone) m.node("Add", {"scores", "mask"}, {"masked"}), logits = "masked";
  m.node("Softmax", {logits}, {"p"});
  add_int(m.last(), "axis", -1);
  m.node("MatMul", {"p", "v"}, {"ctx"}).node("Transpose", {"ctx"}, {"ctx_t"});
  add_ints(m.last(), "perm", {0, 2, 1, 3});
  m.initializer("join", i64_tensor({-1, c.S, E})).node("Reshape", {"ctx_t", "join"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {c.B, c.S, E});
  return m;
}

std::vector<Tensor> bert_inputs(const BertCase& c, unsigned seed) {
  std::vector<Tensor> in{random_floats({c.B, c.S, embed(c)}, seed, -2.f, 2.f)};
  if (c.mask == MaskKind::kNone) return in;
  const singa::Shape ms = mask_shape(c);
  Tensor mask = random_floats(ms, seed + 1, -3.f, 0.f);  // kFull, kTwoDim: any additive values
  float* p = mask.data<float>();
  const int64_t rows = mask.numel() / c.S;
  std::mt19937 rng(seed + 2);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < c.S; ++j) {
      float& x = p[r * c.S + j];
      if (c.mask == MaskKind::kPadding) x = j < c.S - 1 - int64_t(r % 3) || j == 0 ? 0.f : c.masked;
      if (c.mask == MaskKind::kCausal) x = j <= r % c.S ? 0.f : c.masked;
      if (c.mask == MaskKind::kSquare) x = rng() % 3 == 0 && j != r % c.S ? c.masked : 0.f;
    }
  if (c.fully_masked_row)  // the first query row of every mask row block sees no key
    for (int64_t r = 0; r < rows; r += c.S)
      for (int64_t j = 0; j < c.S; ++j) p[r * c.S + j] = c.masked;
  in.push_back(mask);
  return in;
}

// Every mask shape, head count, sequence length and mask value fuses into
// one Attention node and agrees with the Softmax and MatMuls it replaces.
TEST(AttentionMasked, BertFormsAgreeWithTheUnfusedGraph) {
  testing_util::ensure_loaded();
  std::vector<BertCase> cases;
  for (MaskKind k : {MaskKind::kNone, MaskKind::kPadding, MaskKind::kSquare, MaskKind::kCausal, MaskKind::kFull,
                     MaskKind::kTwoDim}) {
    BertCase c;
    c.mask = k;
    cases.push_back(c);
  }
  BertCase c;
  c.S = 1, c.H = 3, c.D = 5;
  cases.push_back(c);  // one token
  c = BertCase(), c.B = 2, c.S = 33, c.H = 4, c.D = 16;
  cases.push_back(c);  // odd length past two vectors, a batch of two
  c = BertCase(), c.B = 2, c.S = 13, c.H = 1, c.D = 7, c.mask = MaskKind::kCausal, c.masked = -kInf;
  cases.push_back(c);  // -inf, one head
  c = BertCase(), c.B = 2, c.S = 9, c.H = 3, c.D = 4, c.mask = MaskKind::kSquare, c.masked = -kInf;
  c.fully_masked_row = true;
  cases.push_back(c);  // rows with every key at -inf: NaN, as Softmax gives
  c.masked = -1e4f;
  cases.push_back(c);  // the same rows at -1e4: the mean of V
  c = BertCase(), c.S = 70, c.H = 1, c.D = 16, c.mask = MaskKind::kCausal;
  cases.push_back(c);  // one head's rows in blocks over the threads
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ModelBuilder m = bert_block(cases[i]);
    for (int threads : {1, 3}) EXPECT_EQ(check_against_unfused(m, bert_inputs(cases[i], 40 + unsigned(i)), threads), 1);
  }
}

// A mask that would broadcast the scores to a larger shape, or one of
// another element type, leaves the pattern to the unfused nodes.
TEST(AttentionMasked, MasksTheNodeCannotTakeStayUnfused) {
  testing_util::ensure_loaded();
  BertCase c;
  c.mask = MaskKind::kFull;
  ModelBuilder wider = bert_block(c);
  // [2, H, S, S] against scores [1, H, S, S]: the Add's result is larger.
  auto shape_of = [](::onnx::ValueInfoProto* vi) { return vi->mutable_type()->mutable_tensor_type()->mutable_shape(); };
  shape_of(wider.model.mutable_graph()->mutable_input(1))->mutable_dim(0)->set_dim_value(2);
  shape_of(wider.model.mutable_graph()->mutable_output(0))->mutable_dim(0)->set_dim_value(2);
  std::vector<Tensor> in = bert_inputs(c, 90);
  in[1] = random_floats({2, c.H, c.S, c.S}, 91, -1.f, 0.f);
  EXPECT_EQ(check_against_unfused(wider, in, 1), 0);
}

// ------------------------------------------------------- GPT-2 with a cache

struct GptCase {
  int64_t B = 1, S = 1, P = 6, H = 3, D = 8;
  bool mask = true;
  bool causal_where = false;  // HF's Where(causal, scores, float min) before the mask's Add
};

// qkv = x W -> Split(3) -> Reshape [B, S, H, D] -> Transpose(0,2,1,3);
// K and V = Concat(past, new) on the sequence axis, both also outputs (the
// cache); scores = Q K^T (K^T by Transpose(0,1,3,2)) / sqrt(D) + mask.
ModelBuilder gpt_block(const GptCase& c) {
  ModelBuilder m(17);
  const int64_t E = c.H * c.D, T = c.P + c.S;
  m.input("x", SINGA_ONNX_FLOAT, {c.B, c.S, E});
  m.input("past_k", SINGA_ONNX_FLOAT, {c.B, c.H, c.P, c.D}).input("past_v", SINGA_ONNX_FLOAT, {c.B, c.H, c.P, c.D});
  if (c.mask) m.input("mask", SINGA_ONNX_FLOAT, {c.B, 1, 1, T});
  m.initializer("w", random_floats({E, 3 * E}, 60, -0.4f, 0.4f)).node("MatMul", {"x", "w"}, {"qkv"});
  m.initializer("thirds", i64_tensor({E, E, E})).node("Split", {"qkv", "thirds"}, {"q0", "k0", "v0"});
  add_int(m.last(), "axis", 2);
  m.initializer("split", i64_tensor({c.B, c.S, c.H, c.D}));
  for (const char* p : {"q", "k", "v"}) {
    const std::string n = p;
    m.node("Reshape", {n + "0", "split"}, {n + "4"}).node("Transpose", {n + "4"}, {n + "h"});
    add_ints(m.last(), "perm", {0, 2, 1, 3});
  }
  m.node("Concat", {"past_k", "kh"}, {"present_k"});
  add_int(m.last(), "axis", 2);
  m.node("Concat", {"past_v", "vh"}, {"present_v"});
  add_int(m.last(), "axis", 2);
  m.node("Transpose", {"present_k"}, {"kt"});
  add_ints(m.last(), "perm", {0, 1, 3, 2});
  m.initializer("root_d", Tensor::from_vector({}, SINGA_ONNX_FLOAT, std::vector<float>{std::sqrt(float(c.D))}));
  m.node("MatMul", {"qh", "kt"}, {"qk"}).node("Div", {"qk", "root_d"}, {"scores"});
  std::string logits = "scores";
  if (c.causal_where) {  // query s (position P + s) sees keys 0 .. P + s
    Tensor causal(singa::Shape{1, 1, c.S, T}, SINGA_ONNX_BOOL);
    for (int64_t s = 0; s < c.S; ++s)
      for (int64_t t = 0; t < T; ++t) causal.data<uint8_t>()[s * T + t] = t <= c.P + s;
    m.initializer("causal", causal);
    m.initializer("lowest", Tensor::from_vector({}, SINGA_ONNX_FLOAT, std::vector<float>{-3.4028235e38f}));
    m.node("Where", {"causal", "scores", "lowest"}, {"kept"}), logits = "kept";
  }
  if (c.mask) m.node("Add", {"mask", logits}, {"masked"}), logits = "masked";  // the mask first, too
  m.node("Softmax", {logits}, {"p"});
  add_int(m.last(), "axis", -1);
  m.node("MatMul", {"p", "present_v"}, {"ctx"}).node("Transpose", {"ctx"}, {"ctx_t"});
  add_ints(m.last(), "perm", {0, 2, 1, 3});
  m.initializer("join", i64_tensor({c.B, c.S, E})).node("Reshape", {"ctx_t", "join"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {c.B, c.S, E});
  m.output("present_k", SINGA_ONNX_FLOAT, {c.B, c.H, T, c.D}).output("present_v", SINGA_ONNX_FLOAT, {c.B, c.H, T, c.D});
  return m;
}

std::vector<Tensor> gpt_inputs(const GptCase& c, unsigned seed) {
  const int64_t T = c.P + c.S;
  std::vector<Tensor> in{random_floats({c.B, c.S, c.H * c.D}, seed, -2.f, 2.f),
                         random_floats({c.B, c.H, c.P, c.D}, seed + 1, -2.f, 2.f),
                         random_floats({c.B, c.H, c.P, c.D}, seed + 2, -2.f, 2.f)};
  if (c.mask) {
    Tensor m(singa::Shape{c.B, 1, 1, T}, SINGA_ONNX_FLOAT);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < T; ++t) m.data<float>()[b * T + t] = t < b ? -1e4f : 0.f;  // left padding
    in.push_back(m);
  }
  return in;
}

// The decoder step reads K and V from the cache's [B, H, T, D] Concats in
// place; one new token or several, with and without the padding mask, and a
// boolean causal mask by Where (made additive on its own small shape).
TEST(AttentionMasked, DecoderStepWithAKvCache) {
  testing_util::ensure_loaded();
  std::vector<GptCase> cases(6);
  cases[4].causal_where = true, cases[4].S = 4, cases[4].B = 2;  // causal by Where, then the padding mask
  cases[5].causal_where = true, cases[5].S = 3, cases[5].mask = false;
  cases[1].B = 2, cases[1].S = 3, cases[1].P = 5;
  cases[2].mask = false, cases[2].H = 1, cases[2].D = 16, cases[2].P = 40;
  cases[3].P = 0, cases[3].S = 5, cases[3].B = 2;  // the first step: an empty cache
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    for (int threads : {1, 2})
      EXPECT_EQ(check_against_unfused(gpt_block(cases[i]), gpt_inputs(cases[i], 70 + unsigned(i)), threads), 1);
  }
}

// ------------------------------------------- torch MultiheadAttention (ViT)

struct MhaCase {
  int64_t S = 9, H = 3, D = 4;
};

// x [S, 1, E] (sequence first) x W_in + b -> Slice q, k, v ->
// Reshape [S, H, D] -> Transpose(1,0,2) -> q / sqrt(D); K^T by
// Transpose(1,2,0); Softmax; x V -> Transpose(1,0,2) -> Reshape [S, E].
ModelBuilder mha_block(const MhaCase& c) {
  ModelBuilder m(17);
  const int64_t E = c.H * c.D;
  m.input("x", SINGA_ONNX_FLOAT, {c.S, 1, E});
  m.initializer("w", random_floats({E, 3 * E}, 80, -0.4f, 0.4f)).initializer("b", random_floats({3 * E}, 81, -0.2f, 0.2f));
  m.node("MatMul", {"x", "w"}, {"proj0"}).node("Add", {"proj0", "b"}, {"proj"});
  m.initializer("axis2", i64_tensor({2})).initializer("heads", i64_tensor({c.S, c.H, c.D}));
  const char* names[3] = {"q", "k", "v"};
  for (int64_t i = 0; i < 3; ++i) {
    const std::string n = names[i];
    m.initializer(n + "_from", i64_tensor({i * E})).initializer(n + "_to", i64_tensor({(i + 1) * E}));
    m.node("Slice", {"proj", n + "_from", n + "_to", "axis2"}, {n + "0"});
    m.node("Reshape", {n + "0", "heads"}, {n + "3"}).node("Transpose", {n + "3"}, {n + "h"});
    add_ints(m.last(), "perm", n == "k" ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{1, 0, 2});
  }
  m.initializer("root_d", Tensor::from_vector({}, SINGA_ONNX_FLOAT, std::vector<float>{std::sqrt(float(c.D))}));
  m.node("Div", {"qh", "root_d"}, {"qs"}).node("MatMul", {"qs", "kh"}, {"scores"}).node("Softmax", {"scores"}, {"p"});
  add_int(m.last(), "axis", -1);
  m.node("MatMul", {"p", "vh"}, {"ctx"}).node("Transpose", {"ctx"}, {"ctx_t"});
  add_ints(m.last(), "perm", {1, 0, 2});
  m.initializer("join", i64_tensor({c.S, E})).node("Reshape", {"ctx_t", "join"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {c.S, E});
  return m;
}

// Sequence-first roots read at Slice offsets, the scale taken from Q, and a
// Reshape of the node's [S, 1, E] to the exporter's [S, E].
TEST(AttentionMasked, SequenceFirstMultiheadAttention) {
  testing_util::ensure_loaded();
  std::vector<MhaCase> cases(3);
  cases[1].S = 1;
  cases[2].S = 197, cases[2].H = 3, cases[2].D = 16;  // ViT-tiny's sequence
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const MhaCase& c = cases[i];
    for (int threads : {1, 2})
      EXPECT_EQ(check_against_unfused(mha_block(c), {random_floats({c.S, 1, c.H * c.D}, 85 + unsigned(i), -2.f, 2.f)},
                                      threads),
                1);
  }
}

// A hand-written Attention node with a mask that does not broadcast to the
// scores fails naming the node and the shapes.
TEST(AttentionMasked, BadMaskFailsClearly) {
  testing_util::ensure_loaded();
  ModelBuilder m(17);
  auto* op = m.model.add_opset_import();
  op->set_domain("ai.singa.cpu");
  op->set_version(1);
  m.input("q", SINGA_ONNX_FLOAT, {1, 3, 8}).input("k", SINGA_ONNX_FLOAT, {1, 5, 8});
  m.input("v", SINGA_ONNX_FLOAT, {1, 5, 8}).input("mask", SINGA_ONNX_FLOAT, {1, 1, 1, 4});
  m.node("Attention", {"q", "k", "v", "mask"}, {"y"}, "bad");
  m.last()->set_domain("ai.singa.cpu");
  add_int(m.last(), "num_heads", 2);
  add_int(m.last(), "head_size", 4);
  m.output("y", SINGA_ONNX_FLOAT, {-1, -1, -1}, {"b", "s", "w"});
  try {
    singa::onnx::prepare_bytes(m.bytes())
        ->run({random_floats({1, 3, 8}, 1, -1, 1), random_floats({1, 5, 8}, 2, -1, 1), random_floats({1, 5, 8}, 3, -1, 1),
               random_floats({1, 1, 1, 4}, 4, -1, 0)});
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad"), std::string::npos) << msg;
    EXPECT_NE(msg.find("broadcast to the scores [1, 2, 3, 5], got [1,1,1,4]"), std::string::npos) << msg;
  }
}

}  // namespace
