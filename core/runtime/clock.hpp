#pragma once
// Monotonic clocks and the median for the runtime's own timings (step time, recorder cost,
// replay runs).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace gparity::runtime {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Milliseconds since `t0` on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// The median (the mean of the middle two for an even count); 0 for no values.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto n = v.size();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2) return *mid;
  return (*std::max_element(v.begin(), mid) + *mid) / 2;
}

}  // namespace gparity::runtime
