#include "diff/replay/node_findings.hpp"

#include <filesystem>

#include "core/model/run/run_source.hpp"
#include "diff/replay/node_runs.hpp"
#include "diff/runs/run_compare.hpp"
#include "hash/xxh3.hpp"

namespace gparity::diff {

using json = nlohmann::json;

std::string divergence_cause_text(const NodeDivergence& d, int rank) {
  const auto remote_origin = [&]() -> std::string {
    if (!d.cross_rank || d.cross_rank->origin.rank < 0 || d.cross_rank->origin.rank == rank) return {};
    return " (origin " + d.cross_rank->origin.text() + " on rank " +
           std::to_string(d.cross_rank->origin.rank) + ")";
  };
  std::string s;
  switch (d.cause) {
    case DivergenceCause::Origin:
      s = "origin: its inputs were equal";
      if (d.cross_rank && !d.cross_rank->group.empty())
        s += " on every member of group " +
             causality::group_text(d.cross_rank->group, d.cross_rank->group_desc);
      if (!d.unrecorded_inputs.empty()) {
        s += " (not recorded, taken as equal:";
        for (std::size_t i = 0; i < d.unrecorded_inputs.size() && i < 3; ++i)
          s += " " + d.unrecorded_inputs[i];
        s += d.unrecorded_inputs.size() > 3 ? " ...)" : ")";
      }
      return s;
    case DivergenceCause::Propagated: {
      if (!d.propagated_from.empty())
        return "propagated: a graph input, after " + d.propagated_from + " diverged" + remote_origin();
      s = "propagated: input";
      s += d.differing_inputs.size() == 1 ? " " : "s ";
      for (std::size_t i = 0; i < d.differing_inputs.size() && i < 3; ++i)
        s += (i ? ", " : "") + d.differing_inputs[i];
      if (d.differing_inputs.size() > 3) s += ", ...";
      return s + " already differed" + remote_origin();
    }
    case DivergenceCause::Received: return d.cross_rank ? d.cross_rank->text(d.node_a, rank) : "received";
    case DivergenceCause::Input: return "graph input: the graph was fed different values";
    case DivergenceCause::Unknown:
      if (d.cross_rank && !d.cross_rank->why_unknown.empty())
        return "cause unknown: " + d.cross_rank->why_unknown;
      return "origin unknown (no graph to find its inputs)";
  }
  return s;
}

namespace {

json record_json(const std::optional<model::NodeRecord>& r) {
  if (!r) return nullptr;
  json j = {{"node", r->node}, {"dtype", model::dtype_name(r->dtype)}, {"shape", r->shape}};
  // Only the hashes the record carries (a shard-only run has no xxh3, a view neither).
  if (r->has_xxh3) j["xxh3"] = hash::to_hex(r->xxh3);
  if (r->has_shard) j["shard"] = hash::to_hex(r->shard);
  if (r->view)
    j["view"] = {{"base", r->view->base},
                 {"offset", r->view->offset},
                 {"stride", r->view->stride},
                 {"base_stride", r->view->base_stride}};
  return j;
}

json divergence_json(const NodeDivergence& d) {
  json j = {{"node", d.node_a},
            {"node_b", d.node_b},
            {"op", d.op},
            {"source", d.source},
            {"position", d.position},
            {"output", d.output},
            {"fields", d.fields},
            {"cause", divergence_cause_name(d.cause)},
            {"differing_inputs", d.differing_inputs},
            {"unrecorded_inputs", d.unrecorded_inputs},
            {"propagated_from", d.propagated_from},
            {"matched_by", d.matched_by},
            {"baseline", record_json(d.a)},
            {"candidate", record_json(d.b)}};
  if (d.cross_rank) {
    const auto& c = *d.cross_rank;
    j["cross_rank"] = c.to_json();
    j["origin"] = c.origin.to_json();
    j["origin_rank"] = c.origin.rank;
    j["group"] = c.group;
    j["group_desc"] = c.group_desc;
    j["collective"] = c.group.empty() ? std::string() : d.node_a;
    j["from_ranks"] = c.from_ranks;
    if (c.through) j["through"] = c.through->to_json();
  }
  return j;
}

std::string describe(const NodeDivergence& d, int rank) {
  std::string s = d.node_a;
  if (!d.node_b.empty() && d.node_b != d.node_a) s += " (candidate: " + d.node_b + ")";
  s += " [" + (d.op.empty() ? std::string("?") : d.op);
  if (!d.source.empty()) s += ", " + d.source;
  s += "] output " + std::to_string(d.output) + ": ";
  const auto shape = [](const std::vector<std::int64_t>& v) {
    std::string t = "[";
    for (std::size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
    return t + "]";
  };
  for (std::size_t i = 0; i < d.fields.size(); ++i) {
    const auto& f = d.fields[i];
    s += i ? ", " : "";
    if (f == "missing") {
      s += d.a ? "missing in the candidate" : "missing in the baseline";
    } else if (d.a && d.b) {
      const auto& x = *d.a;
      const auto& y = *d.b;
      s += f + " " +
           (f == "xxh3"    ? hash::to_hex(x.xxh3) + " vs " + hash::to_hex(y.xxh3)
            : f == "shard" ? hash::to_hex(x.shard) + " vs " + hash::to_hex(y.shard)
            : f == "view" && x.view && y.view
                ? "of " + x.view->base + " at offset " + std::to_string(x.view->offset) + " strides " +
                      shape(x.view->stride) + " vs of " + y.view->base + " at offset " +
                      std::to_string(y.view->offset) + " strides " + shape(y.view->stride)
            : f == "dtype"
                ? std::string(model::dtype_name(x.dtype)) + " vs " + std::string(model::dtype_name(y.dtype))
                : shape(x.shape) + " vs " + shape(y.shape));
    }
  }
  return s + "; " + divergence_cause_text(d, rank);
}

/// "the candidate's records stop at node output (output 3)".
std::string records_cut_text(const NodeRecordsCut& c) {
  return std::string("the ") + (c.candidate ? "candidate" : "baseline") + "'s records stop at node " +
         c.last_node + " (output " + std::to_string(c.last_output) + ")";
}

Finding records_cut_finding(const NodeRankResult& r, const NodeGraphResult& g, const NodeRecordsCut& c) {
  const char* other = c.candidate ? "baseline" : "candidate";
  Finding f{Severity::Incomplete,
            "node_records_cut",
            {},
            "",
            {{"graph", g.graph},
             {"side", c.candidate ? "candidate" : "baseline"},
             {"last_node", c.last_node},
             {"last_output", c.last_output},
             {"outputs_missing", c.outputs_missing},
             {"nodes_after", c.nodes_after},
             {"first_after", c.first_after}}};
  f.where.rank = r.rank;
  f.where.graph = g.graph;
  f.where.node = c.last_node;
  f.where.source = c.file;
  f.message = "graph " + g.graph + ": " + records_cut_text(c) + ", the last node records of its rank file" +
              (c.file.empty() ? std::string() : " " + std::filesystem::path(c.file).filename().string()) +
              ": " + std::to_string(c.outputs_missing) + " later output(s) of it and " +
              std::to_string(c.nodes_after) + " node(s) after it" +
              (c.first_after.empty() ? std::string() : " (from " + c.first_after + ")") + " have " + other +
              " records only: not recorded, not compared (a rank killed mid-replay, a cut rank file)";
  return f;
}

Finding divergence_finding(const NodeRankResult& r, const NodeGraphResult& g, const NodeDivergence& d,
                           const char* kind, const std::string& lead) {
  Finding f{Severity::Divergence, kind, {}, lead + describe(d, r.rank), divergence_json(d)};
  f.where.rank = r.rank;
  f.where.graph = g.graph;
  f.where.node = d.node_a;
  f.values["graph"] = g.graph;
  if (!g.graph_path.empty()) f.values["graph_path"] = g.graph_path;
  return f;
}

}  // namespace

void node_findings(const NodeRankResult& r, std::vector<Finding>& findings, std::vector<Check>& checks) {
  for (const auto& p : r.problems) findings.push_back(p);
  for (const auto& g : r.graphs) {
    if (g.first)
      findings.push_back(divergence_finding(r, g, *g.first, "node_divergence", "first divergent node "));
    for (const auto& d : g.other_origins)
      findings.push_back(divergence_finding(r, g, d, "node_origin", "also an origin: "));
    if (g.origins > (g.first && g.first->cause == DivergenceCause::Origin ? 1 : 0) + g.other_origins.size()) {
      Finding f{Severity::Info, "node_origins_truncated", {}, "", json::object()};
      f.where.rank = r.rank;
      f.where.graph = g.graph;
      f.message = std::to_string(g.origins) + " origins in all; the rest are not listed";
      findings.push_back(std::move(f));
    }
    if (g.xxh3_one_side > 0) {
      // A `--node-hash shard` run against a `both` run: what both carry is compared.
      Finding f{Severity::Info, "node_hashes_partial", {}, "", {{"outputs", g.xxh3_one_side}}};
      f.where.rank = r.rank;
      f.where.graph = g.graph;
      f.message = std::to_string(g.xxh3_one_side) +
                  " outputs carry XXH3-64 on one side only (replay --node-hash both vs shard): "
                  "compared by the shard hash, dtype and shape";
      findings.push_back(std::move(f));
    }
    for (const auto& c : g.cuts) findings.push_back(records_cut_finding(r, g, c));
    if (g.unmatched_a + g.unmatched_b > 0) {
      Finding f{Severity::Info,
                "node_unmatched",
                {},
                "",
                {{"baseline", g.unmatched_a}, {"candidate", g.unmatched_b}}};
      f.where.rank = r.rank;
      f.where.graph = g.graph;
      f.message = std::to_string(g.unmatched_a) + " baseline and " + std::to_string(g.unmatched_b) +
                  " candidate nodes with records have no counterpart (not compared)";
      findings.push_back(std::move(f));
    }
    Check c;
    c.name = "nodes " + g.graph;
    c.rank = r.rank;
    // A graph recorded in part proves nothing past where its records stop: never a pass.
    c.outcome = g.divergent > 0   ? Check::Outcome::Fail
                : !g.cuts.empty() ? Check::Outcome::Skipped
                                  : Check::Outcome::Pass;
    c.message = std::to_string(g.compared) + " nodes compared, " + std::to_string(g.divergent) + " divergent";
    for (const auto& cut : g.cuts) c.message += "; incomplete: " + records_cut_text(cut);
    if (g.views > 0) c.message += ", " + std::to_string(g.views) + " views followed their base";
    if (g.xxh3_one_side > 0)
      c.message +=
          ", " + std::to_string(g.xxh3_one_side) + " outputs by the shard hash only (one side has no xxh3)";
    if (g.first)
      c.message +=
          ", first " + g.first->node_a + " (" + std::string(divergence_cause_name(g.first->cause)) + ")";
    checks.push_back(std::move(c));
  }
}

json node_summary(const NodeRankResult& r) {
  json graphs = json::array();
  std::size_t compared = 0, divergent = 0;
  json first = nullptr;
  for (const auto& g : r.graphs) {
    compared += g.compared;
    divergent += g.divergent;
    json gj = {{"graph", g.graph},
               {"compared", g.compared},
               {"divergent", g.divergent},
               {"origins", g.origins},
               {"unmatched_baseline", g.unmatched_a},
               {"unmatched_candidate", g.unmatched_b},
               {"views", g.views},
               {"xxh3_one_side", g.xxh3_one_side},
               {"aligned_by_graph", g.aligned_by_graph}};
    gj["cuts"] = json::array();
    for (const auto& c : g.cuts)
      gj["cuts"].push_back({{"side", c.candidate ? "candidate" : "baseline"},
                            {"last_node", c.last_node},
                            {"last_output", c.last_output},
                            {"outputs_missing", c.outputs_missing},
                            {"nodes_after", c.nodes_after}});
    gj["first"] = g.first ? divergence_json(*g.first) : json(nullptr);
    if (g.first && first.is_null()) {
      first = gj["first"];
      first["graph"] = g.graph;
    }
    graphs.push_back(std::move(gj));
  }
  return {{"graphs", graphs}, {"compared", compared}, {"divergent", divergent}, {"first", first}};
}

std::string node_summary_line(const NodeRankResult& r) {
  for (const auto& g : r.graphs) {
    if (!g.first) continue;
    const auto& d = *g.first;
    if (d.cause == DivergenceCause::Received && d.cross_rank)
      return "rank " + std::to_string(r.rank) + ": " + d.cross_rank->text(d.node_a, r.rank) +
             " (first divergent node of " + g.graph + ")";
    std::string s = "rank " + std::to_string(r.rank) + ": first divergent node " + d.node_a + " (" + d.op;
    if (!d.source.empty()) s += ", " + d.source;
    s += ") in " + g.graph + ", " + std::string(divergence_cause_name(d.cause));
    if (d.cause == DivergenceCause::Propagated || d.cause == DivergenceCause::Unknown)
      if (d.cross_rank && d.cross_rank->origin.rank >= 0 && d.cross_rank->origin.rank != r.rank)
        s += " from " + d.cross_rank->origin.text() + " on rank " + std::to_string(d.cross_rank->origin.rank);
    return s;
  }
  return {};
}

std::vector<Finding> node_divergences_of_runs(const std::string& baseline, const std::string& candidate) {
  CollectingConsumer out;
  compare_runs(model::open_run(baseline), model::open_run(candidate), {}, out);
  std::vector<Finding> nodes;
  for (auto& f : out.findings) {
    if (f.kind == "node_divergence" || f.kind == "node_origin") nodes.push_back(std::move(f));
  }
  return nodes;
}

}  // namespace gparity::diff
