#include "diff/graphs/trace_facts.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace gparity::diff {
namespace {

using model::CompileId;
using model::TorchTraceRank;
using model::TraceRecord;

/// Groups ranks by a per-rank key, groups ordered by their smallest rank.
FactGroups group_ranks(std::string fact, const std::map<std::int32_t, std::string>& key_of,
                       const std::map<std::int32_t, std::string>& summary_of) {
  std::map<std::string, std::vector<std::int32_t>> by_key;
  for (const auto& [rank, key] : key_of) by_key[key].push_back(rank);
  FactGroups g;
  g.fact = std::move(fact);
  for (auto& [key, ranks] : by_key) g.groups.push_back({ranks, summary_of.at(ranks.front())});
  std::sort(g.groups.begin(), g.groups.end(),
            [](const RankGroup& a, const RankGroup& b) { return a.ranks.front() < b.ranks.front(); });
  return g;
}

/// "hit" / "miss" / "bypass" for a cache artifact (tlparse's test on the output file name).
std::string_view cache_status(std::string_view name) {
  if (name.find("cache_miss") != std::string_view::npos) return "miss";
  if (name.find("cache_hit") != std::string_view::npos) return "hit";
  if (name.find("cache_bypass") != std::string_view::npos) return "bypass";
  return "";
}

/// "fx_graph_cache_miss" -> "fx_graph_cache": which cache the status is of.
std::string cache_family(std::string_view name) {
  std::string s(name);
  for (const char* w : {"cache_miss", "cache_hit", "cache_bypass"}) {
    if (const auto at = s.find(w); at != std::string::npos) {
      s.replace(at, std::string_view(w).size(), "cache");
      break;
    }
  }
  return s;
}

/// Per rank: value of each (compile id, key, occurrence) slot, in log order of first appearance.
struct Slot {
  CompileId compile;
  std::string key;
  std::int32_t occurrence = 0;
  auto operator<=>(const Slot&) const = default;
};

struct SlotValue {
  std::string text;       // compared across ranks
  std::string shown;      // what a report prints for the rank
  std::int64_t line = 0;  // log line of the record
  nlohmann::json json;    // parsed payload for JSON artifacts
};

using RankSlots = std::map<Slot, SlotValue>;

/// One finding per slot whose value is not the same on every rank that has the slot's compile
/// id, plus absence where some ranks have the slot and others do not.
void compare_slots(const std::string& field, const std::map<std::int32_t, RankSlots>& per_rank,
                   const std::map<std::int32_t, std::set<CompileId>>& compiles, std::vector<RankFinding>& out,
                   const std::function<void(const Slot&, const std::map<std::int32_t, const SlotValue*>&,
                                            RankFinding&)>& detail) {
  std::set<Slot> slots;
  for (const auto& [rank, s] : per_rank)
    for (const auto& [slot, v] : s) slots.insert(slot);
  for (const auto& slot : slots) {
    std::map<std::int32_t, const SlotValue*> values;
    std::set<std::string> distinct;
    for (const auto& [rank, s] : per_rank) {
      const auto it = s.find(slot);
      const bool has_compile = compiles.at(rank).contains(slot.compile);
      if (it == s.end() && !has_compile) continue;  // the compile_id fact covers a missing compile
      values[rank] = it == s.end() ? nullptr : &it->second;
      distinct.insert(it == s.end() ? std::string("\x01") + "absent" : it->second.text);
    }
    if (distinct.size() <= 1) continue;
    RankFinding f;
    f.cls = FindingClass::Divergent;
    f.field = field;
    f.compile = slot.compile.text();
    f.node = slot.key;
    for (const auto& [rank, v] : values) {
      f.values.push_back({rank, v == nullptr ? "absent" : v->shown});
      if (v != nullptr && f.graph_line == 0) f.graph_line = v->line;
    }
    detail(slot, values, f);
    out.push_back(std::move(f));
  }
}

// ---- the facts ------------------------------------------------------------------------------

struct RankRecords {
  std::int32_t rank;
  const TorchTraceRank* log;
};

void compile_id_fact(const std::vector<RankRecords>& ranks, TraceFacts& out) {
  std::map<CompileId, std::vector<std::int32_t>> where;
  for (const auto& r : ranks)
    for (const auto& c : r.log->compile_ids()) where[c].push_back(r.rank);
  for (const auto& [compile, have] : where) {
    if (have.size() == ranks.size()) continue;
    RankFinding f;
    f.cls = FindingClass::Divergent;
    f.field = "compile_id";
    f.compile = compile.text();
    for (const auto& r : ranks) {
      const bool in = std::find(have.begin(), have.end(), r.rank) != have.end();
      f.values.push_back({r.rank, in ? "present" : "absent"});
    }
    out.findings.push_back(std::move(f));
  }
}

void cache_fact(const std::vector<RankRecords>& ranks,
                const std::map<std::int32_t, std::set<CompileId>>& compiles, TraceFacts& out) {
  std::map<std::int32_t, RankSlots> per_rank;
  std::map<std::int32_t, std::string> seq, summary;
  for (const auto& r : ranks) {
    auto& slots = per_rank[r.rank];
    std::map<std::pair<CompileId, std::string>, std::int32_t> seen;
    std::string& s = seq[r.rank];
    std::size_t hits = 0, misses = 0, bypasses = 0;
    for (const auto& rec : r.log->records) {
      const auto status = cache_status(rec.name);
      if (status.empty()) continue;
      const auto family = cache_family(rec.name);
      const auto occ = seen[{rec.compile, family}]++;
      slots[{rec.compile, family, occ}] = {std::string(status), std::string(status), rec.line, {}};
      s += std::string(s.empty() ? "" : " ") + std::string(status);
      (status == "hit" ? hits : status == "miss" ? misses : bypasses)++;
    }
    summary[r.rank] = std::to_string(hits) + " hits, " + std::to_string(misses) + " misses, " +
                      std::to_string(bypasses) + " bypasses";
  }
  compare_slots("cache", per_rank, compiles, out.findings, [](const auto&, const auto&, RankFinding&) {});
  auto g = group_ranks("cache", seq, summary);
  if (g.groups.size() > 1) out.groups.push_back(std::move(g));
}

std::string json_path_diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  if (a.type() != b.type()) return path.empty() ? "(type)" : path;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string p = path.empty() ? it.key() : path + "." + it.key();
      if (!b.contains(it.key())) return p;
      if (a[it.key()] != b[it.key()]) return json_path_diff(it.value(), b[it.key()], p);
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return path.empty() ? it.key() : path + "." + it.key();
    return path;
  }
  if (a.is_array()) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return json_path_diff(a[i], b[i], path + "[" + std::to_string(i) + "]");
    return path + ".length";
  }
  return path;
}

