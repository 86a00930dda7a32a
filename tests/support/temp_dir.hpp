#pragma once
// A per-test scratch directory, removed with everything in it when the object goes away.

#include <ftw.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::testing {

/// Removes `root` and everything under it (symlinks are removed, not followed); errors are
/// ignored. Not std::filesystem::remove_all: PyTorch 2.11's pip libtorch.so exports its own copy,
/// which takes precedence in a process linked with LibTorch and calls through an unresolved
/// PLT slot (a null jump: every runtime test with a TempDir crashed on the GPU machine).
inline void remove_tree(const std::filesystem::path& root) {
  (void)::nftw(
      root.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        (void)std::remove(p);
        return 0;  // go on past what cannot be removed
      },
      64, FTW_DEPTH | FTW_PHYS);
}

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("gparity-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { remove_tree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  /// Writes `content` to `name` inside the directory and returns the full path.
  std::string write(const std::string& name, std::string_view content) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream f(p, std::ios::binary);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

/// The whole content of `path` ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/// The names in `dir`, sorted (what a failed write left behind, say).
inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gparity::testing
