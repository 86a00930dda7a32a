#pragma once
// How many GPUs a test's child processes may use, without initialising CUDA in the test process
// (the runs under test are child processes that must own their devices): the /dev/nvidiaN nodes,
// capped by CUDA_VISIBLE_DEVICES. Counted once.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace gparity::testing {

inline int visible_gpus() {
  static const int n = [] {
    int count = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev", ec)) {
      const auto name = e.path().filename().string();
      if (name.size() > 6 && name.starts_with("nvidia") &&
          std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
        ++count;
    }
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr)
      count = std::min(count, *v ? static_cast<int>(std::count(v, v + std::strlen(v), ',')) + 1 : 0);
    return count;
  }();
  return n;
}

}  // namespace gparity::testing
