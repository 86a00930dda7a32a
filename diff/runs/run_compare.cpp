#include "diff/runs/run_compare.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "core/model/base/input_error.hpp"
#include "diff/report/evidence.hpp"
#include "diff/collectives/nccl_rings.hpp"
#include "diff/replay/node_compare.hpp"
#include "diff/runs/lost_nodes.hpp"
#include "hash/xxh3.hpp"

namespace gparity::diff {
namespace {

using model::RankTrace;
using model::RunSource;
using model::StepRecord;
using model::TraceScalar;
using nlohmann::json;

std::string fmt_double(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

std::string bits_text(const TraceScalar& s) {
  const auto hex = hash::to_hex(s.bits);
  return "0x" + hex.substr(16 - 2 * model::dtype_size(s.dtype));
}

json scalar_json(const TraceScalar& s) {
  json j = {{"bits", bits_text(s)}, {"dtype", std::string(model::dtype_name(s.dtype))}};
  j["value"] = std::isfinite(s.value) ? json(s.value) : json(fmt_double(s.value));
  return j;
}

/// Steps as sorted ranges: "1-3,7".
std::string step_ranges(const std::vector<std::int64_t>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(steps[i]);
    if (j > i) out += "-" + std::to_string(steps[j]);
    i = j + 1;
  }
  return out;
}

enum class Category : std::uint8_t { Weights, Grads, Optimizer, Other };

Category category_of(std::string_view array) {
  if (array.starts_with("param.")) return Category::Weights;
  if (array.starts_with("grad.")) return Category::Grads;
  if (array.starts_with("optim.")) return Category::Optimizer;
  return Category::Other;
}

const char* category_name(Category c) {
  switch (c) {
    case Category::Weights: return "weights";
    case Category::Grads: return "grads";
    case Category::Optimizer: return "optimizer";
    case Category::Other: return "other hashes";
  }
  return "other";
}

bool category_enabled(Category c, const CompareOptions& o) {
  switch (c) {
    case Category::Weights: return o.weights;
    case Category::Grads: return o.grads;
    case Category::Optimizer: return o.optimizer;
    case Category::Other: return o.weights;
  }
  return true;
}

/// Interns parameter names across workers so shard sums from every rank line up.
class Interner {
 public:
  std::vector<std::uint32_t> ids(const model::ParamsRecord& table) {
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

  void add(const RankTrace& t, Interner& interner, const CompareOptions& o) {
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

  void merge(ShardSums&& other) {
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
};

struct RankResult {
  std::vector<Finding> findings;
  std::vector<Check> checks;
  json data = json::object();
  std::optional<std::int64_t> first_divergence;
  bool compared = false;
  std::optional<model::DeviceMemoryPeaks> memory_b, memory_c;  // "device_memory" events, if any
  std::optional<NodeRankResult> nodes;  // replay runs: node records, classified across ranks later
  // What was compared, for "nothing compared" and gate requirements.
  std::size_t values_compared = 0;  // scalar and hash-array comparisons
  std::size_t steps_compared = 0;
  std::size_t params_compared = 0;
};

/// What one rank of one run holds as evidence, gathered while it is loaded.
struct RankEvidence {
  bool present = false;
  std::vector<std::int64_t> steps;  // recorded, inside the step window, ascending
  std::vector<model::EventRecord> failures;
  std::size_t nodes = 0;   // replay node records
  std::size_t params = 0;  // parameters of its largest params table
  [[nodiscard]] std::size_t items() const noexcept { return steps.size() + nodes; }
};

/// Peak reserved device memory, candidate over baseline, per rank that has both (CUDA-graph
/// runs against eager ones: docs/cuda-graphs.md). Null when no rank has both.
json memory_ratio(const std::vector<RankResult>& results) {
  json ranks = json::array();
  double worst = 0;
  for (std::size_t r = 0; r < results.size(); ++r) {
    const auto& b = results[r].memory_b;
    const auto& c = results[r].memory_c;
    if (!b || !c || b->peak_reserved <= 0) continue;
    const double ratio = static_cast<double>(c->peak_reserved) / static_cast<double>(b->peak_reserved);
    worst = std::max(worst, ratio);
    ranks.push_back({{"rank", r},
                     {"baseline_mode", b->mode},
                     {"candidate_mode", c->mode},
                     {"baseline_peak_reserved", b->peak_reserved},
                     {"candidate_peak_reserved", c->peak_reserved},
                     {"baseline_peak_allocated", b->peak_allocated},
                     {"candidate_peak_allocated", c->peak_allocated},
                     {"reserved_ratio", ratio}});
  }
  if (ranks.empty()) return nullptr;
  return {{"ranks", ranks}, {"max_reserved_ratio", worst}};
}

Severity issue_severity(model::TraceIssue::Kind k) {
  switch (k) {
    case model::TraceIssue::Kind::TruncatedTail: return Severity::Warning;
    case model::TraceIssue::Kind::Note: return Severity::Info;
    case model::TraceIssue::Kind::MissingFile: return Severity::Incomplete;  // a missing rank
    default: return Severity::Error;
  }
}

const char* issue_kind(model::TraceIssue::Kind k) {
  switch (k) {
    case model::TraceIssue::Kind::TruncatedTail: return "truncated_tail";
    case model::TraceIssue::Kind::CorruptLine: return "corrupt_line";
    case model::TraceIssue::Kind::MissingFile: return "missing_rank_file";
    case model::TraceIssue::Kind::Note: return "note";
  }
  return "issue";
}

Finding issue_finding(const model::TraceIssue& i, const char* which, std::optional<int> rank) {
  Finding f;
  f.severity = issue_severity(i.kind);
  f.kind = issue_kind(i.kind);
  f.where.source = i.source;
  f.where.line = i.line;
  f.where.rank = rank;
  f.message = std::string(which) + ": " + i.problem;
  return f;
}

/// Parameter alignment of two params tables (by name, in baseline order).
struct Alignment {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  bool identical = false;
  std::vector<Finding> problems;
};

Alignment align(const model::ParamsRecord* b, const model::ParamsRecord* c, int rank) {
  Alignment a;
  if (b == nullptr || c == nullptr) return a;
  a.identical = b->params.size() == c->params.size();
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < c->params.size(); ++i) index.emplace(c->params[i].fqn, i);
  std::vector<std::string> only_b;
  std::vector<std::string> only_c;
  for (std::size_t i = 0; i < b->params.size(); ++i) {
    const auto& pb = b->params[i];
    const auto it = index.find(pb.fqn);
    if (it == index.end()) {
      only_b.push_back(pb.fqn);
      a.identical = false;
      continue;
    }
    a.identical = a.identical && it->second == i;
    const auto& pc = c->params[it->second];
    if (pb.dtype != pc.dtype || pb.global_shape != pc.global_shape) {
      Finding f{Severity::Divergence, "param_meta_differs", {}, "", json::object()};
      f.where.rank = rank;
      f.where.parameter = pb.fqn;
      f.message = "parameter " + pb.fqn + " is " + std::string(model::dtype_name(pb.dtype)) + " " +
                  json(pb.global_shape).dump() + " in baseline but " +
                  std::string(model::dtype_name(pc.dtype)) + " " + json(pc.global_shape).dump() +
                  " in candidate";
      a.problems.push_back(std::move(f));
      a.identical = false;
    }
    a.pairs.emplace_back(i, it->second);
  }
  std::unordered_map<std::string_view, bool> in_b;
  for (const auto& p : b->params) in_b.emplace(p.fqn, true);
  for (const auto& p : c->params) {
    if (!in_b.contains(p.fqn)) only_c.push_back(p.fqn);
  }
  const auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < 10; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 10) s += ", ... (" + std::to_string(v.size()) + " in all)";
    return s;
  };
  if (!only_b.empty()) {
    Finding f{Severity::Divergence, "params_only_in_baseline", {}, "", {{"params", only_b}}};
    f.where.rank = rank;
    f.message = std::to_string(only_b.size()) + " parameter(s) only in baseline: " + list(only_b);
    a.problems.push_back(std::move(f));
  }
  if (!only_c.empty()) {
    Finding f{Severity::Divergence, "params_only_in_candidate", {}, "", {{"params", only_c}}};
    f.where.rank = rank;
    f.message = std::to_string(only_c.size()) + " parameter(s) only in candidate: " + list(only_c);
    a.problems.push_back(std::move(f));
  }
  return a;
}

std::map<std::int64_t, std::size_t> step_index(const RankTrace& t, const CompareOptions& o) {
  std::map<std::int64_t, std::size_t> m;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto s = t.steps[i].step;
    if ((o.first_step && s < *o.first_step) || (o.last_step && s > *o.last_step)) continue;
    m[s] = i;  // a step written twice (a restart): the later one counts
  }
  return m;
}

struct ScalarTrack {
  const char* name;
  bool enabled;
  std::optional<std::int64_t> first;
  std::size_t compared = 0;
  bool missing_noted = false;
  // Recorded at some step of each run: a hole at one step is then lost data, not a different
  // recorder configuration.
  bool in_both_runs = false;
};

bool records_scalar(const RankTrace& t, bool loss) {
  return std::any_of(t.steps.begin(), t.steps.end(), [loss](const StepRecord& s) {
    return loss ? s.loss.has_value() : s.grad_norm.has_value();
  });
}

std::string scalar_message(const char* name, const TraceScalar& b, const TraceScalar& c,
                           const ScalarDiff& d) {
  std::string m = std::string(name) + " differs: baseline " + fmt_double(b.value) + " (" + bits_text(b) +
                  ") vs candidate " + fmt_double(c.value) + " (" + bits_text(c) + ")";
  if (d.dtype_differs) {
    m += "; dtypes differ (" + std::string(model::dtype_name(b.dtype)) + " vs " +
         std::string(model::dtype_name(c.dtype)) + ")";
  }
  if (d.ulp) m += ", " + std::to_string(*d.ulp) + " ulp";
  if (d.rel) m += ", rel diff " + fmt_double(*d.rel);
  return m;
}

json scalar_values(const TraceScalar& b, const TraceScalar& c, const ScalarDiff& d) {
  json j = {{"baseline", scalar_json(b)}, {"candidate", scalar_json(c)}, {"bits_equal", d.bits_equal}};
  j["ulp"] = d.ulp ? json(*d.ulp) : json(nullptr);
  j["rel_diff"] = d.rel ? json(*d.rel) : json(nullptr);
  return j;
}

/// Compares one rank of both runs. `hashes` false: scalars only (layouts differ).
RankResult compare_rank(const RankTrace& b, const RankTrace& c, int rank, bool hashes,
                        const CompareOptions& o) {
  RankResult r;
  r.compared = true;
  const auto bi = step_index(b, o);
  const auto ci = step_index(c, o);
  std::vector<std::int64_t> only_b;
  std::vector<std::int64_t> only_c;
  for (const auto& [s, i] : bi) {
    if (!ci.contains(s)) only_b.push_back(s);
  }
  for (const auto& [s, i] : ci) {
    if (!bi.contains(s)) only_c.push_back(s);
  }
  if (!only_b.empty()) {
    Finding f{Severity::Divergence, "missing_steps", {}, "", {{"steps", only_b}}};
    f.where.rank = rank;
    f.message = std::string(only_b.size() == 1 ? "step " : "steps ") + step_ranges(only_b) +
                " in baseline but missing in candidate";
    r.findings.push_back(std::move(f));
  }
  if (!only_c.empty()) {
    Finding f{Severity::Divergence, "extra_steps", {}, "", {{"steps", only_c}}};
    f.where.rank = rank;
    f.message = std::string(only_c.size() == 1 ? "step " : "steps ") + step_ranges(only_c) +
                " in candidate but not in baseline";
    r.findings.push_back(std::move(f));
  }

  ScalarTrack loss{"loss", o.loss};
  ScalarTrack gn{"grad_norm", o.grad_norm};
  loss.in_both_runs = records_scalar(b, true) && records_scalar(c, true);
  gn.in_both_runs = records_scalar(b, false) && records_scalar(c, false);
  struct ArrayTrack {
    std::optional<std::int64_t> first;
    std::size_t compared = 0;
  };
  std::map<Category, ArrayTrack> categories;
  std::map<std::string, bool> array_only_noted;
  const model::ParamsRecord* last_tb = nullptr;
  const model::ParamsRecord* last_tc = nullptr;
  Alignment al;
  std::size_t steps_compared = 0;
  std::size_t params_compared = 0;
  std::size_t hashes_compared = 0;
  std::size_t steps_with_values = 0;  // steps where some value was compared
  std::size_t divergent_steps = 0;
  std::vector<std::uint8_t> diverging;
  json first_detail = json::object();

  for (const auto& [step, ib] : bi) {
    const auto itc = ci.find(step);
    if (itc == ci.end()) continue;
    const StepRecord& sb = b.steps[ib];
    const StepRecord& sc = c.steps[itc->second];
    ++steps_compared;
    const std::size_t values_before = loss.compared + gn.compared + hashes_compared;
    std::vector<Finding> step_findings;
    bool divergent = false;
    json scalar_state = json::object();

    for (auto* track : {&loss, &gn}) {
      if (!track->enabled) continue;
      const auto& vb = track == &loss ? sb.loss : sb.grad_norm;
      const auto& vc = track == &loss ? sc.loss : sc.grad_norm;
      if (!vb || !vc) {
        if ((vb || vc) && track->in_both_runs) {
          divergent = true;
          if (!track->first) track->first = step;
          Finding f{Severity::Divergence,
                    std::string(track->name) + "_missing_at_step",
                    {},
                    "",
                    {{"recorded_in", vb ? "baseline" : "candidate"}}};
          f.where.rank = rank;
          f.where.step = step;
          f.message = std::string(track->name) + " at step " + std::to_string(step) +
                      " is recorded only in " + (vb ? "baseline" : "candidate") +
                      " (both runs record it at other steps)";
          step_findings.push_back(std::move(f));
          continue;
        }
        if ((vb || vc) && !track->missing_noted) {
          track->missing_noted = true;
          Finding f{Severity::Warning, std::string(track->name) + "_missing", {}, "", json::object()};
          f.where.rank = rank;
          f.where.step = step;
          f.message = std::string(track->name) + " is recorded only in " + (vb ? "baseline" : "candidate") +
                      " (from step " + std::to_string(step) + "): not compared";
          r.findings.push_back(std::move(f));
        }
        continue;
      }
      ++track->compared;
      const auto d = compare_scalar(*vb, *vc, o.tolerance);
      scalar_state[track->name] =
          d.bits_equal ? "bitwise equal" : (d.within ? "within tolerance" : "differs");
      if (d.within) continue;
      divergent = true;
      if (!track->first) track->first = step;
      Finding f{
          Severity::Divergence, std::string(track->name) + "_mismatch", {}, "", scalar_values(*vb, *vc, d)};
      f.where.rank = rank;
      f.where.step = step;
      f.message = scalar_message(track->name, *vb, *vc, d);
      step_findings.push_back(std::move(f));
    }

    if (hashes) {
      const auto* tb = b.table_of(ib);
      const auto* tc = c.table_of(itc->second);
      if (tb != last_tb || tc != last_tc) {
        al = align(tb, tc, rank);
        for (auto& p : al.problems) {
          p.where.step = step;
          r.findings.push_back(std::move(p));
        }
        al.problems.clear();
        last_tb = tb;
        last_tc = tc;
        diverging.assign(tb ? tb->params.size() : 0, 0);
      }
      std::fill(diverging.begin(), diverging.end(), 0);
      std::vector<std::string> arrays_differing;
      for (const auto& hb : sb.hashes) {
        const auto cat = category_of(hb.name);
        if (!category_enabled(cat, o)) continue;
        const auto* hc = sc.find_hashes(hb.name);
        if (hc == nullptr) {
          if (!array_only_noted[hb.name]) {
            array_only_noted[hb.name] = true;
            Finding f{Severity::Warning, "hash_array_only_in_baseline", {}, "", {{"array", hb.name}}};
            f.where.rank = rank;
            f.where.step = step;
            f.message = "hash array " + hb.name + " is recorded only in baseline: not compared";
            r.findings.push_back(std::move(f));
          }
          continue;
        }
        auto& track = categories[cat];
        ++track.compared;
        ++hashes_compared;
        params_compared = std::max(params_compared, al.pairs.size());
        // Fast path: identical tables and identical arrays.
        if (al.identical && hb.values.size() == hc->values.size() &&
            std::memcmp(hb.values.data(), hc->values.data(), hb.values.size() * 8) == 0) {
          continue;
        }
        bool any = false;
        for (const auto& [pb, pc] : al.pairs) {
          if (pb < hb.values.size() && pc < hc->values.size() && hb.values[pb] != hc->values[pc]) {
            diverging[pb] = 1;
            any = true;
          }
        }
        if (any) {
          arrays_differing.push_back(hb.name);
          if (!track.first) track.first = step;
        }
      }
      for (const auto& hc : sc.hashes) {
        if (category_enabled(category_of(hc.name), o) && sb.find_hashes(hc.name) == nullptr &&
            !array_only_noted[hc.name]) {
          array_only_noted[hc.name] = true;
          Finding f{Severity::Warning, "hash_array_only_in_candidate", {}, "", {{"array", hc.name}}};
          f.where.rank = rank;
          f.where.step = step;
          f.message = "hash array " + hc.name + " is recorded only in candidate: not compared";
          r.findings.push_back(std::move(f));
        }
      }
      if (!arrays_differing.empty()) {
        divergent = true;
        std::vector<std::string> names;
        for (std::size_t p = 0; p < diverging.size(); ++p) {
          if (diverging[p]) names.push_back(tb->params[p].fqn);
        }
        std::string first;
        for (std::size_t k = 0; k < names.size() && k < o.max_params_listed; ++k)
          first += (k ? ", " : "") + names[k];
        if (names.size() > o.max_params_listed) first += ", ...";
        Finding f{Severity::Divergence,
                  "param_hash_mismatch",
                  {},
                  "",
                  {{"count", names.size()},
                   {"total", al.pairs.size()},
                   {"params", names},
                   {"arrays", arrays_differing}}};
        f.where.rank = rank;
        f.where.step = step;
        f.where.parameter = names.front();
        std::string arrays;
        for (std::size_t k = 0; k < arrays_differing.size(); ++k)
          arrays += (k ? ", " : "") + arrays_differing[k];
        f.message = std::to_string(names.size()) + " of " + std::to_string(al.pairs.size()) +
                    " parameters differ (" + arrays + "); first in registration order: " + first;
        step_findings.push_back(std::move(f));
      }
    }

    if (loss.compared + gn.compared + hashes_compared > values_before) ++steps_with_values;
    if (!divergent) continue;
    ++divergent_steps;
    if (!r.first_divergence) {
      r.first_divergence = step;
      first_detail = {{"step", step}, {"scalars", scalar_state}};
      for (const auto& f : step_findings) {
        if (f.kind == "param_hash_mismatch") first_detail["params"] = f.values;
      }
    }
    if (divergent_steps <= o.max_steps_reported) {
      for (auto& f : step_findings) r.findings.push_back(std::move(f));
    }
  }
  if (divergent_steps > o.max_steps_reported) {
    Finding f{
        Severity::Info, "more_divergent_steps", {}, "", {{"count", divergent_steps - o.max_steps_reported}}};
    f.where.rank = rank;
    f.message = std::to_string(divergent_steps - o.max_steps_reported) + " more divergent step(s) not listed";
    r.findings.push_back(std::move(f));
  }

  const auto add_check = [&](const std::string& name, std::size_t compared, std::optional<std::int64_t> first,
                             bool enabled) {
    Check ch{name, rank, Check::Outcome::Pass, ""};
    if (!enabled) return;
    if (compared == 0) {
      ch.outcome = Check::Outcome::Skipped;
      ch.message = "not recorded in both runs";
    } else if (first) {
      ch.outcome = Check::Outcome::Fail;
      ch.message = "first divergence at step " + std::to_string(*first);
    } else {
      ch.message = std::to_string(compared) + " comparisons, all equal";
    }
    r.checks.push_back(std::move(ch));
  };
  add_check("loss", loss.compared, loss.first, o.loss);
  add_check("grad_norm", gn.compared, gn.first, o.grad_norm);
  if (hashes) {
    for (const auto cat : {Category::Weights, Category::Grads, Category::Optimizer}) {
      const auto it = categories.find(cat);
      add_check(category_name(cat), it == categories.end() ? 0 : it->second.compared,
                it == categories.end() ? std::nullopt : it->second.first, category_enabled(cat, o));
    }
  }
  if (!only_b.empty() || !only_c.empty()) {
    r.checks.push_back(
        {"steps", rank, Check::Outcome::Fail,
         std::to_string(only_b.size()) + " missing, " + std::to_string(only_c.size()) + " extra"});
  }

  // A step present in one run only is a divergence at that step too.
  for (const auto* missing : {&only_b, &only_c}) {
    if (!missing->empty() && (!r.first_divergence || missing->front() < *r.first_divergence)) {
      r.first_divergence = missing->front();
      first_detail = {{"step", missing->front()}, {"scalars", json::object()}, {"missing_or_extra", true}};
    }
  }
  r.steps_compared = steps_with_values;
  r.params_compared = params_compared;
  r.values_compared = loss.compared + gn.compared;
  for (const auto& [cat, t] : categories) r.values_compared += t.compared;
  r.data = {{"rank", rank}, {"steps_compared", steps_compared}, {"divergent_steps", divergent_steps}};
  r.data["values_compared"] = r.values_compared;
  r.data["parameters_compared"] = params_compared;
  r.data["first_divergent_step"] = r.first_divergence ? json(*r.first_divergence) : json(nullptr);
  r.data["loss_first_divergent_step"] = loss.first ? json(*loss.first) : json(nullptr);
  r.data["grad_norm_first_divergent_step"] = gn.first ? json(*gn.first) : json(nullptr);
  for (const auto& [cat, t] : categories) {
    r.data[std::string(category_name(cat)) + "_first_divergent_step"] =
        t.first ? json(*t.first) : json(nullptr);
  }
  r.data["first_divergence"] = first_detail;
  r.data["missing_steps"] = only_b;
  r.data["extra_steps"] = only_c;
  return r;
}

/// Full-tensor comparison through shard-invariant sums.
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

/// What a rank of a run holds: its steps inside the window and its failure events.
RankEvidence gather_evidence(const RankTrace& t, const CompareOptions& o) {
  RankEvidence e;
  e.present = true;
  for (const auto& [step, i] : step_index(t, o)) e.steps.push_back(step);
  e.nodes = t.nodes.size();
  for (const auto& table : t.params_tables) e.params = std::max(e.params, table.params.size());
  for (const auto& ev : t.events) {
    // A failure after the last step compared does not touch the evidence compared.
    if (ev.kind == "failure" && !(ev.step && o.last_step && *ev.step > *o.last_step))
      e.failures.push_back(ev);
  }
  return e;
}

// An untrusted manifest's step count must not cost unbounded memory.
constexpr std::int64_t kMaxDeclaredSteps = 10'000'000;

/// Steps a run declares, sorted: the manifest's 1..steps (inside the window) and every step any
/// of its ranks recorded (formats with no manifest declare only the latter).
std::vector<std::int64_t> declared_steps(const RunSource& run, const std::vector<RankEvidence>& ev,
                                         const CompareOptions& o) {
  std::vector<std::int64_t> d;
  for (const auto& e : ev) d.insert(d.end(), e.steps.begin(), e.steps.end());
  if (run.manifest.steps) {
    const std::int64_t lo = std::max<std::int64_t>(1, o.first_step.value_or(1));
    const std::int64_t hi = std::min(*run.manifest.steps, o.last_step.value_or(*run.manifest.steps));
    for (std::int64_t s = lo; s <= hi && s - lo < kMaxDeclaredSteps; ++s) d.push_back(s);
  }
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

/// Missing evidence of one run: failure events, ranks with no trace, declared steps not recorded.
struct RunEvidence {
  std::vector<Finding> findings;  // all Severity::Incomplete
  std::set<int> incomplete_ranks;
  std::size_t steps_recorded = 0;  // step records over all ranks, inside the window
  json data = json::object();
};

/// Across nodes (diff/runs/lost_nodes.hpp): a node whose every rank was lost is named with its
/// ranks, ahead of the ranks' own findings.
void add_lost_nodes(const RunSource& run, const std::string& which, const std::vector<RankEvidence>& ev,
                    RunEvidence& out) {
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(run.manifest.world_size));
  for (std::size_t r = 0; r < outcomes.size() && r < ev.size(); ++r) {
    outcomes[r] = {ev[r].present, out.incomplete_ranks.contains(static_cast<int>(r)), !ev[r].failures.empty(),
                   ev[r].steps.empty() ? std::nullopt : std::optional(ev[r].steps.back())};
  }
  for (std::size_t r = ev.size(); r < outcomes.size(); ++r) outcomes[r].incomplete = true;
  std::vector<Finding> lost;
  for (const auto& n : lost_nodes(run.manifest.ranks, outcomes)) {
    Finding f{Severity::Incomplete,
              "node_lost",
              {},
              "",
              {{"run", which}, {"node", n.node}, {"host", n.host}, {"ranks", n.ranks}}};
    f.where.rank = n.ranks.front();
    f.message = lost_node_message(which, n);
    lost.push_back(std::move(f));
  }
  out.findings.insert(out.findings.begin(), lost.begin(), lost.end());
}

RunEvidence assess_evidence(const RunSource& run, const std::string& which,
                            const std::vector<RankEvidence>& ev, const CompareOptions& o) {
  RunEvidence out;
  const auto declared = declared_steps(run, ev, o);
  const std::string declared_by =
      run.manifest.steps ? "the manifest declares " + std::to_string(*run.manifest.steps) + " steps"
                         : "other ranks of the run recorded them";
  const int world = run.manifest.world_size;
  const auto listed = [&run](int r) {
    return std::any_of(run.ranks.begin(), run.ranks.end(),
                       [r](const model::RankEntry& e) { return e.rank == r; });
  };
  json failures = json::array();
  for (int r = 0; r < world; ++r) {
    const RankEvidence none;
    const auto& e = static_cast<std::size_t>(r) < ev.size() ? ev[static_cast<std::size_t>(r)] : none;
    const std::string who = which + " rank " + std::to_string(r);
    if (!e.present) {
      out.incomplete_ranks.insert(r);
      // A rank entry that is not present was reported when the run was opened (its file path).
      if (listed(r)) continue;
      Finding f{Severity::Incomplete, "missing_rank", {}, "", {{"run", which}}};
      f.where.rank = r;
      f.message = who + " recorded nothing (world size " + std::to_string(world) + ")";
      out.findings.push_back(std::move(f));
      continue;
    }
    out.steps_recorded += e.steps.size();
    for (const auto& fe : e.failures) {
      Finding f{Severity::Incomplete, "rank_failure", {}, "", {{"run", which}, {"data", fe.data}}};
      f.where.rank = r;
      f.where.step = fe.step;
      f.message = who + " failed" + (fe.step ? " at step " + std::to_string(*fe.step) : std::string()) +
                  ": " + (fe.message.empty() ? "(no message)" : fe.message);
      out.findings.push_back(std::move(f));
      out.incomplete_ranks.insert(r);
      failures.push_back({{"run", which},
                          {"rank", r},
                          {"step", fe.step ? json(*fe.step) : json(nullptr)},
                          {"message", fe.message}});
    }
    std::vector<std::int64_t> missing;
    std::set_difference(declared.begin(), declared.end(), e.steps.begin(), e.steps.end(),
                        std::back_inserter(missing));
    if (missing.empty()) continue;
    out.incomplete_ranks.insert(r);
    const bool tail = e.steps.empty() || missing.front() > e.steps.back();
    Finding f{Severity::Incomplete,
              "steps_not_recorded",
              {},
              "",
              {{"run", which}, {"steps", step_ranges(missing)}, {"count", missing.size()}}};
    f.where.rank = r;
    f.where.step = missing.front();
    const std::string steps = std::string(missing.size() == 1 ? "step " : "steps ") + step_ranges(missing);
    if (e.steps.empty()) {
      f.message = who + " recorded no step: " + steps + " missing (" + declared_by + ")";
    } else if (tail) {
      f.message = who + " stopped after step " + std::to_string(e.steps.back()) + ": " + steps +
                  " missing (" + declared_by + ")";
    } else {
      f.message = who + " did not record " + steps + " (" + declared_by + ")";
    }
    if (tail && e.failures.empty()) f.message += "; no failure event of its own: killed or lost";
    out.findings.push_back(std::move(f));
  }
  add_lost_nodes(run, which, ev, out);
  out.data = {
      {"world_size", world},
      {"declared_steps", step_ranges(declared)},
      {"manifest_steps", run.manifest.steps ? json(*run.manifest.steps) : json(nullptr)},
      {"incomplete_ranks", std::vector<int>(out.incomplete_ranks.begin(), out.incomplete_ranks.end())},
      {"failures", failures},
      {"complete", out.findings.empty() && out.incomplete_ranks.empty()}};
  return out;
}

/// One run's side of the evidence: step and node records over its ranks, inside the window.
EvidenceSide side_evidence(const RunSource& run, const char* role, const std::vector<RankEvidence>& ev) {
  EvidenceSide s;
  s.role = role;
  s.input = run.path;
  s.tried = {std::string(model::run_format_name(run.format))};
  std::set<std::int64_t> steps;
  std::size_t nodes = 0;
  std::size_t params = 0;
  std::size_t ranks = 0;
  for (const auto& e : ev) {
    s.items += e.items();
    ranks += e.items() > 0 ? 1 : 0;
    steps.insert(e.steps.begin(), e.steps.end());
    nodes += e.nodes;
    params = std::max(params, e.params);
  }
  if (!steps.empty() || nodes == 0)
    s.detail = std::to_string(steps.size()) + " steps x " + std::to_string(params) + " parameters";
  if (nodes > 0) s.detail += (s.detail.empty() ? "" : ", ") + std::to_string(nodes) + " node records";
  s.detail += " on " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  if (s.items == 0) s.nothing = "recorded no step";
  return s;
}

/// Both runs' evidence; per rank when both runs have the same layout (a rank the engine already
/// named as incomplete is marked reported).
Evidence run_evidence(const RunSource& base, const std::vector<RankEvidence>& ev_b, const RunSource& cand,
                      const std::vector<RankEvidence>& ev_c, const std::set<int>& reported, bool same_layout,
                      const CompareOptions& o) {
  Evidence e;
  const auto nodes = [](const std::vector<RankEvidence>& ev) {
    std::size_t steps = 0;
    std::size_t n = 0;
    for (const auto& r : ev) {
      steps += r.steps.size();
      n += r.nodes;
    }
    return steps == 0 && n > 0;
  };
  e.what = nodes(ev_b) || nodes(ev_c) ? "node records" : "steps";
  e.sides = {side_evidence(base, "baseline", ev_b), side_evidence(cand, "candidate", ev_c)};
  e.allow_incomplete = o.allow_incomplete;
  if (same_layout) {
    const RankEvidence none;
    const auto at = [&none](const std::vector<RankEvidence>& ev, int r) -> const RankEvidence& {
      return static_cast<std::size_t>(r) < ev.size() ? ev[static_cast<std::size_t>(r)] : none;
    };
    for (int r = 0; r < base.manifest.world_size; ++r)
      e.ranks.push_back({r, at(ev_b, r).items(), at(ev_c, r).items(), "", "", reported.contains(r)});
  }
  return e;
}

/// The process groups a replay run recorded (manifest "replay.groups"); empty when it has none.
causality::GroupTable replay_groups(const RunSource& run, std::vector<Finding>& problems) {
  const auto r = run.manifest.extra.find("replay");
  if (r == run.manifest.extra.end() || !r->is_object() || !r->contains("groups")) return {};
  try {
    return causality::group_table_from_json(r->at("groups"));
  } catch (const std::invalid_argument& e) {
    problems.push_back({Severity::Error,
                        "replay_groups_unreadable",
                        {},
                        run.path + "/manifest.json: replay.groups: " + e.what(),
                        json::object()});
    return {};
  }
}

/// Node records of every rank, classified across ranks (diff/causality): sets each rank's node
/// checks and summary; returns the findings in report order: what the causal order lacks, each
/// rank's node problems, then the divergences where a cause starts (origins, every rank), then
/// the received and propagated ones.
std::vector<Finding> classify_nodes(std::vector<RankResult>& results, const RunSource& base,
                                    const RunSource& cand) {
  std::vector<NodeRankResult> nodes;
  std::vector<std::size_t> slot;
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!results[r].nodes) continue;
    nodes.push_back(std::move(*results[r].nodes));
    results[r].nodes.reset();
    slot.push_back(r);
  }
  if (nodes.empty()) return {};
  std::vector<Finding> out;
  const auto groups_b = replay_groups(base, out);
  const auto groups_c = replay_groups(cand, out);
  for (auto& f : classify_node_ranks(nodes, groups_b, groups_c)) out.push_back(std::move(f));
  std::vector<Finding> origins, rest;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    auto& res = results[slot[k]];
    std::vector<Finding> fs;
    node_findings(nodes[k], fs, res.checks);
    res.data["nodes"] = node_summary(nodes[k]);
    res.data["nodes_summary"] = node_summary_line(nodes[k]);
    for (auto& f : fs) {
      if (f.kind != "node_divergence" && f.kind != "node_origin") {
        out.push_back(std::move(f));
      } else {
        (f.values.value("cause", "") == "origin" ? origins : rest).push_back(std::move(f));
      }
    }
  }
  for (auto* part : {&origins, &rest})
    for (auto& f : *part) out.push_back(std::move(f));
  return out;
}

}  // namespace

