// classify_ranks: every rank's whole graph, the representative of each group built whole and
// compared against the first group's (rank_classification.hpp does the rest).

#include <algorithm>
#include <memory>
#include <vector>

#include "diff/graphs/rank_classification.hpp"
#include "diff/graphs/rank_classify.hpp"

namespace gparity::diff {

GraphClassification classify_ranks(std::span<const RankGraph> graphs, const GraphNormalization& norm,
                                   const RankLayout& layout) {
  if (graphs.empty()) return {};
  std::vector<RankGraph> sorted(graphs.begin(), graphs.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const RankGraph& x, const RankGraph& y) { return x.rank < y.rank; });
  RankClassificationBuilder b(layout);
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    model::Normalization n;
    if (norm.map_local_device) n.local_device = layout.local_device(sorted[i].rank);
    n.renumber_symbols = norm.renumber_symbols;
    n.ignore_process_groups = norm.ignore_process_groups;
    n.ignore_node_names = true;
    b.add_rank(model::fingerprint(*sorted[i].graph, n), sorted[i].rank, i);
  }
  const auto representative = [&](std::size_t g) {
    const RankGraph& r = sorted[b.representative(g)];
    return std::make_unique<NormalizedGraph>(*r.graph, norm, layout.local_device(r.rank));
  };
  const auto first = representative(0);
  b.set_first(*first);
  for (std::size_t g = 1; g < b.groups(); ++g) b.compare_whole(g, *representative(g));
  return b.finish();
}

}  // namespace gparity::diff
