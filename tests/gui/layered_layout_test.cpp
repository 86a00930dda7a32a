// The Qt-free layout core: layering, ordering, placement and grouping on hand-made graphs and on
// the sample export graph.
#include "gui/layout/layered_layout.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>

#include "core/model/graph/fx_text.hpp"
#include "gui/layout/view_graph.hpp"

namespace gparity::gui {
namespace {

LayoutInput make_input(std::uint32_t n, std::vector<LayoutEdge> edges) {
  return {std::vector<float>(n, 60.0f), std::move(edges)};
}

void expect_no_overlap(const LayoutInput& in, const LayoutResult& r, const LayoutOptions& o) {
  for (const auto& row : r.order)
    for (std::size_t i = 1; i < row.size(); ++i) {
      const float need = (in.widths[row[i - 1]] + in.widths[row[i]]) / 2 + o.node_gap;
      EXPECT_GE(r.x[row[i]] - r.x[row[i - 1]], need - 1e-3f) << "layer row overlaps";
    }
}

TEST(LayeredLayout, ChainGetsOneLayerPerNode) {
  const auto in = make_input(4, {{0, 1}, {1, 2}, {2, 3}});
  const LayoutOptions o;
  const auto r = LayeredLayout().layout(in, o, nullptr);
  ASSERT_EQ(r.layer.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(r.layer[i], i);
  EXPECT_LT(r.y[0], r.y[1]);
  EXPECT_LT(r.y[2], r.y[3]);
  EXPECT_FLOAT_EQ(r.x[0], r.x[3]);  // a chain stays vertical
  EXPECT_FLOAT_EQ(r.height, 4 * o.node_height + 3 * o.layer_gap);
}

TEST(LayeredLayout, SourcesSitJustAboveTheirFirstUser) {
  // 1 -> 2 -> 3 -> 4, and source 0 feeds only node 4: it belongs on layer 2, not on layer 0.
  const auto in = make_input(5, {{1, 2}, {2, 3}, {3, 4}, {0, 4}});
  const auto r = LayeredLayout().layout(in, {}, nullptr);
  EXPECT_EQ(r.layer[0], 2u);
  EXPECT_EQ(r.layer[4], 3u);
  EXPECT_EQ(r.layer[1], 0u);
}

TEST(LayeredLayout, LongestPathDecidesTheLayer) {
  // 3 uses 0 directly and through 1 -> 2: it must sit below 2.
  const auto in = make_input(4, {{0, 1}, {1, 2}, {0, 3}, {2, 3}});
  const auto r = LayeredLayout().layout(in, {}, nullptr);
  EXPECT_EQ(r.layer[3], 3u);
}

TEST(LayeredLayout, BarycentricOrderingRemovesAvoidableCrossings) {
  // Sources a=0, b=1 (placed a left of b); c=2 uses b, d=3 uses a. Graph order puts c first, a
  // crossing the barycentric sweep must undo.
  const auto in = make_input(4, {{1, 2}, {0, 3}});
  LayoutOptions none;
  none.ordering_sweeps = 0;
  const auto unordered = LayeredLayout().layout(in, none, nullptr);
  EXPECT_EQ(count_adjacent_crossings(in, unordered), 1u);
  const auto r = LayeredLayout().layout(in, {}, nullptr);
  EXPECT_EQ(count_adjacent_crossings(in, r), 0u);
  expect_no_overlap(in, r, {});
}

TEST(LayeredLayout, BackEdgesAreIgnoredForLayering) {
  const auto in = make_input(3, {{0, 1}, {1, 2}, {2, 0}});
  const auto r = LayeredLayout().layout(in, {}, nullptr);
  EXPECT_EQ(r.layer[0], 0u);
  EXPECT_EQ(r.layer[2], 2u);
}

TEST(LayeredLayout, WideLayerDoesNotOverlap) {
  // One root with 50 children of different widths.
  LayoutInput in;
  in.widths.push_back(60);
  for (std::uint32_t i = 1; i <= 50; ++i) {
    in.widths.push_back(60.0f + static_cast<float>(i % 7) * 20);
    in.edges.push_back({0, i});
  }
  const auto r = LayeredLayout().layout(in, {}, nullptr);
  ASSERT_EQ(r.order.size(), 2u);
  EXPECT_EQ(r.order[1].size(), 50u);
  expect_no_overlap(in, r, {});
  // The root is centred over its children.
  EXPECT_NEAR(r.x[0], (r.x[r.order[1].front()] + r.x[r.order[1].back()]) / 2, 40.0f);
}

TEST(LayeredLayout, CancelledBeforeStartReturnsCancelled) {
  const auto in = make_input(3, {{0, 1}, {1, 2}});
  std::atomic<bool> cancel{true};
  EXPECT_TRUE(LayeredLayout().layout(in, {}, &cancel).cancelled);
}

TEST(LayeredLayout, EmptyInput) {
  const auto r = LayeredLayout().layout({}, {}, nullptr);
  EXPECT_TRUE(r.x.empty());
  EXPECT_FALSE(r.cancelled);
}

model::Graph export_graph() {
  const std::string path = GPARITY_SOURCE_DIR "/tests/data/graph/eager/tiny_export_graph.txt";
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return model::parse_fx_text(s.str(), path);
}

TEST(ViewGraph, GroupsAreContiguousRunsOfOneSourceStatement) {
  const auto g = export_graph();
  const auto grouping = group_nodes(g, 4);
  ASSERT_FALSE(grouping.groups.empty());
  for (std::size_t gi = 0; gi < grouping.groups.size(); ++gi) {
    const auto& grp = grouping.groups[gi];
    EXPECT_GE(grp.count, 2u);
    EXPECT_LE(grp.count, 4u) << "oversized groups are split";
    const auto& first = g.node(grp.first);
    for (auto n = grp.first; n < grp.first + grp.count; ++n) {
      EXPECT_EQ(grouping.group_of[n], gi);
      EXPECT_EQ(g.str(g.node(n).source.file), g.str(first.source.file));
      EXPECT_EQ(g.node(n).source.line, first.source.line);
    }
    EXPECT_NE(grp.label.find(':' + std::to_string(first.source.line)), std::string::npos) << grp.label;
  }
}

TEST(ViewGraph, CollapsingMergesBoxesAndEdges) {
  const auto g = export_graph();
  const model::UseEdges edges(g);
  const auto grouping = group_nodes(g);
  const auto expanded = build_view(g, edges, grouping, std::vector<char>(grouping.groups.size(), 0));
  EXPECT_EQ(expanded.items.size(), g.nodes.size());
  std::size_t use_edges = 0;
  for (model::NodeId i = 0; i < g.nodes.size(); ++i) use_edges += edges.inputs(i).size();
  EXPECT_EQ(expanded.input.edges.size(), use_edges);

  const auto collapsed = build_view(g, edges, grouping, std::vector<char>(grouping.groups.size(), 1));
  std::size_t grouped = 0;
  for (const auto& grp : grouping.groups) grouped += grp.count;
  EXPECT_EQ(collapsed.items.size(), g.nodes.size() - grouped + grouping.groups.size());
  std::set<std::pair<std::uint32_t, std::uint32_t>> distinct;
  for (const auto& e : collapsed.input.edges) {
    EXPECT_NE(e.from, e.to);
    EXPECT_TRUE(distinct.insert({e.from, e.to}).second) << "duplicate edge";
  }
  const auto r = LayeredLayout().layout(collapsed.input, {}, nullptr);
  expect_no_overlap(collapsed.input, r, {});
}

}  // namespace
}  // namespace gparity::gui