std::string Tolerance::describe() const {
  if (bitwise()) return "bitwise (exact bit patterns)";
  std::string s = "tolerance for loss and grad_norm:";
  if (ulp) s += " ulp <= " + std::to_string(*ulp);
  if (rtol || atol) {
    if (ulp) s += " or";
    s += " |a-b| <= " + fmt_double(atol.value_or(0)) + " + " + fmt_double(rtol.value_or(0)) +
         " * max(|a|,|b|)";
  }
  return s + "; hashes exact";
}

std::optional<std::uint64_t> ulp_distance(std::uint64_t a, std::uint64_t b, model::DType dtype) noexcept {
  int width = 0;
  switch (dtype) {
    case model::DType::F64: width = 64; break;
    case model::DType::F32: width = 32; break;
    case model::DType::F16:
    case model::DType::BF16: width = 16; break;
    default: return std::nullopt;
  }
  const TraceScalar sa = TraceScalar::from_bits(a, dtype);
  const TraceScalar sb = TraceScalar::from_bits(b, dtype);
  if (std::isnan(sa.value) || std::isnan(sb.value)) return std::nullopt;
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  // Map to an unsigned order: negatives reversed below positives, -0 and +0 adjacent.
  const auto ordered = [&](std::uint64_t x) { return (x & sign) ? (~x & mask) : (x | sign); };
  const auto oa = ordered(sa.bits);
  const auto ob = ordered(sb.bits);
  return oa > ob ? oa - ob : ob - oa;
}

