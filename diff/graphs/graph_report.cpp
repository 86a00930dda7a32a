#include "diff/graphs/graph_report.hpp"

#include <algorithm>

namespace gparity::diff {

namespace {

nlohmann::ordered_json node_ref(const model::Graph& g, model::NodeId n) {
  if (n == model::kNoNode) return nullptr;
  const auto& node = g.node(n);
  nlohmann::ordered_json j{{"index", n}, {"name", g.str(node.name)}, {"target", g.str(node.target)}};
  if (node.line > 0) j["line"] = node.line;
  return j;
}

}  // namespace

nlohmann::ordered_json to_json(const GraphDiffResult& r, const model::Graph& a, const model::Graph& b) {
  const auto& s = r.summary;
  nlohmann::ordered_json out;
  out["identical"] = r.identical();
  out["normalizations"] = r.normalizations;
  out["summary"] = {{"nodes_a", s.nodes_a},
                    {"nodes_b", s.nodes_b},
                    {"unchanged", s.unchanged},
                    {"changed", s.changed},
                    {"moved", s.moved},
                    {"added", s.added},
                    {"removed", s.removed},
                    {"matched_by_name", s.by_name},
                    {"matched_by_structure", s.by_structure},
                    {"matched_by_sequence", s.by_sequence}};
  auto changes = nlohmann::ordered_json::array();
  for (const auto& c : r.changes) {
    nlohmann::ordered_json j;
    j["change"] = c.added() ? "added" : c.removed() ? "removed" : !c.fields.empty() ? "changed" : "moved";
    j["moved"] = c.moved;
    j["a"] = node_ref(a, c.a);
    j["b"] = node_ref(b, c.b);
    auto fields = nlohmann::ordered_json::array();
    for (const auto& f : c.fields) fields.push_back({{"field", f.path}, {"a", f.a_text}, {"b", f.b_text}});
    j["fields"] = std::move(fields);
    changes.push_back(std::move(j));
  }
  out["changes"] = std::move(changes);
  return out;
}

nlohmann::ordered_json to_json(const RankFinding& f) {
  nlohmann::ordered_json j{
      {"class", finding_class_name(f.cls)}, {"node", f.node}, {"target", f.target}, {"field", f.field}};
  auto values = nlohmann::ordered_json::array();
  for (const auto& v : f.values) values.push_back({{"rank", v.rank}, {"value", v.text}});
  j["values"] = std::move(values);
  if (f.function) {
    j["function"] = {{"text", f.function->text()},
                     {"variable", f.function->variable},
                     {"a", f.function->a},
                     {"b", f.function->b}};
    if (!f.function->more.empty()) {
      auto more = nlohmann::ordered_json::array();
      for (const auto& [x, k] : f.function->more) more.push_back({{"variable", x}, {"a", k}});
      j["function"]["more"] = std::move(more);
    }
    if (!f.function->inferred_mesh.empty()) j["function"]["inferred_mesh"] = f.function->inferred_mesh;
  }
  if (!f.compile.empty()) j["compile_id"] = f.compile;
  if (!f.note.empty()) j["note"] = f.note;
  if (!f.source.empty()) j["source"] = f.source;
  if (f.graph_line > 0) j["graph_line"] = f.graph_line;
  return j;
}

nlohmann::ordered_json to_json(const GraphClassification& c) {
  nlohmann::ordered_json j{{"verdict", verdict_name(c.verdict)}, {"groups", c.groups}};
  auto findings = nlohmann::ordered_json::array();
  for (const auto& f : c.findings) findings.push_back(to_json(f));
  j["findings"] = std::move(findings);
  return j;
}

nlohmann::ordered_json to_json(const TraceRanksReport& r) {
  nlohmann::ordered_json j{
      {"verdict", verdict_name(r.verdict)}, {"ranks", r.ranks}, {"normalizations", r.normalizations}};
  auto graphs = nlohmann::ordered_json::array();
  for (const auto& g : r.graphs) {
    nlohmann::ordered_json one{
        {"kind", g.kind}, {"compile_id", g.compile.text()}, {"occurrence", g.occurrence}, {"ranks", g.ranks}};
    one.update(to_json(g.classification));
    graphs.push_back(std::move(one));
  }
  j["graphs"] = std::move(graphs);
  auto findings = nlohmann::ordered_json::array();
  for (const auto& f : r.findings) findings.push_back(to_json(f));
  j["findings"] = std::move(findings);
  auto groups = nlohmann::ordered_json::object();
  for (const auto& fg : r.fact_groups) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& g : fg.groups) list.push_back({{"ranks", g.ranks}, {"sequence", g.sequence}});
    groups[fg.fact] = std::move(list);
  }
  j["rank_groups"] = std::move(groups);
  if (!r.mesh.empty()) j["mesh"] = r.mesh;
  j["problems"] = r.problems;
  return j;
}

