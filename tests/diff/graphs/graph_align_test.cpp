// Node alignment and two-graph diff on graphs written here: renamed nodes align by structure,
// inserted / removed / changed / moved nodes are each reported as such, and normalizations
// (local device, symbols) are applied and named.

#include <gtest/gtest.h>

#include "diff/graphs/graph_diff.hpp"
#include "tests/support/graph_test_support.hpp"

namespace {

using namespace gparity::diff;
using gparity::model::Graph;
using gparity::testing::fx_graph;
using gparity::testing::replace_all;

const std::string kBody = R"(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
relu: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.relu.default(mm)
mul: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mul.Tensor(relu, 2)
sin: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.sin.default(x)
cos: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.cos.default(w)
add: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.add.Tensor(mul, sin)
return (add, cos))";

GraphDiffResult diff(const Graph& a, const Graph& b, const GraphNormalization& norm = {},
                     std::optional<int> la = 0, std::optional<int> lb = 0) {
  const NormalizedGraph na(a, norm, la);
  const NormalizedGraph nb(b, norm, lb);
  return diff_graphs(na, nb);
}

TEST(GraphAlign, IdenticalGraphsMatchByName) {
  const Graph a = fx_graph(kBody);
  const auto r = diff(a, a);
  EXPECT_TRUE(r.identical());
  EXPECT_EQ(r.summary.by_name, a.nodes.size());
  EXPECT_EQ(r.summary.unchanged, a.nodes.size());
}

TEST(GraphAlign, RenamedNodesAlignByStructure) {
  const Graph a = fx_graph(kBody);
  std::string renamed = kBody;
  for (const char* n : {"mm", "relu", "mul", "sin", "cos", "add"})
    renamed = replace_all(renamed, std::string(n) + ":", std::string("n_") + n + ":");
  renamed = replace_all(replace_all(renamed, "(mm)", "(n_mm)"), "(relu, 2)", "(n_relu, 2)");
  renamed = replace_all(replace_all(renamed, "(mul, sin)", "(n_mul, n_sin)"), "(add, cos)", "(n_add, n_cos)");
  const Graph b = fx_graph(renamed);
  ASSERT_EQ(b.node_name(2), "n_mm");
  const auto r = diff(a, b);
  EXPECT_TRUE(r.identical()) << r.changes.size() << " changes";
  EXPECT_EQ(r.summary.by_structure, 6U);  // the six renamed nodes; x, w, output keep their names
  for (std::size_t i = 0; i < a.nodes.size(); ++i) EXPECT_EQ(r.alignment.a_to_b[i], i);
}

TEST(GraphAlign, InsertedNodeIsAddedAndNothingElseChanges) {
  const Graph a = fx_graph(kBody);
  // relu_1 inserted between relu and mul; mul now reads it.
  std::string body =
      replace_all(kBody, "mul: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.mul.Tensor(relu, 2)",
                  "relu_1: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.neg.default(relu)\n"
                  "mul: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.mul.Tensor(relu_1, 2)");
  const Graph b = fx_graph(body);
  const auto r = diff(a, b);
  EXPECT_EQ(r.summary.added, 1U);
  EXPECT_EQ(r.summary.removed, 0U);
  ASSERT_EQ(r.summary.changed, 1U);  // mul reads the new node
  for (const auto& c : r.changes) {
    if (c.added()) {
      EXPECT_EQ(b.node_name(c.b), "relu_1");
    }
    if (!c.fields.empty()) {
      EXPECT_EQ(a.node_name(c.a), "mul");
      ASSERT_EQ(c.fields.size(), 1U);
      EXPECT_EQ(c.fields[0].path, "args[0]");
      EXPECT_EQ(c.fields[0].b_text, "relu_1");
    }
  }
}

TEST(GraphAlign, RemovedNode) {
  const Graph a = fx_graph(kBody);
  const Graph b = fx_graph(replace_all(
      replace_all(kBody, "cos: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.cos.default(w)\n", ""),
      "(add, cos)", "(add, w)"));
  const auto r = diff(a, b);
  EXPECT_EQ(r.summary.removed, 1U);
  EXPECT_EQ(r.summary.added, 0U);
  bool saw = false;
  for (const auto& c : r.changes) saw = saw || (c.removed() && a.node_name(c.a) == "cos");
  EXPECT_TRUE(saw);
}

TEST(GraphAlign, ChangedLiteralNamesTheField) {
  const Graph a = fx_graph(kBody);
  const Graph b = fx_graph(replace_all(kBody, "(relu, 2)", "(relu, 3)"));
  const auto r = diff(a, b);
  ASSERT_EQ(r.changes.size(), 1U);
  EXPECT_EQ(a.node_name(r.changes[0].a), "mul");
  ASSERT_EQ(r.changes[0].fields.size(), 1U);
  EXPECT_EQ(r.changes[0].fields[0].path, "args[1]");
  EXPECT_EQ(r.changes[0].fields[0].a_text, "2");
  EXPECT_EQ(r.changes[0].fields[0].b_text, "3");
}

TEST(GraphAlign, RenamedAndChangedStillPairs) {
  // Names differ and the literal differs: only the sequence phase can pair them.
  const Graph a = fx_graph(kBody);
  const Graph b = fx_graph(replace_all(
      replace_all(replace_all(kBody, "(relu, 2)", "(relu, 3)"), "mul:", "m2:"), "(mul, sin)", "(m2, sin)"));
  const auto r = diff(a, b);
  EXPECT_EQ(r.summary.added + r.summary.removed, 0U);
  ASSERT_EQ(r.summary.changed, 1U);
}

TEST(GraphAlign, ReorderedIndependentNodesAreMoved) {
  const Graph a = fx_graph(kBody);
  // cos moved to the front: still topological, no field changes.
  const std::string cos = "cos: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.cos.default(w)\n";
  const Graph b = fx_graph(cos + replace_all(kBody, cos, ""));
  const auto r = diff(a, b);
  EXPECT_EQ(r.summary.added + r.summary.removed + r.summary.changed, 0U);
  ASSERT_EQ(r.summary.moved, 1U);
  for (const auto& c : r.changes) EXPECT_EQ(a.node_name(c.a), "cos");
}

TEST(GraphAlign, LocalDeviceNormalization) {
  const Graph a = fx_graph(kBody, 0);
  const Graph b = fx_graph(kBody, 3);
  EXPECT_TRUE(diff(a, b, {}, 0, 3).identical());
  // Without knowing b's rank, cuda:3 is not local: every annotation differs.
  const auto r = diff(a, b, {}, 0, std::nullopt);
  EXPECT_EQ(r.summary.changed, a.nodes.size() - 1);  // all but the output node
  EXPECT_EQ(r.changes[0].fields[0].path, "meta.device");
  GraphNormalization off;
  off.map_local_device = false;
  EXPECT_FALSE(diff(a, b, off, 0, 3).identical());
}

TEST(GraphAlign, SymbolRenumbering) {
  const std::string body =
      "v: \"f32[s77, 64][64, 1]cuda:0\" = torch.ops.aten.view.default(x, [s77, 64])\nreturn (v,)";
  const Graph a = fx_graph(body);
  const Graph b = fx_graph(replace_all(body, "s77", "s3"));
  EXPECT_FALSE(diff(a, b).identical());
  GraphNormalization n;
  n.renumber_symbols = true;
  const auto r = diff(a, b, n);
  EXPECT_TRUE(r.identical());
  EXPECT_NE(std::find(r.normalizations.begin(), r.normalizations.end(), "symbols"), r.normalizations.end());
}

}  // namespace