ScalarDiff compare_scalar(const TraceScalar& a, const TraceScalar& b, const Tolerance& tol) {
  ScalarDiff d;
  d.dtype_differs = a.dtype != b.dtype;
  d.bits_equal = !d.dtype_differs && a.bits == b.bits;
  if (!d.dtype_differs) d.ulp = ulp_distance(a.bits, b.bits, a.dtype);
  if (!std::isnan(a.value) && !std::isnan(b.value)) {
    const double m = std::max(std::fabs(a.value), std::fabs(b.value));
    const double diff = std::fabs(a.value - b.value);
    d.rel = m == 0 ? 0.0 : diff / m;
    if (std::isinf(m)) d.rel = a.value == b.value ? 0.0 : INFINITY;
  }
  d.within = d.bits_equal;
  if (!d.within && !tol.bitwise() && !std::isnan(a.value) && !std::isnan(b.value)) {
    if (tol.ulp && d.ulp && *d.ulp <= *tol.ulp) d.within = true;
    if (tol.rtol || tol.atol) {
      const double m = std::max(std::fabs(a.value), std::fabs(b.value));
      if (std::fabs(a.value - b.value) <= tol.atol.value_or(0) + tol.rtol.value_or(0) * m) d.within = true;
    }
  }
  return d;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::vector<std::int64_t> v(ranks.begin(), ranks.end());
  std::sort(v.begin(), v.end());
  return step_ranges(v);
}

