#pragma once
// Monotonic nanoseconds for the runtime's own timings (step time, recorder cost).

#include <chrono>
#include <cstdint>

namespace gparity::runtime {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace gparity::runtime
