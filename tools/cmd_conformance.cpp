// `singa conformance DIR...`: runs ONNX backend test cases, one line per case,
// each in its own child process by default so that a crash or a hang is one
// FAIL and the run goes on.
#include "cli.hpp"
#include "conformance_case.hpp"
#include "gradient_check.hpp"
#include "isolate.hpp"
#include "json.hpp"
#include "tensor_values.hpp"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>

#include <unistd.h>

namespace singa {
namespace cli {

namespace {

std::vector<std::string> read_expect_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--expect: cannot read '" + path + "'");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    names.push_back(line.substr(b, e - b + 1));
  }
  return names;
}

// The line that shows which case runs now; only drawn on a terminal.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), on_(::isatty(STDERR_FILENO) == 1) {}
  void show(size_t index, const std::string& name) {
    if (!on_) return;
    std::cerr << "\r\033[K[" << index + 1 << "/" << total_ << "] " << name << std::flush;
  }
  void clear() {
    if (on_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  size_t total_;
  bool on_;
};

// Plugins are loaded here, once, and the forked cases inherit them: loading
// in every child costs more than most cases. No device is touched here
// (drivers such as CUDA do not survive a fork once initialised): the device
// check runs in a child like the cases, so that a bad --device is one error
// rather than a FAIL per case. This relies on plugins starting threads and
// device runtimes lazily, not in singa_plugin_init.
void load_and_check_device(const GlobalOptions& g, bool isolate) {
  load_runtime(g);
  // ONNX builds its schema registry on first use (checker, shape inference);
  // built here, every child inherits it instead of building its own.
  ::onnx::OpSchemaRegistry::Schema("Relu");
  auto check = [&]() -> std::string {
    try {
      require_device(g.device);
      return "ok";
    } catch (const std::exception& e) {
      return std::string("error ") + e.what();
    }
  };
  std::string result;
  if (isolate) {
    ChildOutcome o = run_isolated(check, 120);
    result = o.completed ? o.result : "error checking device '" + g.device + "': " + o.failure;
  } else {
    result = check();
  }
  if (result != "ok") throw Error(SINGA_UNAVAILABLE, result.substr(6));
}

// The names of `expected` that are not on disk (missing) or were selected
// and did not pass (regressions); the rest were not selected.
struct ExpectCheck {
  std::vector<std::string> regressions, missing;
  size_t not_selected = 0;
};
ExpectCheck check_expected(const std::vector<std::string>& expected, const CaseSelection& sel,
                           const std::set<std::string>& passing) {
  ExpectCheck e;
  std::set<std::string> selected;
  for (const auto& c : sel.cases) selected.insert(c.name);
  for (const auto& name : expected) {
    if (!sel.on_disk.count(name))
      e.missing.push_back(name);
    else if (!selected.count(name))
      ++e.not_selected;
    else if (!passing.count(name))
      e.regressions.push_back(name);
  }
  for (const auto& name : e.missing)
    std::cerr << "singa: error: --expect: case '" << name << "' is not found under the given folders\n";
  return e;
}

void write_passing(const Parsed& p, const std::set<std::string>& passing) {
  if (!p.vm.count("write-passing")) return;
  const std::string file = p.vm["write-passing"].as<std::string>();
  std::ofstream out(file);
  for (const auto& name : passing) out << name << "\n";  // std::set keeps them sorted
  out.close();
  if (!out) throw Error(SINGA_NOT_FOUND, "--write-passing: cannot write '" + file + "'");
}

// `conformance --gradients`: one gradient check per case (gradient_check.hpp).
int run_gradients(const Parsed& p, const CaseSelection& sel, const std::vector<std::string>& expected, bool isolate,
                  int timeout, bool json) {
  GradCheckOptions o;
  if (!p.vm["rtol"].defaulted()) o.rtol = p.vm["rtol"].as<double>();
  if (!p.vm["atol"].defaulted()) o.atol = p.vm["atol"].as<double>();
  o.max_points = p.vm["points"].as<int>();
  if (o.max_points <= 0) throw UsageError("--points must be > 0");
  Progress progress(sel.cases.size());
  size_t counts[4] = {0, 0, 0, 0};  // by GradStatus
  std::set<std::string> passing;
  for (size_t i = 0; i < sel.cases.size(); ++i) {
    const TestCase& c = sel.cases[i];
    progress.show(i, c.name);
    GradResult r;
    if (isolate) {
      ChildOutcome out = run_isolated([&]() { return encode_grad_result(check_case_gradient(c, o)); }, timeout);
      if (out.completed) {
        r = decode_grad_result(out.result);
      } else {
        r.status = GradStatus::kFail;
        r.reason = out.failure;
      }
    } else {
      r = check_case_gradient(c, o);
    }
    progress.clear();
    ++counts[int(r.status)];
    if (r.status == GradStatus::kPass) passing.insert(c.name);
    const bool measured = r.status == GradStatus::kPass || (r.status == GradStatus::kFail && r.max_abs > 0);
    if (json) {
      JsonObject j;
      j.str("case", c.name).str("op", r.op).str("status", grad_status_word(r.status));
      if (!r.reason.empty()) j.str("reason", r.reason);
      if (measured) j.num("max_abs", r.max_abs).num("max_rel", r.max_rel);
      j.num("time_ms", r.ms);
      std::cout << j.dump() << "\n";
    } else {
      std::cout << grad_status_word(r.status) << " " << c.name << " [" << (r.op.empty() ? "?" : r.op) << "]";
      if (r.status == GradStatus::kPass)
        std::cout << ": max abs " << format_value(r.max_abs) << ", rel " << format_value(r.max_rel)
                  << (r.reason.empty() ? "" : "; " + r.reason);
      else
        std::cout << ": " << r.reason;
      std::cout << "\n";
    }
    std::cout.flush();
  }
  progress.clear();
  ExpectCheck e = check_expected(expected, sel, passing);
  write_passing(p, passing);
  const size_t passed = counts[int(GradStatus::kPass)], failed = counts[int(GradStatus::kFail)];
  const size_t nograd = counts[int(GradStatus::kNoGradient)], skipped = counts[int(GradStatus::kSkip)];
  if (json) {
    JsonObject s;
    s.boolean("summary", true).integer("passed", int64_t(passed)).integer("failed", int64_t(failed));
    s.integer("no_gradient", int64_t(nograd)).integer("skipped", int64_t(skipped));
    if (p.vm.count("expect")) s.raw("regressions", json_string_array(e.regressions)).raw("missing", json_string_array(e.missing));
    std::cout << s.dump() << "\n";
  } else {
    for (const auto& name : e.regressions) std::cout << "REGRESSION " << name << "\n";
    std::cout << passed << " passed, " << failed << " failed, " << nograd << " without gradient, " << skipped
              << " skipped\n";
  }
  if (p.vm.count("expect")) return e.regressions.empty() && e.missing.empty() ? kExitOk : kExitFailure;
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

int cmd_conformance(const std::vector<std::string>& args) {
  CommandSpec spec{"conformance", "DIR... [options]",
                   "Runs ONNX backend test cases. Each DIR is a case (holds model.onnx and test_data_set_*/ with\n"
                   "input_K.pb and output_K.pb) or a folder of cases. Inputs are matched to the model's inputs by\n"
                   "position; outputs must have the expected dtype and shape, floats within atol + rtol*|expected|\n"
                   "(NaN matches NaN), other types exactly. Prints `PASS name`, `FAIL name: reason` or\n"
                   "`SKIP name: reason` per case, then `N passed, M failed, K skipped`.\n"
                   "Exit status: 1 when a case failed, or with --expect when an expected case did not pass.\n"
                   "With --gradients, checks each case's op gradient instead (docs/training.md, \"Gradient\n"
                   "coverage\"): singa's backward against float64 central differences on the case's inputs, and\n"
                   "the float64 forward against the case's outputs. Prints PASS, FAIL, NOGRAD (the op has no\n"
                   "gradient) or SKIP (nothing differentiable to check) per case, with the op and the worst\n"
                   "error; the cases run on the CPU."};
  po::options_description own("Options");
  own.add_options()
      ("filter", po::value<std::string>()->value_name("REGEX"), "only cases whose name contains a match")
      ("expect", po::value<std::string>()->value_name("FILE"),
       "case names that must pass (one per line, # comments); others may fail; lists each REGRESSION")
      ("write-passing", po::value<std::string>()->value_name("FILE"), "write the sorted names of passing cases")
      ("rtol", po::value<double>()->value_name("R")->default_value(1e-3, "1e-3"), "relative tolerance")
      ("atol", po::value<double>()->value_name("A")->default_value(1e-7, "1e-7"), "absolute tolerance")
      ("timeout", po::value<int>()->value_name("SEC")->default_value(60), "per-case time limit (isolated runs)")
      ("no-isolate", "run the cases in this process (faster; a crash ends the run, no time limit)")
      ("json", "one JSON object per case, then a summary object")
      ("gradients", "check gradients instead of outputs (--rtol/--atol, when given, compare gradients; "
                    "defaults 1e-3/1e-5)")
      ("points", po::value<int>()->value_name("N")->default_value(48),
       "with --gradients: elements perturbed per input (larger inputs are sampled)");
  Parsed p = parse_command(spec, args, own, "dir");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  if (!p.vm.count("dir")) throw UsageError("conformance: give at least one test case folder");
  const bool json = p.vm.count("json") > 0;
  const bool isolate = !p.vm.count("no-isolate");
  CaseOptions copts;
  copts.device = p.global.device;
  copts.fallback = p.global.fallback;
  copts.threads = p.global.threads;
  copts.max_tensor_bytes = p.global.max_tensor_bytes;
  copts.options = p.global.options;
  copts.tol.rtol = p.vm["rtol"].as<double>();
  copts.tol.atol = p.vm["atol"].as<double>();
  if (!(copts.tol.rtol >= 0) || !(copts.tol.atol >= 0)) throw UsageError("--rtol and --atol must be >= 0");
  const int timeout = p.vm["timeout"].as<int>();
  if (timeout <= 0) throw UsageError("--timeout must be a number of seconds > 0");
  split_device(p.global.device);  // a malformed device name is a usage error

  CaseSelection sel = discover_cases(p.vm["dir"].as<std::vector<std::string>>());
  if (p.vm.count("filter")) {
    std::regex re;
    try {
      re = std::regex(p.vm["filter"].as<std::string>());
    } catch (const std::regex_error& e) {
      throw UsageError("--filter: bad regular expression: " + std::string(e.what()));
    }
    auto& cs = sel.cases;
    cs.erase(std::remove_if(cs.begin(), cs.end(), [&](const TestCase& c) { return !std::regex_search(c.name, re); }), cs.end());
  }
  std::vector<std::string> expected;
  if (p.vm.count("expect")) expected = read_expect_file(p.vm["expect"].as<std::string>());

  load_and_check_device(p.global, isolate);
  if (p.vm.count("gradients")) return run_gradients(p, sel, expected, isolate, timeout, json);

  Progress progress(sel.cases.size());
  size_t passed = 0, failed = 0, skipped = 0;
  std::set<std::string> passing;
  std::vector<std::pair<double, std::string>> timings;
  for (size_t i = 0; i < sel.cases.size(); ++i) {
    const TestCase& c = sel.cases[i];
    progress.show(i, c.name);
    CaseResult r;
    if (isolate) {
      auto t0 = std::chrono::steady_clock::now();
      ChildOutcome o = run_isolated([&]() { return encode_result(run_case(c, copts)); }, timeout);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r = o.completed ? decode_result(o.result) : CaseResult{CaseStatus::kFail, o.failure, ms};
    } else {
      r = run_case(c, copts);
    }
    progress.clear();
    (r.status == CaseStatus::kPass ? passed : r.status == CaseStatus::kSkip ? skipped : failed)++;
    if (r.status == CaseStatus::kPass) passing.insert(c.name);
    timings.emplace_back(r.ms, c.name);
    if (json) {
      JsonObject o;
      o.str("case", c.name).str("status", status_word(r.status));
      if (r.status != CaseStatus::kPass) o.str("reason", r.reason);
      o.num("time_ms", r.ms);
      std::cout << o.dump() << "\n";
    } else {
      std::cout << status_word(r.status) << " " << c.name;
      if (r.status != CaseStatus::kPass) std::cout << ": " << r.reason;
      std::cout << "\n";
    }
    std::cout.flush();
  }
  progress.clear();

  ExpectCheck e = check_expected(expected, sel, passing);
  const auto& regressions = e.regressions;
  const auto& missing = e.missing;
  const size_t not_selected = e.not_selected;
  if (p.global.verbose) {
    if (not_selected) std::cerr << "singa: " << not_selected << " expected cases were not selected by the arguments or --filter\n";
    std::sort(timings.rbegin(), timings.rend());
    std::cerr << "singa: slowest cases:";
    for (size_t i = 0; i < timings.size() && i < 5; ++i) std::cerr << " " << timings[i].second << " (" << format_value(timings[i].first) << " ms)";
    std::cerr << "\n";
  }

  write_passing(p, passing);

  if (json) {
    JsonObject s;
    s.boolean("summary", true).integer("passed", int64_t(passed)).integer("failed", int64_t(failed));
    s.integer("skipped", int64_t(skipped));
    if (p.vm.count("expect")) s.raw("regressions", json_string_array(regressions)).raw("missing", json_string_array(missing));
    std::cout << s.dump() << "\n";
  } else {
    for (const auto& name : regressions) std::cout << "REGRESSION " << name << "\n";
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  }
  if (p.vm.count("expect")) return regressions.empty() && missing.empty() ? kExitOk : kExitFailure;
  return failed ? kExitFailure : kExitOk;
}

}  // namespace cli
}  // namespace singa