/// Reads the JSON payload of every artifact named `name`, slot per (compile id, occurrence).
std::map<std::int32_t, RankSlots> json_artifacts(const std::vector<RankRecords>& ranks, std::string_view name,
                                                 TraceFacts& out) {
  std::map<std::int32_t, RankSlots> per_rank;
  for (const auto& r : ranks) {
    auto& slots = per_rank[r.rank];
    std::map<CompileId, std::int32_t> seen;
    for (const auto& rec : r.log->records) {
      if (rec.name != name) continue;
      const auto occ = seen[rec.compile]++;
      auto j = nlohmann::json::parse(r.log->payload(rec), nullptr, false);
      if (j.is_discarded()) {
        out.problems.push_back(r.log->path + ":" + std::to_string(rec.line) + ": " + std::string(name) +
                               " payload is not JSON; skipped");
        continue;
      }
      SlotValue v;
      v.text = j.dump();
      v.line = rec.line;
      v.json = std::move(j);
      slots[{rec.compile, std::string(name), occ}] = std::move(v);
    }
  }
  return per_rank;
}

void collective_schedule_fact(const std::vector<RankRecords>& ranks,
                              const std::map<std::int32_t, std::set<CompileId>>& compiles, TraceFacts& out) {
  auto per_rank = json_artifacts(ranks, "inductor_collective_schedule", out);
  std::map<std::int32_t, std::string> seq, summary;
  for (auto& [rank, slots] : per_rank) {
    std::size_t n = 0;
    std::string& s = seq[rank];
    for (auto& [slot, v] : slots) {
      const std::size_t ops = v.json.is_array() ? v.json.size() : 0;
      v.shown = std::to_string(ops) + " ops";
      if (ops == 0) continue;  // tlparse drops empty schedules
      n += ops;
      s += slot.compile.text() + ":" + v.text + ";";
    }
    summary[rank] = std::to_string(n) + " ops";
  }
  compare_slots("collective_schedule", per_rank, compiles, out.findings,
                [](const Slot&, const std::map<std::int32_t, const SlotValue*>& values, RankFinding& f) {
                  // Name the first position where a rank's schedule departs from the first rank's.
                  const SlotValue* ref = nullptr;
                  for (const auto& [rank, v] : values)
                    if (v != nullptr && ref == nullptr) ref = v;
                  if (ref == nullptr || !ref->json.is_array()) return;
                  for (auto& rv : f.values) {
                    const auto* v = values.at(rv.rank);
                    if (v == nullptr || !v->json.is_array() || v == ref || v->text == ref->text) continue;
                    std::size_t k = 0;
                    while (k < ref->json.size() && k < v->json.size() && ref->json[k] == v->json[k]) ++k;
                    const auto op = [](const nlohmann::json& a, std::size_t i) {
                      return i < a.size() && a[i].is_string() ? a[i].get<std::string>()
                                                              : std::string("(end)");
                    };
                    rv.text += "; #" + std::to_string(k + 1) + ": " + op(v->json, k) + " where rank " +
                               std::to_string(values.begin()->first) + " has " + op(ref->json, k);
                    if (f.target.empty()) f.target = op(ref->json, k);
                  }
                });
  auto g = group_ranks("collective_schedule", seq, summary);
  if (g.groups.size() > 1) out.groups.push_back(std::move(g));
}

