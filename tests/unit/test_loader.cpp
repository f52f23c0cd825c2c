// Where plugins are searched for and in which order, which files of a folder
// count as plugins, and that a folder with bad plugins loads the good ones.
#include "plugin_fixture.hpp"

#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using plugin_test::find_record;
using plugin_test::test_plugin;

namespace {

const std::string kBuildDir = SINGA_TEST_BUILD_PLUGIN_DIR;
const std::string kInstallDir = SINGA_TEST_INSTALL_PLUGIN_DIR;

// Sets SINGA_PLUGIN_PATH for one test and puts the caller's value back.
class PluginPathEnv {
 public:
  PluginPathEnv() {
    if (const char* v = std::getenv("SINGA_PLUGIN_PATH")) saved_ = v;
  }
  ~PluginPathEnv() {
    if (saved_) setenv("SINGA_PLUGIN_PATH", saved_->c_str(), 1);
    else unsetenv("SINGA_PLUGIN_PATH");
  }
  void set(const std::string& v) { setenv("SINGA_PLUGIN_PATH", v.c_str(), 1); }
  void unset() { unsetenv("SINGA_PLUGIN_PATH"); }

 private:
  std::optional<std::string> saved_;
};

class Loader : public plugin_test::PluginTest {
 protected:
  void SetUp() override {
    plugin_test::PluginTest::SetUp();
    std::string templ = (fs::temp_directory_path() / "singa_loader_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    tmp_ = templ;
  }
  void TearDown() override {
    plugin_test::PluginTest::TearDown();
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // A fresh folder under the test's temporary folder.
  fs::path dir(const std::string& name) {
    fs::path d = tmp_ / name;
    fs::create_directories(d);
    return d;
  }
  // Copies test plugin `name` into `folder` as `as` (default: its own name).
  static std::string put(const std::string& name, const fs::path& folder, const std::string& as = "") {
    fs::path src = test_plugin(name);
    fs::path dst = folder / (as.empty() ? src.filename().string() : as);
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
    return dst.string();
  }
  // Loads with the defaults and the environment off unless asked for; the
  // CPU device is already loaded by the fixture.
  static std::vector<std::string> load(std::vector<std::string> dirs, std::vector<std::string> files = {},
                                       bool use_env = false) {
    singa::LoadOptions o;
    o.use_default_dirs = false;
    o.use_env = use_env;
    o.plugin_dirs = std::move(dirs);
    o.plugins = std::move(files);
    return rt().load(o);
  }
  // Paths of the plugin records after the fixture's CPU plugin, in order.
  static std::vector<std::string> attempted() {
    std::vector<std::string> out;
    for (const auto& p : rt().plugins())
      if (p.path != plugin_test::cpu_plugin()) out.push_back(p.path);
    return out;
  }

  PluginPathEnv env_;
  fs::path tmp_;
};

TEST_F(Loader, SearchOrderIsBuildInstallEnvironmentThenOptions) {
  env_.set("/opt/a::/opt/b");
  singa::LoadOptions o;
  o.plugin_dirs = {"/opt/c", "/opt/d"};
  EXPECT_THAT(rt().search_dirs(o), ElementsAre(kBuildDir, kInstallDir, "/opt/a", "/opt/b", "/opt/c", "/opt/d"));
}

TEST_F(Loader, SearchDirsHonourTheSwitches) {
  env_.set("/opt/a");
  singa::LoadOptions o;
  o.plugin_dirs = {"/opt/c"};
  o.use_env = false;
  EXPECT_THAT(rt().search_dirs(o), ElementsAre(kBuildDir, kInstallDir, "/opt/c"));
  o.use_env = true;
  o.use_default_dirs = false;
  EXPECT_THAT(rt().search_dirs(o), ElementsAre("/opt/a", "/opt/c"));
  env_.unset();
  EXPECT_THAT(rt().search_dirs(o), ElementsAre("/opt/c"));
}

TEST_F(Loader, BuildPluginFolderIsTheBuildTreesPluginsDir) {
  // The test plugins must stay out of the default search.
  EXPECT_THAT(kBuildDir, HasSubstr("/plugins"));
  EXPECT_NE(fs::path(TEST_PLUGIN_DIR).lexically_normal(), fs::path(kBuildDir).lexically_normal());
  EXPECT_TRUE(fs::exists(plugin_test::cpu_plugin()));
}

TEST_F(Loader, EnvironmentFolderComesBeforeOptionFolders) {
  fs::path from_env = dir("env"), from_options = dir("options");
  std::string first = put("good", from_env);
  std::string second = put("good", from_options);
  env_.set(from_env.string());
  auto dirs = load({from_options.string()}, {}, /*use_env=*/true);
  EXPECT_THAT(dirs, ElementsAre(from_env.string(), from_options.string()));

  ASSERT_THAT(attempted(), ElementsAre(first, second));
  EXPECT_TRUE(find_record(first)->loaded) << find_record(first)->error;
  // The same file name in a later folder is not loaded over the first one.
  EXPECT_FALSE(find_record(second)->loaded);
  EXPECT_THAT(find_record(second)->error, HasSubstr("singa_test_good.so"));
  const auto& ks = rt().kernels(plugin_test::kDomain, "TestScale");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->plugin_path, first);
  EXPECT_TRUE(rt().loaded());
}

TEST_F(Loader, ExplicitFilesComeAfterFolders) {
  fs::path folder = dir("folder");
  std::string in_folder = put("good", folder);
  load({folder.string()}, {test_plugin("kernel_error"), test_plugin("new_minor")});
  EXPECT_THAT(attempted(), ElementsAre(in_folder, test_plugin("kernel_error"), test_plugin("new_minor")));
  for (const auto& p : attempted()) EXPECT_TRUE(find_record(p)->loaded) << find_record(p)->error;
}

TEST_F(Loader, OnlySingaSoFilesOfAFolderAndItsSubfoldersAreLoaded) {
  fs::path folder = dir("mixed");
  std::string second = put("new_minor", folder, "singa_b.so");
  std::string first = put("good", folder, "singa_a.so");
  put("kernel_error", folder, "libsinga_other.so");
  put("kernel_error", folder, "singa_other.so.1");
  std::ofstream(folder / "singa_notes.txt") << "not a plugin\n";
  std::string third = put("old_minor", dir("mixed/family"), "singa_c.so");

  load({folder.string()});
  // Name order, whichever folder level the file is in.
  EXPECT_THAT(attempted(), ElementsAre(first, second, third));
  for (const auto& p : attempted()) EXPECT_TRUE(find_record(p)->loaded) << find_record(p)->error;
  EXPECT_TRUE(rt().kernels(plugin_test::kDomain, "CheckedSqrt").empty());
}

TEST_F(Loader, FolderWithBadPluginsLoadsTheGoodOnesAndRecordsWhyTheOthersFailed) {
  load({TEST_PLUGIN_DIR});
  std::map<std::string, const singa::PluginInfo*> by_case;
  for (const auto& p : rt().plugins()) {
    std::string stem = fs::path(p.path).stem().string();
    if (stem.rfind("singa_test_", 0) == 0) by_case[stem.substr(11)] = &p;
  }
  for (const char* name : {"bad_major", "dup_kernel", "good", "init_fails", "init_throws", "kernel_error", "new_minor",
                           "no_symbol", "old_minor"})
    ASSERT_TRUE(by_case.count(name)) << "singa_test_" << name << ".so was not attempted";

  for (const char* ok : {"dup_kernel", "kernel_error", "new_minor", "old_minor"})
    EXPECT_TRUE(by_case[ok]->loaded) << ok << ": " << by_case[ok]->error;
  for (const char* bad : {"bad_major", "good", "init_fails", "init_throws", "no_symbol"}) {
    EXPECT_FALSE(by_case[bad]->loaded) << bad;
    EXPECT_THAT(by_case[bad]->error, StartsWith(by_case[bad]->path));
  }
  // Name order decides a duplicate: dup_kernel sorts before good.
  EXPECT_THAT(by_case["good"]->error, HasSubstr("TestScale"));
  EXPECT_THAT(by_case["good"]->error, HasSubstr(by_case["dup_kernel"]->path));
  EXPECT_EQ(plugin_test::run_unary("TestScale", {3.f}, {}, 5), (std::vector<float>{-3.f}));
  EXPECT_EQ(plugin_test::run_unary("OldMinorOp", {3.f}), (std::vector<float>{4.f}));
}

TEST_F(Loader, UnreadableFilesAndMissingFoldersAreReportedNotFatal) {
  fs::path folder = dir("broken");
  std::ofstream(folder / "singa_broken.so") << "this is not an ELF file\n";
  std::string good = put("good", folder);
  std::string missing_file = (tmp_ / "nowhere" / "singa_missing.so").string();
  env_.set((tmp_ / "no_such_folder").string());

  load({folder.string()}, {missing_file}, /*use_env=*/true);
  const auto* broken = find_record((folder / "singa_broken.so").string());
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->loaded);
  EXPECT_THAT(broken->error, StartsWith(broken->path));
  const auto* missing = find_record(missing_file);
  ASSERT_NE(missing, nullptr);
  EXPECT_FALSE(missing->loaded);
  EXPECT_THAT(missing->error, StartsWith(missing_file));
  EXPECT_TRUE(find_record(good)->loaded) << find_record(good)->error;
  EXPECT_EQ(plugin_test::run_unary("TestScale", {1.f}), (std::vector<float>{2.f}));
}

TEST_F(Loader, LoadPluginRecordsItsResult) {
  auto info = rt().load_plugin(test_plugin("init_fails"));
  ASSERT_EQ(attempted().size(), 1u);
  const auto* rec = find_record(test_plugin("init_fails"));
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->loaded, info.loaded);
  EXPECT_EQ(rec->error, info.error);
}

}  // namespace

// OpenBLAS reads its environment when the first op pack that links it loads:
// load() sets a short thread timeout (its idle workers would otherwise spin
// in sched_yield for ~0.1 s, taking a core from the runtime's pool) and a
// core type, but never overrides what the user set.
TEST_F(Loader, LoadConfiguresOpenBlasUnlessTheUserDid) {
  const char* had = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  const std::optional<std::string> saved = had ? std::optional<std::string>(had) : std::nullopt;
  unsetenv("OPENBLAS_THREAD_TIMEOUT");
  load({});
  ASSERT_NE(std::getenv("OPENBLAS_THREAD_TIMEOUT"), nullptr);
  EXPECT_STREQ(std::getenv("OPENBLAS_THREAD_TIMEOUT"), "4");
  setenv("OPENBLAS_THREAD_TIMEOUT", "12", 1);
  load({});
  EXPECT_STREQ(std::getenv("OPENBLAS_THREAD_TIMEOUT"), "12");
  if (saved) setenv("OPENBLAS_THREAD_TIMEOUT", saved->c_str(), 1);
  else unsetenv("OPENBLAS_THREAD_TIMEOUT");
}
