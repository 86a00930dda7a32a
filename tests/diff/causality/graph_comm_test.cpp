// Which graph nodes communicate (diff/causality/graph_comm.*): functional collectives on the
// group their argument names (positional or group_name=), legacy rank-list forms as "ranks:...",
// wait_tensor and local ops not at all; and the process-group table as the causal order reads it.

#include "diff/causality/graph_comm.hpp"

#include <gtest/gtest.h>

#include "tests/support/graph_test_support.hpp"

namespace {

using namespace gparity;
using diff::causality::Comm;

const char* kBody =
    R"(all_reduce: "f32[8, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '3')
wait_tensor: "f32[8, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
gather: "f32[16, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, group_name = '5')
legacy: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.c10d_functional.all_reduce.default(x, 'sum', '', [2, 3], 2)
a2a: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.c10d_functional.all_to_all_single.default(x, [4, 4], [4, 4], '', [0, 1], 2)
mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
return (wait_tensor, gather, legacy, a2a, mm))";

std::optional<Comm> comm(const model::Graph& g, const char* name) {
  const auto id = g.find_node(name);
  EXPECT_NE(id, model::kNoNode) << name;
  return diff::causality::comm_of_node(g, id);
}

TEST(GraphComm, FunctionalCollectivesNameTheirGroup) {
  const auto g = gparity::testing::fx_graph(kBody);
  ASSERT_TRUE(comm(g, "all_reduce"));
  EXPECT_EQ(comm(g, "all_reduce")->group, "3");
  EXPECT_EQ(comm(g, "all_reduce")->kind, Comm::Kind::Collective);
  ASSERT_TRUE(comm(g, "gather"));
  EXPECT_EQ(comm(g, "gather")->group, "5");
  ASSERT_TRUE(comm(g, "legacy"));
  EXPECT_EQ(comm(g, "legacy")->group, "ranks:2,3");
  ASSERT_TRUE(comm(g, "a2a"));
  EXPECT_EQ(comm(g, "a2a")->group, "ranks:0,1") << "the split sizes are not the rank list";
  EXPECT_FALSE(comm(g, "wait_tensor")) << "wait_tensor is local: the collective completed";
  EXPECT_FALSE(comm(g, "mm"));
  EXPECT_FALSE(comm(g, "x"));
}

TEST(GraphComm, GroupTableKeepsRanksAndDescriptions) {
  model::ProcessGroupTable t;
  auto tp = model::parse_group_spec("3=1,0");
  tp.desc = "mesh_tp";
  t.add(tp);
  t.add(model::parse_group_spec("0=0-3"));
  const auto g = diff::causality::group_table(t);
  ASSERT_EQ(g.size(), 2U);
  EXPECT_EQ(g.at("3").ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.at("3").desc, "mesh_tp");
  EXPECT_EQ(g.at("0").ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(diff::causality::group_text("3", "mesh_tp"), "tp '3'");
  EXPECT_EQ(diff::causality::group_text("0", ""), "'0'");
}

}  // namespace