int compare_runs(const RunSource& base, const RunSource& cand, const CompareOptions& o,
                 FindingConsumer& out) {
  ReportHeader header{o.title, base.path, cand.path, o.tolerance.describe(), {}};
  header.notes.push_back("baseline: " + std::string(model::run_format_name(base.format)) + ", world size " +
                         std::to_string(base.manifest.world_size));
  header.notes.push_back("candidate: " + std::string(model::run_format_name(cand.format)) + ", world size " +
                         std::to_string(cand.manifest.world_size));
  const bool rounded = base.rounded || cand.rounded;
  if (rounded) {
    header.notes.push_back(
        "values come from rounded console text: equal printed digits cannot prove bitwise parity");
  }
  if (o.allow_incomplete) {
    header.notes.push_back(
        "--allow-incomplete: missing evidence (failures, killed or missing ranks, declared steps not "
        "recorded) is reported but does not fail this comparison");
  }
  const bool same_layout = base.manifest.world_size == cand.manifest.world_size;
  if (!same_layout) {
    header.notes.push_back(
        "world sizes differ: weights are compared on full tensors through shard-invariant "
        "hashes; loss and grad_norm on rank 0 of each run");
  }
  out.begin(header);

  Severity worst = Severity::Info;
  bool divergence = false;
  bool missing_evidence = false;
  std::vector<std::string> missing_lines;  // for the verdict's summary
  const auto emit = [&](const Finding& f) {
    worst = std::max(worst, f.severity);
    divergence = divergence || f.severity == Severity::Divergence;
    if (f.severity == Severity::Incomplete) {
      missing_evidence = true;
      missing_lines.push_back(f.message);
    }
    out.finding(f);
  };
  if (rounded) {
    emit({Severity::Warning,
          "rounded_values",
          {},
          "values are rounded to the printed digits: this comparison "
          "cannot prove bitwise parity (record a gparity trace for that)",
          json::object()});
  }
  if (auto f = nccl_graph_finding(base.manifest, cand.manifest)) emit(*f);
  for (const auto& i : base.issues) emit(issue_finding(i, "baseline", std::nullopt));
  for (const auto& i : cand.issues) emit(issue_finding(i, "candidate", std::nullopt));

  const int max_rank = std::max(base.ranks.empty() ? 0 : base.ranks.back().rank + 1,
                                cand.ranks.empty() ? 0 : cand.ranks.back().rank + 1);
  const auto entry = [](const RunSource& run, int r) -> const model::RankEntry* {
    for (const auto& e : run.ranks) {
      if (e.rank == r && e.present) return &e;
    }
    return nullptr;
  };

  Interner interner;
  std::vector<RankResult> results(static_cast<std::size_t>(max_rank));
  std::vector<std::optional<model::InputError>> errors(static_cast<std::size_t>(max_rank));
  std::vector<RankEvidence> evidence_b(static_cast<std::size_t>(max_rank));
  std::vector<RankEvidence> evidence_c(static_cast<std::size_t>(max_rank));
  std::atomic<int> next{0};
  std::mutex sums_mu;
  ShardSums sums_b;
  ShardSums sums_c;
  const auto worker = [&] {
    ShardSums local_b;
    ShardSums local_c;
    for (int r = next++; r < max_rank; r = next++) {
      try {
        const auto* eb = entry(base, r);
        const auto* ec = entry(cand, r);
        RankTrace tb = eb ? base.load(*eb) : RankTrace{};
        RankTrace tc = ec ? cand.load(*ec) : RankTrace{};
        auto& res = results[static_cast<std::size_t>(r)];
        for (const auto& i : tb.issues) res.findings.push_back(issue_finding(i, "baseline", r));
        for (const auto& i : tc.issues) res.findings.push_back(issue_finding(i, "candidate", r));
        res.memory_b = model::device_memory_peaks(tb.events);
        res.memory_c = model::device_memory_peaks(tc.events);
        if (eb) local_b.add(tb, interner, o);
        if (ec) local_c.add(tc, interner, o);
        if (eb) evidence_b[static_cast<std::size_t>(r)] = gather_evidence(tb, o);
        if (ec) evidence_c[static_cast<std::size_t>(r)] = gather_evidence(tc, o);
        if (eb && ec && (same_layout || r == 0)) {
          auto cmp = compare_rank(tb, tc, r, same_layout, o);
          for (auto& f : cmp.findings) res.findings.push_back(std::move(f));
          res.checks = std::move(cmp.checks);
          res.data = std::move(cmp.data);
          res.first_divergence = cmp.first_divergence;
          res.compared = true;
          res.values_compared = cmp.values_compared;
          res.steps_compared = cmp.steps_compared;
          res.params_compared = cmp.params_compared;
          // Node records of replay runs (diff/replay/node_compare.hpp): first divergent node per graph;
          // their causes are settled across ranks once every rank is compared.
          if (auto nodes = compare_node_records(tb, base.path, tc, cand.path, r); !nodes.empty()) {
            for (const auto& g : nodes.graphs) res.values_compared += g.compared;
            res.nodes = std::move(nodes);
          }
        } else if (same_layout && (eb || ec)) {
          Finding f{Severity::Incomplete, "missing_rank", {}, "", {{"run", eb ? "candidate" : "baseline"}}};
          f.where.rank = r;
          f.message = "rank " + std::to_string(r) + " is missing in " + (eb ? "candidate" : "baseline");
          res.checks.push_back({"rank present", r,
                                o.allow_incomplete ? Check::Outcome::Skipped : Check::Outcome::Fail,
                                f.message + (o.allow_incomplete ? " (allowed by --allow-incomplete)" : "")});
          res.findings.push_back(std::move(f));
        }
      } catch (const model::InputError& e) {
        errors[static_cast<std::size_t>(r)] = e;
      }
    }
    const std::lock_guard lock(sums_mu);
    sums_b.merge(std::move(local_b));
    sums_c.merge(std::move(local_c));
  };
  unsigned n = o.threads ? o.threads : std::max(1U, std::thread::hardware_concurrency());
  n = std::min<unsigned>(n, static_cast<unsigned>(std::max(1, max_rank)));
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
    worker();
  }
  for (const auto& e : errors) {
    if (e) throw *e;
  }

  const auto node_fs = classify_nodes(results, base, cand);

  json rank_data = json::array();
  std::vector<int> identical;
  std::map<std::int64_t, std::vector<int>> diverge_at;
  for (int r = 0; r < max_rank; ++r) {
    auto& res = results[static_cast<std::size_t>(r)];
    for (const auto& f : res.findings) emit(f);
    for (const auto& c : res.checks) out.check(c);
    if (!res.compared) continue;
    rank_data.push_back(res.data);
    if (res.first_divergence) {
      diverge_at[*res.first_divergence].push_back(r);
    } else if (!res.data.contains("nodes") || res.data["nodes"]["divergent"] == 0) {
      identical.push_back(r);
    }
  }

  for (const auto& f : node_fs) emit(f);  // every rank's node findings, origins first

  std::vector<Finding> sum_findings;
  std::vector<Check> sum_checks;
  json full = nullptr;
  compare_sums(sums_b, sums_c, base.manifest.world_size, cand.manifest.world_size, interner, o, sum_findings,
               sum_checks, full);
  for (const auto& f : sum_findings) emit(f);
  for (const auto& c : sum_checks) out.check(c);

  // Missing evidence of each run, judged against what that run declares.
  const auto ev_base = assess_evidence(base, "baseline", evidence_b, o);
  const auto ev_cand = assess_evidence(cand, "candidate", evidence_c, o);
  for (const auto* ev : {&ev_base, &ev_cand}) {
    for (const auto& f : ev->findings) emit(f);
  }
  std::set<int> incomplete_ranks = ev_base.incomplete_ranks;
  incomplete_ranks.insert(ev_cand.incomplete_ranks.begin(), ev_cand.incomplete_ranks.end());
  for (const int r : incomplete_ranks) {
    out.check({"evidence", r, o.allow_incomplete ? Check::Outcome::Skipped : Check::Outcome::Fail,
               o.allow_incomplete ? "incomplete (allowed by --allow-incomplete)"
                                  : "incomplete: a failure, a missing rank or declared steps not recorded"});
  }

  // What was compared: "nothing" is never parity; a gate's minimums.
  std::size_t values = full.is_null() ? 0 : full["compared"].get<std::size_t>();
  std::size_t common_steps = 0;
  std::size_t ranks_compared = 0;
  std::optional<std::size_t> steps_compared;
  std::size_t params_compared = full.is_null() ? 0 : full["parameters_compared"].get<std::size_t>();
  for (const auto& res : results) {
    values += res.values_compared;
    if (res.compared) common_steps += res.data.value("steps_compared", std::size_t{0});
    if (res.values_compared == 0) continue;
    ++ranks_compared;
    steps_compared = std::min(steps_compared.value_or(res.steps_compared), res.steps_compared);
    params_compared = std::max(params_compared, res.params_compared);
  }
  if (!full.is_null() && full["compared"].get<std::size_t>() > 0) {
    // Full tensors are compared only at steps every rank of both runs recorded.
    ranks_compared = std::max<std::size_t>(
        ranks_compared,
        static_cast<std::size_t>(std::min(base.manifest.world_size, cand.manifest.world_size)));
    steps_compared = std::max(steps_compared.value_or(0), full["steps_compared"].get<std::size_t>());
  }
  const bool bad_input = worst == Severity::Error;
  // What each run yielded, for the evidence rule (diff/report/evidence.hpp): nothing is never parity.
  Evidence evidence = run_evidence(base, evidence_b, cand, evidence_c, incomplete_ranks, same_layout, o);
  evidence.compared = values;
  const bool nothing_compared = values == 0 || evidence.sides[0].items == 0 || evidence.sides[1].items == 0;
  if (nothing_compared) {
    if (ev_base.steps_recorded == 0 && ev_cand.steps_recorded == 0) {
      evidence.nothing_why = "neither run recorded a step";
    } else if (ev_base.steps_recorded == 0 || ev_cand.steps_recorded == 0) {
      evidence.nothing_why = std::string("the ") + (ev_base.steps_recorded == 0 ? "baseline" : "candidate") +
                             " recorded no step";
    } else if (common_steps == 0) {
      evidence.nothing_why = "the runs share no rank and step";
    } else {
      evidence.nothing_why =
          "every check was skipped: no value (loss, grad_norm, hashes) is recorded in both runs at a "
          "common rank and step";
    }
    if (o.first_step || o.last_step) evidence.nothing_why += " inside the steps asked for";
    if (missing_evidence) evidence.nothing_why += " (see the missing evidence above)";
  }
  bool requirement_failed = false;
  json requirements = json::object();
  if (o.require.any()) {
    std::vector<std::string> unmet;
    std::vector<std::string> met;
    const auto need = [&](const char* what, std::optional<std::size_t> min, std::size_t got) {
      if (!min) return;
      requirements[what] = {{"required", *min}, {"compared", got}};
      const std::string text =
          std::string(what) + " " + std::to_string(got) + " of at least " + std::to_string(*min);
      (got >= *min ? met : unmet).push_back(text);
    };
    need("steps", o.require.steps, steps_compared.value_or(0));
    need("ranks", o.require.ranks, ranks_compared);
    need("parameters", o.require.parameters, params_compared);
    std::string text;
    for (const auto& u : unmet) text += (text.empty() ? "" : ", ") + u;
    if (!unmet.empty()) {
      requirement_failed = true;
      Finding f{Severity::Incomplete, "requirement_not_met", {}, "", requirements};
      f.message = "less was compared than required: " + text;
      worst = std::max(worst, f.severity);
      out.finding(f);
    }
    for (const auto& m : met) text += (text.empty() ? "" : ", ") + m;
    out.check({"requirements", std::nullopt, unmet.empty() ? Check::Outcome::Pass : Check::Outcome::Fail,
               "compared: " + text});
  }

  Verdict v;
  const auto plural = [](const std::vector<int>& rs) { return rs.size() == 1 ? "rank " : "ranks "; };
  std::string groups;
  if (!identical.empty()) {
    groups = plural(identical) + rank_ranges(identical) + (same_layout ? " identical" : " scalars identical");
  }
  for (const auto& [step, rs] : diverge_at) {
    if (!groups.empty()) groups += "; ";
    groups += plural(rs) + rank_ranges(rs) + (rs.size() == 1 ? " diverges" : " diverge") + " at step " +
              std::to_string(step);
  }
  if (!groups.empty() && !nothing_compared) v.summary.push_back(groups);
  for (const auto& d : rank_data) {
    const auto& first = d["first_divergence"];
    if (first.empty()) continue;
    std::string line = "rank " + std::to_string(d["rank"].get<int>()) + ", step " +
                       std::to_string(first["step"].get<std::int64_t>()) + ":";
    if (first.contains("params")) {
      const auto& p = first["params"];
      line += " " + std::to_string(p["count"].get<std::size_t>()) + " of " +
              std::to_string(p["total"].get<std::size_t>()) + " parameters differ, first " +
              p["params"][0].get<std::string>() + ";";
    }
    for (const auto& [name, state] : first["scalars"].items())
      line += " " + name + " " + state.get<std::string>() + ";";
    line.pop_back();
    v.summary.push_back(line);
  }
  // Node divergences: the ranks where one starts first, then those that received or propagated it.
  for (const bool origin : {true, false}) {
    for (const auto& d : rank_data) {
      if (!d.contains("nodes_summary") || d["nodes_summary"].get<std::string>().empty()) continue;
      const auto& first = d["nodes"]["first"];
      const bool starts = first.is_object() && first.value("cause", "") == "origin";
      if (starts == origin) v.summary.push_back(d["nodes_summary"].get<std::string>());
    }
  }
  if (!full.is_null() && !full["first_divergent_step"].is_null()) {
    v.summary.push_back("full tensors (shard-invariant sums) diverge at step " +
                        std::to_string(full["first_divergent_step"].get<std::int64_t>()));
  }
  const json memory = memory_ratio(results);
  if (!memory.is_null()) {
    const auto& first = memory["ranks"][0];
    char line[256];
    std::snprintf(
        line, sizeof line,
        "peak reserved device memory, candidate (%s) / baseline (%s): %.3fx at most over %zu rank(s)",
        first["candidate_mode"].get<std::string>().c_str(), first["baseline_mode"].get<std::string>().c_str(),
        memory["max_reserved_ratio"].get<double>(), memory["ranks"].size());
    v.summary.push_back(line);
  }
  constexpr std::size_t kMissingListed = 10;
  for (std::size_t i = 0; i < missing_lines.size() && i < kMissingListed; ++i)
    v.summary.push_back("missing evidence: " + missing_lines[i]);
  if (missing_lines.size() > kMissingListed) {
    v.summary.push_back("missing evidence: ... " + std::to_string(missing_lines.size() - kMissingListed) +
                        " more (see the findings)");
  }
  if (missing_evidence && o.allow_incomplete) {
    v.summary.push_back("--allow-incomplete: the missing evidence does not fail this comparison");
  }

  const bool incomplete = requirement_failed || (missing_evidence && !o.allow_incomplete);
  const std::string parity =
      o.tolerance.bitwise() ? "PARITY: bitwise identical" : "PARITY within " + o.tolerance.describe();
  if (bad_input) {
    v.exit_code = 2;
    v.headline = "BAD INPUT: some data could not be read (see errors above)";
  } else if (divergence) {
    v.exit_code = 1;
    v.headline = std::string("DIVERGENCE: the runs are not identical") +
                 (missing_evidence ? " (and evidence is missing)" : "");
  } else if (incomplete) {
    v.exit_code = 1;
    v.headline =
        requirement_failed && !(missing_evidence && !o.allow_incomplete)
            ? "INCOMPLETE: less was compared than the gate requires"
            : "INCOMPLETE: evidence is missing (failures, killed or missing ranks, unrecorded steps); no "
              "divergence in what was compared";
  } else if (rounded) {
    v.exit_code = 0;
    v.headline = "NO DIVERGENCE IN THE PRINTED DIGITS: parity cannot be proven bitwise from rounded text";
  } else {
    v.exit_code = 0;
    v.headline = parity;
  }
  if (v.exit_code == 0 && missing_evidence) v.headline += " on the evidence present (--allow-incomplete)";
  v.data = {{"ranks", rank_data}, {"rounded", rounded}, {"comparison", o.tolerance.describe()}};
  v.data["full_tensors"] = full;
  v.data["device_memory"] = memory;
  v.data["incomplete"] = missing_evidence || requirement_failed;
  v.data["allow_incomplete"] = o.allow_incomplete;
  v.data["evidence"] = {{"baseline", ev_base.data}, {"candidate", ev_cand.data}};
  v.data["compared"] = {{"values", values},
                        {"steps", steps_compared.value_or(0)},
                        {"ranks", ranks_compared},
                        {"parameters", params_compared}};
  if (o.require.any()) v.data["requirements"] = requirements;
  enforce_evidence(v, evidence, out);
  // Ranks the rule found without evidence (node runs, where no declared step names them) count too.
  const bool gaps = !v.data["evidence"]["ranks_without_evidence"].empty();
  v.data["incomplete"] = missing_evidence || requirement_failed || gaps;
  v.data["bitwise_proof"] =
      !rounded && o.tolerance.bitwise() && v.exit_code == 0 && !missing_evidence && !gaps;
  out.end(v);
  return v.exit_code;
}

}  // namespace gparity::diff
