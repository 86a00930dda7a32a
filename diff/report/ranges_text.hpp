#pragma once
// Sorted integers as the reports print them: runs of consecutive values as ranges, "0-3,5,7-8".
// One formatter for steps and ranks in every report (compare, the evidence rule, lost nodes).

#include <cstdint>
#include <string>
#include <vector>

namespace gparity::diff {

/// `values` ascending: "1-3,7" ("" when empty).
std::string ranges_text(const std::vector<std::int64_t>& values);
/// Ranks in any order (sorted here): "0-3,5".
std::string rank_ranges(const std::vector<int>& ranks);

}  // namespace gparity::diff
