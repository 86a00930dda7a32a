#pragma once
// The whole of a file, byte for byte, as a string: what a command wrote, or a test input to edit.
// One helper for every suite (their files share a translation unit in the unity build).

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace gparity::testing {

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace gparity::testing
