#pragma once
// A per-test scratch directory, removed with everything in it when the object goes away.

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

namespace gparity::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("gparity-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
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

}  // namespace gparity::testing
