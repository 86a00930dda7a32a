#include "diff/report/evidence.hpp"

#include <algorithm>

#include "diff/report/ranges_text.hpp"

namespace gparity::diff {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string s;
  for (const auto& p : parts) {
    if (!s.empty()) s += sep;
    s += p;
  }
  return s;
}

std::string detail_of(const EvidenceSide& s, const std::string& what) {
  return s.detail.empty() ? std::to_string(s.items) + " " + what : s.detail;
}

/// "x.pkl is a pickle but holds no Flight Recorder entries", "runs/c yielded no steps x parameters".
std::string what_it_yielded(const EvidenceSide& s, const std::string& what) {
  const std::string input = s.input.empty() ? "the " + s.role : s.input;
  return input + " " + (s.nothing.empty() ? "yielded no " + what : s.nothing);
}

std::string summary_line(const Evidence& e) {
  if (e.sides.size() == 2 && detail_of(e.sides[0], e.what) == detail_of(e.sides[1], e.what))
    return "compared: " + detail_of(e.sides[0], e.what) + " each side";
  std::vector<std::string> parts;
  for (const auto& s : e.sides)
    parts.push_back(e.sides.size() == 1 ? detail_of(s, e.what) : s.role + " " + detail_of(s, e.what));
  return "compared: " + join(parts, "; ");
}

std::string nothing_why(const Evidence& e, const std::vector<const EvidenceSide*>& empty) {
  if (!e.nothing_why.empty()) {
    if (empty.empty()) return e.nothing_why;
    std::vector<std::string> from;
    for (const auto* s : empty) from.push_back(s->role + " " + s->input);
    return e.nothing_why + "; nothing from " + join(from, ", ");
  }
  if (empty.size() == 1) return what_it_yielded(*empty.front(), e.what);
  if (!empty.empty()) {
    std::vector<std::string> parts;
    for (const auto* s : empty) parts.push_back(what_it_yielded(*s, e.what));
    return "neither side yielded any " + e.what + ": " + join(parts, "; ");
  }
  if (e.sides.size() == 2)
    return "no " + e.what + " of the " + e.sides[0].role + " had a counterpart in the " + e.sides[1].role;
  return "no " + e.what + " was checked";
}

json side_json(const EvidenceSide& s, const std::string& what) {
  json j = {{"input", s.input}, {"items", s.items}, {"detail", detail_of(s, what)}};
  if (s.items == 0) j["nothing"] = what_it_yielded(s, what);
  if (!s.tried.empty()) j["tried"] = s.tried;
  return j;
}

}  // namespace

EvidenceRuling rule_on(const Evidence& e) {
  EvidenceRuling r;
  r.summary.push_back(summary_line(e));
  std::vector<const EvidenceSide*> empty;
  for (const auto& s : e.sides)
    if (s.items == 0) empty.push_back(&s);
  r.nothing_compared = e.sides.empty() || !empty.empty() || e.compared == 0;

  if (r.nothing_compared) {
    for (const auto* s : empty) {
      Finding f;
      f.severity = Severity::Error;
      f.kind = "input_yielded_nothing";
      f.where.source = s->input;
      // One run checked across its ranks has no side to name: its input is enough.
      f.message = (e.sides.size() == 1 ? "" : s->role + " ") + what_it_yielded(*s, e.what);
      if (!s->tried.empty()) f.message += " (tried: " + join(s->tried, ", ") + ")";
      f.values = side_json(*s, e.what);
      r.findings.push_back(std::move(f));
    }
    const std::string why = nothing_why(e, empty);
    r.findings.push_back(
        {Severity::Error, "nothing_compared", {}, "nothing was compared: " + why, json::object()});
    r.exit_code = 2;
    r.headline = "NOTHING COMPARED: " + why;
  } else {
    const bool one_sided = e.sides.size() == 1;
    std::vector<int> unreported;
    for (const auto& rc : e.ranks) {
      const bool gap = one_sided ? rc.candidate == 0 : (rc.baseline == 0 || rc.candidate == 0);
      if (!gap) continue;
      r.ranks_without_evidence.push_back(rc.rank);
      if (rc.reported) continue;
      unreported.push_back(rc.rank);
      Finding f;
      f.severity = Severity::Incomplete;
      f.kind = "rank_without_evidence";
      f.where.rank = rc.rank;
      f.where.source = rc.input;
      std::string where;
      if (!one_sided) {
        where = rc.baseline == 0 && rc.candidate == 0 ? " in either run"
                                                      : " in the " + e.sides[rc.baseline == 0 ? 0 : 1].role;
      }
      f.message = "rank " + std::to_string(rc.rank) + " yielded no " + e.what + where +
                  (!rc.nothing.empty() ? " (" + rc.nothing + ")"
                   : rc.input.empty()  ? ""
                                       : " (" + rc.input + ")") +
                  ": missing evidence, not an agreeing rank";
      f.values = {{"baseline", rc.baseline}, {"candidate", rc.candidate}};
      r.findings.push_back(std::move(f));
    }
    if (!unreported.empty() && e.allow_incomplete)
      r.summary.push_back(std::string("missing evidence on ") +
                          (unreported.size() == 1 ? "rank " : "ranks ") + rank_ranges(unreported) +
                          ": allowed (--allow-incomplete)");
    if (!r.ranks_without_evidence.empty() && !e.allow_incomplete) {
      const auto& rs = r.ranks_without_evidence;
      r.exit_code = 1;
      r.headline = std::string("INCOMPLETE: ") + (rs.size() == 1 ? "rank " : "ranks ") + rank_ranges(rs) +
                   " yielded no " + e.what + " (missing evidence); no divergence in what was compared";
    }
  }

  r.json = {{"what", e.what},
            {"compared", e.compared},
            {"nothing_compared", r.nothing_compared},
            {"ranks_without_evidence", r.ranks_without_evidence},
            {"summary", r.summary.front()}};
  for (const auto& s : e.sides) r.json[s.role] = side_json(s, e.what);
  if (!e.ranks.empty()) {
    json ranks = json::array();
    for (const auto& rc : e.ranks) {
      json j = {{"rank", rc.rank}};
      if (e.sides.size() == 1) {
        j["items"] = rc.candidate;
      } else {
        j["baseline"] = rc.baseline;
        j["candidate"] = rc.candidate;
      }
      if (!rc.input.empty()) j["input"] = rc.input;
      ranks.push_back(std::move(j));
    }
    r.json["ranks"] = std::move(ranks);
  }
  return r;
}

void enforce_evidence(Verdict& v, const Evidence& e, FindingConsumer& out) {
  const auto r = rule_on(e);
  for (const auto& f : r.findings) out.finding(f);
  v.summary.insert(v.summary.end(), r.summary.begin(), r.summary.end());
  if (!v.data.is_object()) v.data = json::object();
  auto& ev = v.data["evidence"];
  if (!ev.is_object()) ev = json::object();
  for (const auto& [key, value] : r.json.items()) {
    if (ev.contains(key) && ev[key].is_object() && value.is_object()) {
      ev[key].update(value);
    } else {
      ev[key] = value;
    }
  }
  v.data["nothing_compared"] = r.nothing_compared;
  if (r.exit_code == 2 && v.exit_code != 2) {
    v.exit_code = 2;
    v.headline = r.headline;
  } else if (r.exit_code == 1 && v.exit_code == 0) {
    v.exit_code = 1;
    v.headline = r.headline;
  }
}

int finish_verdict(Verdict& v, const Evidence& e, FindingConsumer& out) {
  enforce_evidence(v, e, out);
  out.end(v);
  return v.exit_code;
}

}  // namespace gparity::diff
