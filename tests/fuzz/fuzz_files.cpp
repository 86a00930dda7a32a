#include "tests/fuzz/fuzz_files.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

namespace gparity::fuzz {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fuzz scratch: %s\n", what.c_str());
  std::abort();
}

void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir(), ec);
}

}  // namespace

const std::string& scratch_dir() {
  // Never destroyed (reachable, so no leak report): remove_scratch runs at exit and reads it.
  static const std::string* const dir = [] {
    std::error_code ec;
    const auto base = std::filesystem::temp_directory_path(ec);
    std::string pattern = (ec ? std::filesystem::path("/tmp") : base) / "gparity-fuzz-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) die("cannot create a folder like " + pattern);
    auto* made = new std::string(buf.data());
    std::atexit(remove_scratch);
    return made;
  }();
  return *dir;
}

std::string write_scratch(std::string_view name, std::span<const std::uint8_t> bytes) {
  const std::string path = scratch_dir() + "/" + std::string(name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) die("cannot open " + path);
  const bool written = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !written) die("cannot write " + path);
  return path;
}

std::string source_file(std::string_view relative) {
  const char* root = std::getenv("GPARITY_SOURCE_DIR");
  return std::string(root != nullptr && *root != '\0' ? root : GPARITY_ROOT) + "/" + std::string(relative);
}

std::string copy_to_scratch(std::string_view name, const std::string& from) {
  std::ifstream in(from, std::ios::binary);
  if (!in) die("cannot read " + from);
  const std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return write_scratch(name, std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
}

}  // namespace gparity::fuzz
