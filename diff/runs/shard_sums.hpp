#pragma once
// Full-tensor comparison through shard-invariant hashes (internal to diff/runs): every rank adds
// its "*.shard" arrays into one sum per (array, step, parameter); parameter names are interned
// across workers so the sums of every rank line up. compare_sums then compares the two runs'
// sums at the steps every rank of both runs recorded.

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "diff/report/finding.hpp"
#include "diff/runs/run_compare.hpp"
#include "diff/runs/run_values.hpp"

namespace gparity::diff::runs {

/// Interns parameter names across workers so shard sums from every rank line up.
class Interner {
 public:
  /// The id of every parameter of `table`, in table order (thread-safe).
  std::vector<std::uint32_t> ids(const model::ParamsRecord& table);
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::string> names_;
};

/// Per run: array name -> step -> sum per interned parameter; and which ranks reported a step.
struct ShardSums {
  std::map<std::string, std::map<std::int64_t, std::vector<std::uint64_t>>> sums;
  std::map<std::int64_t, int> ranks_at_step;
  std::map<std::uint32_t, std::string> dtypes;  // for reports

  void add(const model::RankTrace& t, Interner& interner, const CompareOptions& o);
  void merge(ShardSums&& other);
};

/// Full-tensor comparison through shard-invariant sums: findings, one check, and `data`
/// ({compared, steps_compared, parameters_compared, first_divergent_step}; null when neither run
/// has shard-invariant arrays).
void compare_sums(const ShardSums& b, const ShardSums& c, int world_b, int world_c, const Interner& interner,
                  const CompareOptions& o, std::vector<Finding>& findings, std::vector<Check>& checks,
                  nlohmann::json& data);

}  // namespace gparity::diff::runs
