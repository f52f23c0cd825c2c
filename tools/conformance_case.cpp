#include "conformance_case.hpp"
#include "cli.hpp"

#include <singa/onnx.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

namespace singa {
namespace cli {

namespace fs = std::filesystem;

namespace {

bool is_case_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::is_regular_file(p / "model.onnx", ec);
}

std::vector<fs::path> case_dirs_in(const fs::path& folder) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (is_case_dir(it->path())) out.push_back(it->path());
  return out;
}

// Entries named PREFIX<number>SUFFIX, in numeric order (input_10 after input_9).
std::vector<fs::path> numbered(const fs::path& folder, const std::string& prefix, const std::string& suffix, bool dirs) {
  std::vector<std::pair<long long, fs::path>> found;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    std::error_code ec2;
    if (dirs ? !fs::is_directory(it->path(), ec2) : !fs::is_regular_file(it->path(), ec2)) continue;
    found.emplace_back(std::stoll(digits), it->path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// Absolute, without "." or ".." or a trailing separator, so that "case/" and
// "./case" name the same folder and have a name and a parent.
fs::path normalized(const fs::path& p) {
  std::error_code ec;
  fs::path n = fs::absolute(p, ec).lexically_normal();
  if (n.filename().empty()) n = n.parent_path();
  return n;
}

CaseResult fail(std::string reason) { return {CaseStatus::kFail, std::move(reason), 0}; }

// ONNX 1.12's test data stores bfloat16 tensors with data_type UINT16 (the
// bits are bfloat16): read them as the type the model declares.
Tensor as_declared(const Tensor& t, int32_t declared) {
  if (declared == SINGA_ONNX_BFLOAT16 && t.dtype() == SINGA_ONNX_UINT16)
    return Tensor(t.storage(), t.shape(), SINGA_ONNX_BFLOAT16);
  return t;
}

Value as_declared(const Value& v, int32_t declared) {
  if (v.is_tensor()) return as_declared(v.tensor(), declared);
  return v;
}

std::string compare_values(const Value& expected, const Value& got, const Tolerance& tol) {
  if (expected.kind() != got.kind()) return "expected " + expected.describe() + ", got " + got.describe();
  if (expected.is_tensor()) return compare_tensors(expected.tensor(), got.tensor(), tol);
  if (expected.is_none()) return "";
  if (expected.is_map()) {
    std::string diff = compare_tensors(expected.map_keys(), got.map_keys(), tol);
    if (!diff.empty()) return "map keys: " + diff;
    diff = compare_tensors(expected.map_values(), got.map_values(), tol);
    return diff.empty() ? "" : "map values: " + diff;
  }
  const auto& want = expected.elements();
  const auto& have = got.elements();
  if (want.size() != have.size())
    return "expected a sequence of " + std::to_string(want.size()) + " values, got " + std::to_string(have.size());
  for (size_t i = 0; i < want.size(); ++i) {
    std::string diff = compare_values(want[i], have[i], tol);
    if (!diff.empty()) return "element " + std::to_string(i) + ": " + diff;
  }
  return "";
}

// "" when every output of one data set matches.
std::string run_data_set(const onnx::Rep& rep, const fs::path& set, const Tolerance& tol) {
  auto input_files = numbered(set, "input_", ".pb", false);
  auto output_files = numbered(set, "output_", ".pb", false);
  if (input_files.size() > rep.inputs().size())
    return std::to_string(input_files.size()) + " input files, the model takes " + std::to_string(rep.inputs().size()) + " inputs";
  if (output_files.size() > rep.outputs().size())
    return std::to_string(output_files.size()) + " output files, the model has " + std::to_string(rep.outputs().size()) + " outputs";
  std::vector<Value> inputs;
  for (size_t i = 0; i < input_files.size(); ++i)
    inputs.push_back(as_declared(onnx::load_value_file(input_files[i].string(), rep.inputs()[i]), rep.inputs()[i].dtype));
  std::vector<Value> expected;
  for (size_t i = 0; i < output_files.size(); ++i)
    expected.push_back(as_declared(onnx::load_value_file(output_files[i].string(), rep.outputs()[i]), rep.outputs()[i].dtype));

  onnx::NamedValues got = rep.run_values(inputs);
  if (got.size() != expected.size())
    return "the model produced " + std::to_string(got.size()) + " outputs, the test expects " + std::to_string(expected.size());
  std::string reasons;
  int failing = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string diff = compare_values(expected[i], got[i].second, tol);
    if (diff.empty()) continue;
    if (++failing <= 2) reasons += (reasons.empty() ? "" : "; ") + ("output " + std::to_string(i) + " '" + got[i].first + "': " + diff);
  }
  if (failing > 2) reasons += "; and " + std::to_string(failing - 2) + " more outputs differ";
  return reasons;
}

}  // namespace

const char* status_word(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPass: return "PASS";
    case CaseStatus::kSkip: return "SKIP";
    default: return "FAIL";
  }
}

