// A CPU op pack with a layout of its own (ABI 1.4, singa_layout_ext):
// "test.layout.reversed" stores a tensor's elements back to front. Its graph
// pass finds AddIndex -> AddIndex chains whose middle value nothing else
// reads and runs them reversed: a ToReversed node where the plain value
// enters, a FromReversed where it leaves, and the three values between in
// the layout. AddIndex (y[i] = x[i] + i, i the logical flat index) gives a
// different answer if a kernel misreads the layout, so results matching the
// plain graph show every reader saw what the layout says. PlainAddIndex
// computes the same but declares no layout. The named option "layout.test"
// makes the pass misbehave on purpose (tests/unit/test_layouts.cpp):
//   undeclared - gives a value read by PlainAddIndex the layout
//   output     - sets the layout of a graph output
//   unknown    - sets the layout of a value that does not exist
//   cpu_conv   - gives the CPU pack's blocked layout to a value a standard
//                Conv reads (whose kernel does not declare it)
#include <singa/graph_pass.hpp>

#include <string>

namespace {

namespace sdk = singa::sdk;

constexpr const char* kDomain = "test.layout";
constexpr const char* kReversed = "test.layout.reversed";

// Physical position of logical element i of an n-element tensor.
int64_t at(bool reversed, int64_t n, int64_t i) { return reversed ? n - 1 - i : i; }

// Copies x to y with each side in its own layout.
struct Reorder {
  explicit Reorder(const sdk::Node& node)
      : in_(node.input_layout(0) == kReversed), out_(node.output_layout(0) == kReversed) {}
  void compute(sdk::Context& ctx) const {
    auto x = ctx.input(0);
    auto y = ctx.output(0, x.shape(), x.dl_dtype());
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) y.data<float>()[at(out_, n, i)] = x.data<float>()[at(in_, n, i)];
  }
  bool in_, out_;
};

struct AddIndex : Reorder {
  using Reorder::Reorder;
  void compute(sdk::Context& ctx) const {
    auto x = ctx.input(0);
    auto y = ctx.output(0, x.shape(), x.dl_dtype());
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) y.data<float>()[at(out_, n, i)] = x.data<float>()[at(in_, n, i)] + float(i);
  }
};

bool add_index(const sdk::GraphNode& n) { return n.domain() == kDomain && n.op_type() == "AddIndex"; }

int reverse_chains(sdk::Graph& g) {
  const std::string mode = g.option("layout.test");
  if (mode == "unknown") g.set_layout("no_such_value", kReversed);
  if (mode == "cpu_conv")
    for (const sdk::GraphNode& n : g.nodes())
      if (n.domain().empty() && n.op_type() == "Conv" && g.producer(n.input_name(0)).valid())
        g.set_layout(n.input_name(0), "ai.singa.cpu.nChw16c");
  int rewrites = 0;
  for (const sdk::GraphNode& first : g.nodes()) {
    if (!first.alive() || !add_index(first)) continue;
    const std::string mid = first.output_name(0);
    const auto readers = g.consumers(mid);
    if (readers.size() != 1 || !add_index(readers[0]) || g.is_output(mid)) continue;
    const sdk::GraphNode second = readers[0];
    // (Replaced handles read "" afterwards: keep the names.)
    const std::string in = first.input_name(0), out = second.output_name(0);
    const std::string first_name = first.name(), second_name = second.name();
    if (mode == "output") {
      for (const sdk::GraphNode& n : g.nodes())
        if (g.is_output(n.output_name(0))) g.set_layout(n.output_name(0), kReversed);
      return 0;
    }
    sdk::NewNode to(kDomain, "ToReversed"), a(kDomain, "AddIndex"), b(kDomain, "AddIndex"), from(kDomain, "FromReversed");
    to.inputs = {in};
    to.outputs = {mid + "_rev_in"};
    a.inputs = to.outputs;
    a.outputs = {mid};
    b.inputs = {mid};
    b.outputs = {out + "_rev_out"};
    from.inputs = b.outputs;
    from.outputs = {out};
    if (mode == "undeclared") b.op_type = "PlainAddIndex";
    a.name = first_name;
    b.name = second_name;
    g.replace({first, second}, {to, a, b, from});
    // graph_replace may rename new values; the new nodes' names are ours.
    for (const sdk::GraphNode& n : g.nodes()) {
      if (n.name() == first_name) {
        g.set_layout(n.input_name(0), kReversed);
        g.set_layout(n.output_name(0), kReversed);
      }
      if (n.name() == second_name) g.set_layout(n.output_name(0), kReversed);
    }
    ++rewrites;
  }
  return rewrites;
}

}  // namespace

SINGA_PLUGIN("test_layout_pack", "1.0", "a test op pack with its own value layout and reorder nodes") {
  const uint64_t f32 = sdk::bit(SINGA_ONNX_FLOAT);
  reg.kernel<Reorder>(kDomain, "ToReversed", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}}, {{-1, kReversed}});
  reg.kernel<Reorder>(kDomain, "FromReversed", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}}, {{0, kReversed}});
  reg.kernel<AddIndex>(kDomain, "AddIndex", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}},
                       {{0, kReversed}, {-1, kReversed}});
  reg.kernel<AddIndex>(kDomain, "PlainAddIndex", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}});
  sdk::register_graph_pass(reg, "layout.reverse_chains", "cpu", 0, reverse_chains);
}