void tensor_meta_fact(const std::vector<RankRecords>& ranks,
                      const std::map<std::int32_t, std::set<CompileId>>& compiles, TraceFacts& out) {
  auto per_rank = json_artifacts(ranks, "inductor_runtime_and_tensor_meta", out);
  std::map<std::int32_t, std::string> seq, summary;
  for (auto& [rank, slots] : per_rank) {
    std::string& s = seq[rank];
    for (auto& [slot, v] : slots) {
      const auto* ops = v.json.is_object() && v.json.contains("ops") ? &v.json["ops"] : nullptr;
      v.shown = std::to_string(ops != nullptr && ops->is_array() ? ops->size() : 0) + " ops";
      s += slot.compile.text() + ":" + v.text + ";";
    }
    summary[rank] = std::to_string(slots.size()) + " graphs";
  }
  compare_slots(
      "tensor_meta", per_rank, compiles, out.findings,
      [](const Slot&, const std::map<std::int32_t, const SlotValue*>& values, RankFinding& f) {
        const SlotValue* ref = nullptr;
        for (const auto& [rank, v] : values)
          if (v != nullptr && ref == nullptr) ref = v;
        if (ref == nullptr) return;
        for (auto& rv : f.values) {
          const auto* v = values.at(rv.rank);
          if (v == nullptr || v->text == ref->text) continue;
          const auto path = json_path_diff(ref->json, v->json, "");
          rv.text += "; differs at " + path;
          // "ops[3].outputs[0].shape" -> the op's name as the node.
          if (f.target.empty() && path.starts_with("ops[")) {
            const auto k = std::stoul(path.substr(4));
            const auto& ops = ref->json["ops"];
            if (k < ops.size() && ops[k].is_object() && ops[k].contains("name") && ops[k]["name"].is_string())
              f.target = ops[k]["name"].get<std::string>();
          }
        }
      });
  auto g = group_ranks("tensor_meta", seq, summary);
  if (g.groups.size() > 1) out.groups.push_back(std::move(g));
}

void collectives_vs_code_fact(const std::vector<RankRecords>& ranks, TraceFacts& out) {
  for (const auto& r : ranks) {
    std::map<CompileId, const TraceRecord*> schedule, code;
    for (const auto& rec : r.log->records) {
      if (rec.name == "inductor_collective_schedule" && !schedule.contains(rec.compile))
        schedule[rec.compile] = &rec;
      if (rec.kind == "inductor_output_code" && !code.contains(rec.compile)) code[rec.compile] = &rec;
    }
    for (const auto& [compile, srec] : schedule) {
      const auto cit = code.find(compile);
      if (cit == code.end()) continue;
      const auto ops = nlohmann::json::parse(r.log->payload(*srec), nullptr, false);
      std::map<std::string, std::size_t> in_schedule, in_code;
      if (ops.is_array())
        for (const auto& op : ops)
          if (op.is_string())
            if (auto fam = collective_family(op.get<std::string>()); !fam.empty()) ++in_schedule[fam];
      const auto cc = code_collectives(r.log->payload(*cit->second));
      for (const auto& [fam, line] : cc.calls) ++in_code[fam];
      std::set<std::string> fams;
      for (const auto& [k, n] : in_schedule) fams.insert(k);
      for (const auto& [k, n] : in_code) fams.insert(k);
      std::size_t offset = 0;
      std::string counts;
      for (const auto& fam : fams) {
        const auto a = in_schedule[fam], b = in_code[fam];
        offset += a > b ? a - b : b - a;
        counts += (counts.empty() ? "" : ", ") + fam + " " + std::to_string(a) + "/" + std::to_string(b);
      }
      const std::size_t missing_waits = cc.calls.size() > cc.waits ? cc.calls.size() - cc.waits : 0;
      if (offset == 0 && missing_waits == 0) continue;
      RankFinding f;
      f.cls = FindingClass::Divergent;
      f.field = "collectives_vs_code";
      f.compile = compile.text();
      f.graph_line = cit->second->line;
      std::string unwaited;
      for (const auto& b : cc.unwaited) unwaited += (unwaited.empty() ? "" : ", ") + b;
      f.node = unwaited;
      f.target = "inductor_output_code";
      f.values.push_back({r.rank, "offset " + std::to_string(offset) + ", missing waits " +
                                      std::to_string(missing_waits) + " (schedule/code: " + counts + ")" +
                                      (unwaited.empty() ? "" : "; not waited: " + unwaited)});
      out.findings.push_back(std::move(f));
    }
  }
}

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// Strips what tlparse strips before counting: `#` and `//` to the end of the line, /* */.
std::string strip_comments(std::string_view code) {
  std::string out;
  out.reserve(code.size());
  for (std::size_t i = 0; i < code.size();) {
    if (code[i] == '#' || code.substr(i, 2) == "//") {
      while (i < code.size() && code[i] != '\n') ++i;
    } else if (code.substr(i, 2) == "/*") {
      const auto end = code.find("*/", i + 2);
      // Keep the newlines so line numbers stay.
      const auto stop = end == std::string_view::npos ? code.size() : end + 2;
      for (; i < stop; ++i)
        if (code[i] == '\n') out += '\n';
    } else {
      out += code[i++];
    }
  }
  return out;
}