nlohmann::ordered_json to_json(const DeviceReport& r) {
  nlohmann::ordered_json j{{"literals", r.literals},
                           {"foreign_annotations", r.foreign_annotations},
                           {"mixed_inputs", r.mixed_inputs}};
  auto findings = nlohmann::ordered_json::array();
  for (const auto& f : r.findings) {
    nlohmann::ordered_json one{{"kind", device_finding_kind_name(f.kind)},
                               {"node", f.node},
                               {"target", f.target},
                               {"field", f.field},
                               {"text", f.text},
                               {"index", f.index}};
    if (!f.source.empty()) one["source"] = f.source;
    if (f.graph_line > 0) one["graph_line"] = f.graph_line;
    findings.push_back(std::move(one));
  }
  j["findings"] = std::move(findings);
  auto remaps = nlohmann::ordered_json::array();
  for (const auto& m : r.remaps)
    remaps.push_back({{"node", m.node}, {"field", m.field}, {"from", m.from}, {"to", m.to}});
  j["remaps"] = std::move(remaps);
  return j;
}

namespace {

std::string graph_name(const TraceGraphReport& g) {
  return g.compile.text() + " " + g.kind + (g.occurrence > 0 ? " #" + std::to_string(g.occurrence) : "");
}

Finding rank_finding(const RankFinding& f, const std::string& graph) {
  Finding out;
  out.severity = Severity::Divergence;
  out.kind = "graph_" + std::string(finding_class_name(f.cls));
  for (char& c : out.kind) c = c == '-' ? '_' : c;
  out.where.graph = graph.empty() && !f.compile.empty() ? f.compile : graph;
  out.where.node = f.node;
  out.message = std::string(finding_class_name(f.cls)) + ": " +
                (f.compile.empty() || !graph.empty() ? "" : "compile " + f.compile + " ") +
                (f.node.empty() ? "" : f.node + (f.target.empty() ? " " : " (" + f.target + ") ")) + f.field;
  for (const auto& v : f.values)
    out.message += (&v == &f.values.front() ? ": r" : ", r") + std::to_string(v.rank) + "=" + v.text;
  if (f.function) out.message += " = " + f.function->text();
  if (f.function && !f.function->inferred_mesh.empty())
    out.message += " (mesh " + f.function->inferred_mesh + ")";
  if (!f.note.empty()) out.message += "; " + f.note;
  out.values = to_json(f);
  return out;
}

}  // namespace

