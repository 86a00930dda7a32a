#include "diff/report/ranges_text.hpp"

#include <algorithm>

namespace gparity::diff {

std::string ranges_text(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size();) {
    std::size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(values[i]);
    if (j > i) out += "-" + std::to_string(values[j]);
    i = j + 1;
  }
  return out;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::vector<std::int64_t> v(ranks.begin(), ranks.end());
  std::sort(v.begin(), v.end());
  return ranges_text(v);
}

}  // namespace gparity::diff
