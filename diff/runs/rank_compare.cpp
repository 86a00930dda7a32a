#include "diff/runs/rank_compare.hpp"

#include <cstring>
#include <map>
#include <unordered_map>

#include "diff/runs/run_values.hpp"

namespace gparity::diff::runs {
namespace {

using model::RankTrace;
using model::StepRecord;
using model::TraceScalar;
using nlohmann::json;

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

/// The warning that hash array `name` is recorded in `side` ("baseline" or "candidate") only.
Finding array_only(const std::string& name, const std::string& side, int rank, std::int64_t step) {
  Finding f{Severity::Warning, "hash_array_only_in_" + side, {}, "", {{"array", name}}};
  f.where.rank = rank;
  f.where.step = step;
  f.message = "hash array " + name + " is recorded only in " + side + ": not compared";
  return f;
}

}  // namespace

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
        if (hc != nullptr && model::is_shard_invariant(hb.name) && sb.shard_spec != sc.shard_spec) {
          // Two specs are two functions: not compared, and not a divergence (XXH3 arrays are).
          if (!array_only_noted["spec:" + hb.name]) {
            array_only_noted["spec:" + hb.name] = true;
            Finding f{Severity::Info,
                      "shard_spec_differs",
                      {},
                      "",
                      {{"array", hb.name}, {"baseline", sb.shard_spec}, {"candidate", sc.shard_spec}}};
            f.where.rank = rank;
            f.where.step = step;
            f.message = "hash array " + hb.name + " is shard hash spec v" + std::to_string(sb.shard_spec) +
                        " in baseline and v" + std::to_string(sc.shard_spec) +
                        " in candidate: not compared (a change of hash spec is not a divergence; "
                        "docs/hashing.md)";
            r.findings.push_back(std::move(f));
          }
          continue;
        }
        if (hc == nullptr) {
          if (!array_only_noted[hb.name]) {
            array_only_noted[hb.name] = true;
            r.findings.push_back(array_only(hb.name, "baseline", rank, step));
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
          r.findings.push_back(array_only(hc.name, "candidate", rank, step));
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
  r.gaps.values_first = r.first_divergence;
  r.gaps.values_first_detail = first_detail;
  if (!bi.empty()) r.gaps.last_b = bi.rbegin()->first;
  if (!ci.empty()) r.gaps.last_c = ci.rbegin()->first;
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
  r.gaps.only_b = std::move(only_b);
  r.gaps.only_c = std::move(only_c);
  return r;
}

void settle_steps(RankResult& r, int rank, bool base_stopped, bool cand_stopped) {
  const auto& g = r.gaps;
  // Split one side's lacking steps: past the last step that side's rank recorded, when its run
  // says it stopped, they were never recorded (missing evidence); else they differ.
  const auto split = [](const std::vector<std::int64_t>& steps, std::optional<std::int64_t> last,
                        bool stopped, std::vector<std::int64_t>& differ,
                        std::vector<std::int64_t>& unrecorded) {
    for (const auto s : steps) (stopped && (!last || s > *last) ? unrecorded : differ).push_back(s);
  };
  std::vector<std::int64_t> missing, extra, unrecorded_c, unrecorded_b;
  split(g.only_b, g.last_c, cand_stopped, missing, unrecorded_c);
  split(g.only_c, g.last_b, base_stopped, extra, unrecorded_b);

  std::vector<Finding> found;
  const auto steps_text = [](const std::vector<std::int64_t>& v) {
    return std::string(v.size() == 1 ? "step " : "steps ") + step_ranges(v);
  };
  if (!missing.empty()) {
    Finding f{Severity::Divergence, "missing_steps", {}, "", {{"steps", missing}}};
    f.where.rank = rank;
    f.message = steps_text(missing) + " in baseline but missing in candidate";
    found.push_back(std::move(f));
  }
  if (!extra.empty()) {
    Finding f{Severity::Divergence, "extra_steps", {}, "", {{"steps", extra}}};
    f.where.rank = rank;
    f.message = steps_text(extra) + " in candidate but not in baseline";
    found.push_back(std::move(f));
  }
  for (const bool candidate_stopped : {true, false}) {
    const auto& steps = candidate_stopped ? unrecorded_c : unrecorded_b;
    if (steps.empty()) continue;
    const char* stopped = candidate_stopped ? "candidate" : "baseline";
    const char* other = candidate_stopped ? "baseline" : "candidate";
    const auto last = candidate_stopped ? g.last_c : g.last_b;
    Finding f{Severity::Incomplete, "steps_not_compared", {}, "", {{"steps", steps}, {"run", stopped}}};
    f.where.rank = rank;
    f.where.step = steps.front();
    f.message = steps_text(steps) + " in " + other + " not compared: " + stopped + " rank " +
                std::to_string(rank) +
                (last ? " stopped after step " + std::to_string(*last) : std::string(" recorded no step")) +
                " (missing evidence, not a divergence)";
    found.push_back(std::move(f));
  }
  r.findings.insert(r.findings.begin(), std::make_move_iterator(found.begin()),
                    std::make_move_iterator(found.end()));

  const std::size_t unrecorded = unrecorded_b.size() + unrecorded_c.size();
  if (!missing.empty() || !extra.empty()) {
    r.checks.push_back(
        {"steps", rank, Check::Outcome::Fail,
         std::to_string(missing.size()) + " missing, " + std::to_string(extra.size()) + " extra" +
             (unrecorded ? ", " + std::to_string(unrecorded) + " not recorded by a rank that stopped"
                         : std::string())});
  } else if (unrecorded) {
    r.checks.push_back(
        {"steps", rank, Check::Outcome::Skipped,
         std::to_string(unrecorded) + " not recorded by a rank that stopped (missing evidence)"});
  }

  // A step present in one run only is a divergence at that step too.
  r.first_divergence = g.values_first;
  json detail = g.values_first_detail;
  for (const auto* differ : {&missing, &extra}) {
    if (!differ->empty() && (!r.first_divergence || differ->front() < *r.first_divergence)) {
      r.first_divergence = differ->front();
      detail = {{"step", differ->front()}, {"scalars", json::object()}, {"missing_or_extra", true}};
    }
  }
  r.data["first_divergent_step"] = r.first_divergence ? json(*r.first_divergence) : json(nullptr);
  r.data["first_divergence"] = detail;
  r.data["steps_not_compared"] = {{"baseline", unrecorded_b}, {"candidate", unrecorded_c}};
}

}  // namespace gparity::diff::runs