CaseSelection discover_cases(const std::vector<std::string>& roots) {
  CaseSelection sel;
  std::map<std::string, TestCase> by_dir;  // one entry per folder, however often it is named
  for (const auto& root : roots) {
    fs::path p(root);
    std::error_code ec;
    if (!fs::exists(p, ec)) throw UsageError("conformance: '" + root + "' does not exist");
    std::vector<fs::path> found;
    if (is_case_dir(p)) {
      found.push_back(p);
      for (const auto& sibling : case_dirs_in(normalized(p).parent_path())) sel.on_disk.insert(sibling.filename().string());
    } else if (fs::is_directory(p, ec)) {
      found = case_dirs_in(p);
      if (found.empty()) throw UsageError("conformance: '" + root + "' holds no test case (no model.onnx in it or its subfolders)");
    } else {
      throw UsageError("conformance: '" + root + "' is not a folder (give a case folder or a folder of cases)");
    }
    for (const auto& f : found) {
      fs::path norm = normalized(f);
      std::string name = norm.filename().string();
      by_dir.emplace(norm.string(), TestCase{name, f.string()});
      sel.on_disk.insert(name);
    }
  }
  for (auto& [dir, c] : by_dir) sel.cases.push_back(c);
  std::stable_sort(sel.cases.begin(), sel.cases.end(), [](const TestCase& a, const TestCase& b) { return a.name < b.name; });
  return sel;
}

CaseResult run_case(const TestCase& c, const CaseOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  const std::string model_path = (fs::path(c.dir) / "model.onnx").string();
  auto finish = [&](CaseResult r) {
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // The case name is on the line already; the model's path only adds noise.
    if (r.reason.compare(0, model_path.size() + 2, model_path + ": ") == 0) r.reason.erase(0, model_path.size() + 2);
    r.reason = one_line(r.reason);
    return r;
  };
  try {
    fs::path dir(c.dir);
    auto sets = numbered(dir, "test_data_set_", "", true);
    if (sets.empty()) return finish({CaseStatus::kSkip, "no test_data_set_* folder", 0});
    for (const auto& s : sets)
      if (numbered(s, "output_", ".pb", false).empty())
        return finish({CaseStatus::kSkip, s.filename().string() + " has no output_*.pb to compare with", 0});
    onnx::PrepareOptions popts;
    popts.device = o.device;
    popts.fallback = o.fallback;
    popts.threads = o.threads;
    if (o.max_tensor_bytes) popts.max_tensor_bytes = o.max_tensor_bytes;
    popts.options = o.options;
    auto rep = onnx::prepare(model_path, popts);
    for (const auto& s : sets) {
      std::string diff = run_data_set(*rep, s, o.tol);
      if (!diff.empty()) return finish(fail(sets.size() > 1 ? s.filename().string() + ": " + diff : diff));
    }
    return finish({CaseStatus::kPass, "", 0});
  } catch (const std::bad_alloc&) {
    return finish(fail("out of memory"));
  } catch (const std::exception& e) {
    return finish(fail(e.what()));
  } catch (...) {
    return finish(fail("unknown exception"));
  }
}

std::string encode_result(const CaseResult& r) {
  return std::string(status_word(r.status)) + " " + std::to_string(r.ms) + " " + r.reason;
}

CaseResult decode_result(const std::string& text) {
  CaseResult r;
  auto sp1 = text.find(' ');
  auto sp2 = sp1 == std::string::npos ? sp1 : text.find(' ', sp1 + 1);
  std::string word = text.substr(0, sp1);
  if (sp2 == std::string::npos || (word != "PASS" && word != "FAIL" && word != "SKIP")) {
    r.reason = "garbled result from the child process";
    return r;
  }
  r.status = word == "PASS" ? CaseStatus::kPass : word == "SKIP" ? CaseStatus::kSkip : CaseStatus::kFail;
  r.ms = std::atof(text.substr(sp1 + 1, sp2 - sp1 - 1).c_str());
  r.reason = text.substr(sp2 + 1);
  return r;
}

}  // namespace cli
}  // namespace singa