void emit(const TraceRanksReport& r, const std::string& path, FindingConsumer& out) {
  ReportHeader h;
  h.title = "gparity graph ranks";
  h.baseline = path;
  h.mode = "exact";
  h.notes = r.normalizations;
  if (!r.mesh.empty()) h.notes.push_back("mesh " + r.mesh);
  out.begin(h);
  for (const auto& p : r.problems) out.finding({Severity::Warning, "graph_trace_problem", {}, p, {}});
  for (const auto& fg : r.fact_groups) {
    std::string text;
    for (const auto& g : fg.groups) {
      std::string ranks;
      for (const auto x : g.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(x);
      text += (text.empty() ? "" : " | ") + std::string("ranks ") + ranks + ": " + g.sequence;
    }
    out.finding({Severity::Divergence,
                 "graph_rank_groups",
                 {},
                 fg.fact + ": " + std::to_string(fg.groups.size()) + " groups of ranks (" + text + ")",
                 {}});
  }
  for (const auto& f : r.findings) out.finding(rank_finding(f, ""));
  Verdict v;
  for (const auto& g : r.graphs) {
    const auto name = graph_name(g);
    for (const auto& f : g.classification.findings) out.finding(rank_finding(f, name));
    const bool same = g.classification.verdict == diff::GraphVerdict::Identical;
    out.check({name, std::nullopt, same ? Check::Outcome::Pass : Check::Outcome::Fail,
               std::string(verdict_name(g.classification.verdict))});
    v.summary.push_back(name + ": " + std::string(verdict_name(g.classification.verdict)));
  }
  v.exit_code = r.verdict == diff::GraphVerdict::Identical ? 0 : 1;
  v.headline = std::string(verdict_name(r.verdict));
  v.data = to_json(r);
  finish_verdict(v, ranks_evidence(r, path), out);
}

void emit(const GraphDiffResult& r, const model::Graph& a, const std::string& a_label, const model::Graph& b,
          const std::string& b_label, FindingConsumer& out) {
  ReportHeader h;
  h.title = "gparity graph diff";
  h.baseline = a_label;
  h.candidate = b_label;
  h.mode = "exact";
  h.notes = r.normalizations;
  out.begin(h);
  for (const auto& c : r.changes) {
    Finding f;
    f.severity = Severity::Divergence;
    f.kind = c.added()           ? "node_added"
             : c.removed()       ? "node_removed"
             : !c.fields.empty() ? "node_changed"
                                 : "node_moved";
    f.where.node = c.added() ? std::string(b.node_name(c.b)) : std::string(a.node_name(c.a));
    f.message = f.kind.substr(5) + " " + f.where.node;
    auto fields = nlohmann::json::array();
    for (const auto& d : c.fields) {
      f.message += "; " + d.path + ": " + d.a_text + " -> " + d.b_text;
      fields.push_back({{"field", d.path}, {"a", d.a_text}, {"b", d.b_text}});
    }
    f.values = {{"fields", fields}, {"moved", c.moved}};
    out.finding(f);
  }
  out.check({"graph", std::nullopt, r.identical() ? Check::Outcome::Pass : Check::Outcome::Fail,
             r.identical() ? "identical" : "different"});
  Verdict v;
  v.exit_code = r.identical() ? 0 : 1;
  v.headline = r.identical() ? "identical" : "different";
  const auto& s = r.summary;
  v.summary.push_back(std::to_string(s.unchanged) + " unchanged, " + std::to_string(s.changed) +
                      " changed, " + std::to_string(s.moved) + " moved, " + std::to_string(s.added) +
                      " added, " + std::to_string(s.removed) + " removed");
  v.data = to_json(r, a, b);
  finish_verdict(v, diff_evidence(r, a_label, b_label), out);
}

Evidence ranks_evidence(const TraceRanksReport& r, const std::string& path,
                        const model::MultiRankTrace* trace) {
  Evidence e;
  e.what = "graphs";
  EvidenceSide side;
  side.role = "run";
  side.input = path;
  side.tried = {"TORCH_TRACE log"};
  for (const auto rank : r.ranks) {
    RankEvidenceCount c;
    c.rank = rank;
    for (const auto& g : r.graphs)
      c.candidate += std::count(g.ranks.begin(), g.ranks.end(), rank) > 0 ? 1 : 0;
    if (const auto* t = trace != nullptr ? trace->rank(rank) : nullptr) c.input = t->path;
    side.items += c.candidate;
    e.ranks.push_back(c);
  }
  e.compared = side.items;
  side.detail = std::to_string(r.graphs.size()) + " graphs, " + std::to_string(side.items) +
                " rank graphs on " + std::to_string(r.ranks.size()) +
                (r.ranks.size() == 1 ? " rank" : " ranks");
  if (side.items == 0) side.nothing = "holds no graph (no TORCH_TRACE graph payload on any rank)";
  e.sides.push_back(std::move(side));
  return e;
}

Evidence diff_evidence(const GraphDiffResult& r, const std::string& a_label, const std::string& b_label) {
  const auto& s = r.summary;
  Evidence e;
  e.what = "nodes";
  e.compared = s.unchanged + s.changed + s.moved;
  e.sides = {{"baseline",
              a_label,
              s.nodes_a,
              std::to_string(s.nodes_a) + " nodes",
              "holds a graph with no node",
              {}},
             {"candidate",
              b_label,
              s.nodes_b,
              std::to_string(s.nodes_b) + " nodes",
              "holds a graph with no node",
              {}}};
  return e;
}

Evidence devices_evidence(const model::Graph& g, const std::string& label) {
  Evidence e;
  e.what = "nodes";
  e.compared = g.nodes.size();
  e.sides = {{"run",
              label,
              g.nodes.size(),
              std::to_string(g.nodes.size()) + " nodes",
              "holds a graph with no node",
              {}}};
  return e;
}

}  // namespace gparity::diff
