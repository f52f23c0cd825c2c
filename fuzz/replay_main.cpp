// Runs a fuzz target's LLVMFuzzerTestOneInput over files without libFuzzer,
// so that the normal build replays the saved crashing inputs
// (fuzz/regressions/) as a test. Arguments are files or folders (their
// regular files, recursively, sorted). Exit 0 when every input ran; a regression shows up
// as a crash, an abort or a sanitizer report.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      // Symlinks are skipped: a corpus may hold links that point out of it on purpose.
      for (const auto& e : fs::recursive_directory_iterator(argv[i]))
        if (!e.is_symlink() && e.is_regular_file()) files.push_back(e.path().string());
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.push_back(argv[i]);
    } else {
      std::cerr << "replay: " << argv[i] << ": no such file or folder\n";
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "replay: no input files\n";
    return 2;
  }
  LLVMFuzzerInitialize(&argc, &argv);
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cout << "replay " << f << " (" << bytes.size() << " bytes)" << std::endl;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << "replayed " << files.size() << " inputs" << std::endl;
  return 0;
}
