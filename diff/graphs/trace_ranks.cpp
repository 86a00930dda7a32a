#include "diff/graphs/trace_ranks.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "diff/graphs/mesh.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "diff/graphs/trace_facts.hpp"

namespace gparity::diff {

namespace {

RankLayout resolve_layout_with(const model::MultiRankTrace& trace, RankLayout layout,
                               std::vector<std::string>& problems, const std::vector<MeshSpec>* read_specs) {
  std::int32_t world = 0;
  for (const auto& rt : trace.ranks) world = std::max(world, rt.rank + 1);
  const bool given = !layout.mesh.empty();
  if (given && layout.mesh_source.empty()) layout.mesh_source = "--mesh";
  const bool named = std::any_of(layout.mesh_names.begin(), layout.mesh_names.end(),
                                 [](const std::string& n) { return !n.empty(); });
  const auto groups = groups_beside_trace(trace.path, problems);
  for (const auto& g : groups)
    if (!g.ranks.empty()) layout.group_ranks.emplace_back(g.name, g.ranks);
  if (given && named) return layout;
  const auto specs = read_specs != nullptr ? *read_specs : mesh_specs_in_trace(trace);
  auto mesh = mesh_from_specs(specs, world);
  if (!mesh) mesh = mesh_from_groups(groups, world);
  if (!mesh) mesh = mesh_from_manifest(trace.path, world, problems);
  if (given) {
    // The override's shape with the artifacts' dimension names when the shapes agree.
    if (mesh && mesh->shape == layout.mesh) layout.mesh_names = mesh->names;
    return layout;
  }
  if (mesh) {
    adopt_mesh(layout, *mesh);
  } else {
    layout.infer_world = world;
  }
  return layout;
}

/// classify_trace's report around the graphs `classify(layout)` gives (compile, kind,
/// occurrence, ranks and classification filled, in key order).
template <typename Classify>
TraceRanksReport classify_trace_with(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                     const RankLayout& given, const std::vector<MeshSpec>* specs,
                                     Classify&& classify) {
  TraceRanksReport report;
  report.normalizations = normalization_names(norm);
  report.layout = resolve_layout_with(trace, given, report.problems, specs);
  const RankLayout& layout = report.layout;
  if (!layout.mesh.empty()) {
    const std::string shape = mesh_shape_text(layout.mesh);
    std::string names;
    for (std::size_t d = 0; d < layout.mesh.size(); ++d) names += (d ? ", " : "") + layout.dim_name(d);
    report.mesh = shape + " (" + names + ") from " + layout.mesh_source;
  }
  for (const auto& rt : trace.ranks) {
    report.ranks.push_back(rt.rank);
    for (const auto& p : rt.problems) report.problems.push_back(p.text());
  }
  auto facts = trace_facts(trace);
  report.findings = std::move(facts.findings);
  report.fact_groups = std::move(facts.groups);
  for (auto& p : facts.problems) report.problems.push_back(std::move(p));
  for (TraceGraphReport& g : classify(layout)) {
    if (g.ranks.size() != report.ranks.size()) {
      RankFinding f;
      f.cls = FindingClass::Divergent;
      f.field = "graph";
      f.compile = g.compile.text();
      for (const std::int32_t r : report.ranks) {
        const bool in = std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end();
        f.values.push_back({r, in ? "present" : "absent"});
      }
      g.classification.findings.insert(g.classification.findings.begin(), std::move(f));
      g.classification.verdict = GraphVerdict::Divergent;
    }
    report.verdict = std::max(report.verdict, g.classification.verdict);
    report.graphs.push_back(std::move(g));
  }
  for (const auto& f : report.findings) report.verdict = std::max(report.verdict, verdict_of(f.cls));
  return report;
}

}  // namespace

RankLayout resolve_layout(const model::MultiRankTrace& trace, RankLayout layout,
                          std::vector<std::string>& problems) {
  return resolve_layout_with(trace, std::move(layout), problems, nullptr);
}

TraceRanksReport classify_trace(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                const RankLayout& given, bool graphs) {
  return classify_trace_with(trace, norm, given, nullptr, [&](const RankLayout& layout) {
    std::vector<TraceGraphReport> out;
    if (!graphs) return out;
    using Key = std::tuple<model::CompileId, std::string, std::int32_t>;
    std::map<Key, std::vector<RankGraph>> by_key;
    for (const auto& rt : trace.ranks) {
      std::map<std::pair<model::CompileId, std::string>, std::int32_t> seen;
      for (const auto& tg : rt.graphs) {
        const std::int32_t occ = seen[{tg.compile, tg.kind}]++;
        by_key[{tg.compile, tg.kind, occ}].push_back({rt.rank, &tg.graph});
      }
    }
    for (const auto& [key, rank_graphs] : by_key) {
      TraceGraphReport g;
      g.compile = std::get<0>(key);
      g.kind = std::get<1>(key);
      g.occurrence = std::get<2>(key);
      for (const auto& rg : rank_graphs) g.ranks.push_back(rg.rank);
      g.classification = classify_ranks(rank_graphs, norm, layout);
      out.push_back(std::move(g));
    }
    return out;
  });
}

TraceRanksReport classify_trace(const RanksInput& input, const RankLayout& given) {
  return classify_trace_with(input.trace, input.norm, given, &input.mesh_specs,
                             [&](const RankLayout& layout) {
                               std::vector<TraceGraphReport> out;
                               for (const auto& ts : input.graphs) {
                                 TraceGraphReport g;
                                 g.compile = ts.compile;
                                 g.kind = ts.kind;
                                 g.occurrence = ts.occurrence;
                                 for (const auto* m : ts.set->members()) g.ranks.push_back(m->rank);
                                 g.classification = classify_rank_set(*ts.set, layout);
                                 out.push_back(std::move(g));
                               }
                               return out;
                             });
}

}  // namespace gparity::diff
