#include "diff/replay/node_causality.hpp"

namespace gparity::diff {

DivergenceCause divergence_cause_of(causality::Cause c) noexcept {
  switch (c) {
    case causality::Cause::Origin: return DivergenceCause::Origin;
    case causality::Cause::Propagated: return DivergenceCause::Propagated;
    case causality::Cause::Received: return DivergenceCause::Received;
    case causality::Cause::Input: return DivergenceCause::Input;
    case causality::Cause::Unknown: return DivergenceCause::Unknown;
  }
  return DivergenceCause::Unknown;
}

std::vector<Finding> classify_node_ranks(std::span<NodeRankResult> ranks,
                                         const causality::GroupTable& baseline,
                                         const causality::GroupTable& candidate,
                                         const NodeCompareOptions& o) {
  // Each rank's graphs, in record order, make one program: a graph's record positions are offset
  // by the records of the graphs before it.
  std::vector<causality::RankRecords> programs;
  std::vector<std::vector<std::size_t>> offsets;
  for (const auto& r : ranks) {
    auto& prog = programs.emplace_back();
    prog.rank = r.rank;
    auto& off = offsets.emplace_back();
    for (const auto& g : r.graphs) {
      off.push_back(prog.records.size());
      for (auto rec : g.causal) {
        for (auto& in : rec.inputs) in += off.back();
        prog.records.push_back(std::move(rec));
      }
    }
  }
  const auto result = causality::classify(programs, baseline, candidate);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto& r = ranks[k];
    for (std::size_t gi = 0; gi < r.graphs.size(); ++gi) {
      auto& g = r.graphs[gi];
      const auto apply = [&](NodeDivergence& d) {
        const auto* c = result.find(r.rank, offsets[k][gi] + d.position);
        if (c == nullptr) return;
        d.cross_rank = *c;
        d.cause = divergence_cause_of(c->cause);
        if (!c->after_graph.empty()) d.propagated_from = c->after_graph;
      };
      if (g.first) apply(*g.first);
      for (auto& d : g.local_origins) apply(d);
      g.origins = 0;
      g.other_origins.clear();
      for (const auto& d : g.local_origins) {
        if (d.cause != DivergenceCause::Origin) continue;
        ++g.origins;
        const bool is_first = g.first && g.first->position == d.position;
        if (!is_first && g.other_origins.size() < o.max_origins) g.other_origins.push_back(d);
      }
    }
  }
  return result.problems;
}

}  // namespace gparity::diff