std::string first_arg(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  std::size_t j = i;
  while (j < s.size() && ident_char(s[j])) ++j;
  return std::string(s.substr(i, j - i));
}

}  // namespace

std::string collective_family(std::string_view op) {
  // The operator name between "_c10d_functional." and ".default" when qualified.
  if (const auto at = op.find("c10d_functional."); at != std::string_view::npos) {
    op = op.substr(at + 16);
    if (const auto dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  }
  while (!op.empty() && op.back() == '_') op.remove_suffix(1);
  for (const char* name : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"})
    if (op.find(name) != std::string_view::npos) return name;
  if (op.find("reduce") != std::string_view::npos) return "reduce";
  return "";
}

CodeCollectives code_collectives(std::string_view code) {
  const std::string clean = strip_comments(code);
  CodeCollectives out;
  std::vector<std::string> issued;
  std::set<std::string> waited;
  std::int64_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < clean.size(); ++i) {
    if (clean[i] == '\n') {
      ++line;
      line_start = i + 1;
      continue;
    }
    if (clean[i] != 't' || clean.compare(i, 9, "torch.ops") != 0 || (i > 0 && ident_char(clean[i - 1])))
      continue;
    // torch.ops._c10d_functional.<op>.default(  (spaces around dots tolerated as tlparse does)
    std::size_t p = i + 9;
    const auto skip_ws = [&] {
      while (p < clean.size() && (clean[p] == ' ' || clean[p] == '\t')) ++p;
    };
    const auto expect = [&](std::string_view w) {
      skip_ws();
      if (clean.compare(p, w.size(), w) != 0) return false;
      p += w.size();
      return true;
    };
    if (!expect(".")) continue;
    skip_ws();
    if (clean.compare(p, 1, "_") == 0) ++p;
    if (!expect("c10d_functional") || !expect(".")) continue;
    skip_ws();
    const std::size_t name_start = p;
    while (p < clean.size() && ident_char(clean[p])) ++p;
    const std::string op = clean.substr(name_start, p - name_start);
    if (op.empty() || !expect(".") || !expect("default") || !expect("(")) continue;
    const std::string arg = first_arg(std::string_view(clean).substr(p));
    if (op == "wait_tensor") {
      ++out.waits;
      waited.insert(arg);
    } else if (const auto fam = collective_family(op); !fam.empty()) {
      out.calls.emplace_back(fam, line);
      // The buffer the wait will name: the assigned name when the call is assigned, else the
      // first argument (in-place collectives such as all_reduce_).
      std::string_view before = std::string_view(clean).substr(line_start, i - line_start);
      std::string target = arg;
      if (const auto eq = before.find('='); eq != std::string_view::npos) {
        const auto lhs = first_arg(before.substr(0, eq));
        if (!lhs.empty()) target = lhs;
      }
      issued.push_back(target);
    }
    i = p - 1;
  }
  for (const auto& b : issued)
    if (!waited.contains(b)) out.unwaited.push_back(b);
  return out;
}

TraceFacts trace_facts(const model::MultiRankTrace& trace) {
  TraceFacts out;
  std::vector<RankRecords> ranks;
  std::map<std::int32_t, std::set<CompileId>> compiles;
  for (const auto& t : trace.ranks) {
    ranks.push_back({t.rank, &t});
    const auto ids = t.compile_ids();
    compiles[t.rank] = {ids.begin(), ids.end()};
  }
  if (ranks.size() > 1) {
    compile_id_fact(ranks, out);
    cache_fact(ranks, compiles, out);
    collective_schedule_fact(ranks, compiles, out);
    tensor_meta_fact(ranks, compiles, out);
  }
  collectives_vs_code_fact(ranks, out);
  return out;
}

}  // namespace gparity::diff
