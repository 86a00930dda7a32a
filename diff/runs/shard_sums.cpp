#include "diff/runs/shard_sums.hpp"

#include <set>

namespace gparity::diff::runs {

using model::RankTrace;
using nlohmann::json;

std::vector<std::uint32_t> Interner::ids(const model::ParamsRecord& table) {
  const std::lock_guard lock(mu_);
  std::vector<std::uint32_t> out;
  out.reserve(table.params.size());
  for (const auto& p : table.params) {
    const auto [it, inserted] = ids_.try_emplace(p.fqn, static_cast<std::uint32_t>(names_.size()));
    if (inserted) names_.push_back(p.fqn);
    out.push_back(it->second);
  }
  return out;
}

void ShardSums::add(const RankTrace& t, Interner& interner, const CompareOptions& o) {
  const model::ParamsRecord* cached_table = nullptr;
  std::vector<std::uint32_t> ids;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto& s = t.steps[i];
    if ((o.first_step && s.step < *o.first_step) || (o.last_step && s.step > *o.last_step)) continue;
    ++ranks_at_step[s.step];
    const auto* table = t.table_of(i);
    if (table == nullptr) continue;
    if (table != cached_table) {
      ids = interner.ids(*table);
      cached_table = table;
    }
    for (const auto& h : s.hashes) {
      if (!model::is_shard_invariant(h.name) || !category_enabled(category_of(h.name), o)) continue;
      auto& row = sums[h.name][s.step];
      for (std::size_t p = 0; p < h.values.size() && p < ids.size(); ++p) {
        if (!table->params[p].counts) continue;
        if (row.size() <= ids[p]) row.resize(ids[p] + 1, 0);
        row[ids[p]] += h.values[p];
      }
    }
  }
}

void ShardSums::merge(ShardSums&& other) {
  for (auto& [name, steps] : other.sums) {
    auto& mine = sums[name];
    for (auto& [step, row] : steps) {
      auto& m = mine[step];
      if (m.size() < row.size()) m.resize(row.size(), 0);
      for (std::size_t i = 0; i < row.size(); ++i) m[i] += row[i];
    }
  }
  for (const auto& [step, n] : other.ranks_at_step) ranks_at_step[step] += n;
}
void compare_sums(const ShardSums& b, const ShardSums& c, int world_b, int world_c, const Interner& interner,
                  const CompareOptions& o, std::vector<Finding>& findings, std::vector<Check>& checks,
                  json& data) {
  if (b.sums.empty() && c.sums.empty()) return;
  std::optional<std::int64_t> first;
  std::size_t compared = 0;
  std::size_t reported = 0;
  std::vector<std::int64_t> incomplete;
  std::set<std::int64_t> steps_compared;
  for (const auto& [name, steps_b] : b.sums) {
    const auto it = c.sums.find(name);
    if (it == c.sums.end()) continue;
    for (const auto& [step, row_b] : steps_b) {
      const auto sc = it->second.find(step);
      if (sc == it->second.end()) continue;
      const auto nb = b.ranks_at_step.find(step);
      const auto nc = c.ranks_at_step.find(step);
      if (nb == b.ranks_at_step.end() || nc == c.ranks_at_step.end() || nb->second != world_b ||
          nc->second != world_c) {
        if (incomplete.empty() || incomplete.back() != step) incomplete.push_back(step);
        continue;
      }
      ++compared;
      steps_compared.insert(step);
      const auto& row_c = sc->second;
      std::vector<std::string> names;
      for (std::size_t p = 0; p < std::max(row_b.size(), row_c.size()); ++p) {
        const auto vb = p < row_b.size() ? row_b[p] : 0;
        const auto vc = p < row_c.size() ? row_c[p] : 0;
        if (vb != vc) names.push_back(interner.names()[p]);
      }
      if (names.empty()) continue;
      if (!first || step < *first) first = step;
      if (reported++ >= o.max_steps_reported) continue;
      std::string list;
      for (std::size_t k = 0; k < names.size() && k < o.max_params_listed; ++k)
        list += (k ? ", " : "") + names[k];
      if (names.size() > o.max_params_listed) list += ", ...";
      Finding f{Severity::Divergence, "full_tensor_mismatch", {}, "", {{"array", name}, {"params", names}}};
      f.where.step = step;
      f.where.parameter = names.front();
      f.message = "full tensors differ (" + name + " summed over ranks): " + std::to_string(names.size()) +
                  " parameter(s): " + list;
      findings.push_back(std::move(f));
    }
  }
  if (!incomplete.empty()) {
    Finding f{Severity::Warning, "full_tensor_incomplete", {}, "", {{"steps", incomplete}}};
    f.message = "full-tensor comparison skipped at steps " + step_ranges(incomplete) +
                ": not every rank recorded them";
    findings.push_back(std::move(f));
  }
  Check ch{"weights (full tensors)", std::nullopt, Check::Outcome::Pass, ""};
  if (compared == 0) {
    ch.outcome = Check::Outcome::Skipped;
    ch.message = "no step with shard-invariant hashes from every rank of both runs";
  } else if (first) {
    ch.outcome = Check::Outcome::Fail;
    ch.message = "first divergence at step " + std::to_string(*first);
  } else {
    ch.message = std::to_string(compared) + " (array, step) sums compared, all equal";
  }
  checks.push_back(ch);
  data = {{"compared", compared}, {"steps_compared", steps_compared.size()}};
  data["parameters_compared"] = compared == 0 ? 0 : interner.names().size();
  data["first_divergent_step"] = first ? json(*first) : json(nullptr);
}

}  // namespace gparity::diff::runs
