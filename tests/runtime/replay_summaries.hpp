#pragma once
// The --json summary line that each rank of `gparity replay` prints, by rank (lines that are not
// a rank's JSON object are skipped).

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace gparity::testing {

inline std::map<int, nlohmann::json> replay_summaries(const std::string& out) {
  std::map<int, nlohmann::json> by_rank;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("rank")) by_rank[j["rank"].get<int>()] = j;
  }
  return by_rank;
}

}  // namespace gparity::testing
