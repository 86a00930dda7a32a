// Node-record comparison (diff/node_compare.*) on hand-written node records: the origin of a
// divergence vs nodes it propagated to, a graph input that differs (and one that differs because
// the forward graph diverged), nodes renamed in the candidate aligned by structure, a second
// independent origin, a rank with no divergence; and end to end through
// `compare_runs` on trace directories with "graph" + "node" records (a damaged node record: the
// reader's issue, the rest compared); across ranks (classify_node_ranks, compare_runs with the
// runs' group tables): a rank that only received a partner's divergence through an all-reduce,
// the partner's origin reported first, and group tables that differ between the runs named.

#include "diff/replay/node_compare.hpp"

#include <gtest/gtest.h>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/graph_json.hpp"
#include "core/model/run/run_source.hpp"
#include "core/model/run/trace_writer.hpp"
#include "diff/runs/run_compare.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity;
using diff::DivergenceCause;
using model::NodeRecord;

// x, w -> mm -> relu -> add(relu, x); and a second branch t = tanh(x) -> mul(t, t).
const char* kBody = R"(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w);  x = None
relu: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.relu.default(mm);  mm = None
add: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.add.Tensor(relu, x)
tanh: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.tanh.default(x)
mul: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mul.Tensor(tanh, tanh)
return (add, mul))";

// The same graph with every computed node renamed.
const char* kRenamed = R"(mm_3: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w);  x = None
relu_7: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.relu.default(mm_3);  mm_3 = None
add_2: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.add.Tensor(relu_7, x)
tanh_9: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.tanh.default(x)
mul_1: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mul.Tensor(tanh_9, tanh_9)
return (add_2, mul_1))";

const std::string kGraphLabel = "aot_forward_graph 0/0";

NodeRecord rec(const std::string& node, const std::string& op, std::uint64_t hash, int line = 0,
               const std::string& graph = kGraphLabel) {
  NodeRecord r;
  r.graph = graph;
  r.node = node;
  r.op = op;
  r.source = "/workspace/train.py:" + std::to_string(40 + line);
  r.dtype = model::DType::F32;
  r.shape = {8, 64};
  r.xxh3 = hash;
  r.shard = hash;
  return r;
}

constexpr std::uint64_t kH1 = 1;
constexpr std::uint64_t kH2 = 2;

/// Records of the graph with every hash kH1, except for nodes listed in `differ` (kH2).
std::vector<NodeRecord> records(const std::vector<std::string>& names,
                                const std::vector<std::string>& differ = {}) {
  std::vector<NodeRecord> out;
  int line = 0;
  for (const auto& n : names) {
    const bool d = std::find(differ.begin(), differ.end(), n) != differ.end();
    const bool input = n == "x" || n == "w";
    out.push_back(rec(n, input ? "placeholder" : "aten." + n.substr(0, n.find('_')) + ".default",
                      d ? kH2 : kH1, line++));
  }
  return out;
}

const std::vector<std::string> kNames = {"x", "w", "mm", "relu", "add", "tanh", "mul"};
const std::vector<std::string> kRenamedNames = {"x", "w", "mm_3", "relu_7", "add_2", "tanh_9", "mul_1"};

TEST(NodeCompare, FirstDivergentNodeIsTheOriginWhenItsInputsWereEqual) {
  const auto g = gparity::testing::fx_graph(kBody);
  const auto a = records(kNames);
  const auto b = records(kNames, {"mm", "relu", "add"});
  const auto r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "mm");
  EXPECT_EQ(r.first->op, "aten.mm.default");
  EXPECT_EQ(r.first->source, "/workspace/train.py:42");
  EXPECT_EQ(r.first->cause, DivergenceCause::Origin);
  EXPECT_TRUE(r.first->differing_inputs.empty());
  EXPECT_EQ(r.first->fields, (std::vector<std::string>{"xxh3", "shard"}));
  EXPECT_EQ(r.compared, 7U);
  EXPECT_EQ(r.divergent, 3U);
  EXPECT_EQ(r.origins, 1U) << "relu and add only propagate mm's divergence";
  EXPECT_TRUE(r.other_origins.empty());
  EXPECT_TRUE(r.aligned_by_graph);
}

TEST(NodeCompare, PropagatedDivergencesAndDifferentGraphInputs) {
  const auto g = gparity::testing::fx_graph(kBody);
  // x differs: it is a graph input; everything reading it propagates.
  const auto a = records(kNames);
  const auto b = records(kNames, {"x", "mm", "relu", "add", "tanh", "mul"});
  const auto r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "x");
  EXPECT_EQ(r.first->cause, DivergenceCause::Input);
  EXPECT_EQ(r.divergent, 6U);
  EXPECT_EQ(r.origins, 0U);

  // Placeholders not recorded: mm is first, reads unrecorded x and w (taken as equal, listed).
  const std::vector<std::string> computed = {"mm", "relu", "add", "tanh", "mul"};
  const auto a2 = records(computed);
  const auto b2 = records(computed, {"mm", "add"});
  const auto r2 = diff::compare_node_graph(kGraphLabel, {a2, &g}, {b2, &g});
  ASSERT_TRUE(r2.first);
  EXPECT_EQ(r2.first->node_a, "mm");
  EXPECT_EQ(r2.first->cause, DivergenceCause::Origin);
  EXPECT_EQ(r2.first->unrecorded_inputs, (std::vector<std::string>{"x", "w"}));
  // relu compared equal (mm's difference did not reach its output), so add, reading relu and x,
  // starts a divergence of its own.
  EXPECT_EQ(r2.origins, 2U);
  ASSERT_EQ(r2.other_origins.size(), 1U);
  EXPECT_EQ(r2.other_origins[0].node_a, "add");
}

TEST(NodeCompare, IndependentOriginsAreAllReported) {
  const auto g = gparity::testing::fx_graph(kBody);
  const auto a = records(kNames);
  const auto b = records(kNames, {"relu", "add", "tanh", "mul"});  // relu and tanh both start one
  const auto r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "relu");
  EXPECT_EQ(r.first->cause, DivergenceCause::Origin);
  ASSERT_EQ(r.other_origins.size(), 1U);
  EXPECT_EQ(r.other_origins[0].node_a, "tanh");
  EXPECT_EQ(r.origins, 2U);
}

TEST(NodeCompare, RenamedNodesAlignByStructure) {
  const auto ga = gparity::testing::fx_graph(kBody);
  const auto gb = gparity::testing::fx_graph(kRenamed);
  const auto a = records(kNames);
  auto b = records(kRenamedNames);
  auto r = diff::compare_node_graph(kGraphLabel, {a, &ga}, {b, &gb});
  EXPECT_FALSE(r.first);
  EXPECT_EQ(r.compared, 7U);
  EXPECT_EQ(r.unmatched_a + r.unmatched_b, 0U);

  b = records(kRenamedNames, {"relu_7", "add_2"});
  r = diff::compare_node_graph(kGraphLabel, {a, &ga}, {b, &gb});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "relu");
  EXPECT_EQ(r.first->node_b, "relu_7");
  EXPECT_EQ(r.first->matched_by, "structure");
  EXPECT_EQ(r.first->cause, DivergenceCause::Origin);

  // Without the graphs, names cannot pair renamed nodes: nothing but x and w is compared.
  const auto by_name = diff::compare_node_graph(kGraphLabel, {a, nullptr}, {b, nullptr});
  EXPECT_FALSE(by_name.aligned_by_graph);
  EXPECT_EQ(by_name.compared, 2U);
  EXPECT_EQ(by_name.unmatched_a, 5U);
  EXPECT_EQ(by_name.unmatched_b, 5U);
}

TEST(NodeCompare, ShapeDtypeAndMissingOutputsDiffer) {
  const auto g = gparity::testing::fx_graph(kBody);
  const auto a = records(kNames);
  auto b = records(kNames);
  b[3].shape = {8, 32};  // relu
  auto r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "relu");
  EXPECT_EQ(r.first->fields, (std::vector<std::string>{"shape"}));

  b = records(kNames);
  auto extra = b[5];
  extra.output = 1;  // tanh gains a second output in the candidate
  b.push_back(extra);
  r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "tanh");
  EXPECT_EQ(r.first->output, 1);
  EXPECT_EQ(r.first->fields, (std::vector<std::string>{"missing"}));
}

TEST(NodeCompare, RecordsOfNodesTheGraphLacksAreComparedByNameAfterIt) {
  const auto g = gparity::testing::fx_graph(kBody);
  std::vector<std::string> names = kNames;
  for (int i = 0; i < 40; ++i) names.push_back("extra_" + std::to_string(i));  // grows the visit order
  const auto a = records(names);
  const auto b = records(names, {"extra_39"});
  const auto r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  EXPECT_EQ(r.compared, 47U);
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "extra_39");
  EXPECT_EQ(r.first->cause, DivergenceCause::Unknown) << "not in the graph: its inputs are unknown";
}

TEST(NodeCompare, RecordsAreTheReadersNodeRecordsGroupedPerGraph) {
  model::RankTrace t;
  t.nodes = records(kNames);
  auto other = rec("mm", "aten.mm.default", kH2, 0, "aot_backward_graph 0/0");
  t.nodes.insert(t.nodes.begin() + 2, other);
  const auto n = diff::node_records_of(t);
  ASSERT_EQ(n.graphs.size(), 2U);
  EXPECT_EQ(n.graphs[0].label, kGraphLabel);
  EXPECT_EQ(n.graphs[0].records.size(), kNames.size());
  EXPECT_EQ(n.graphs[1].label, "aot_backward_graph 0/0");
  ASSERT_EQ(n.graphs[1].records.size(), 1U);
  EXPECT_EQ(n.graphs[1].records[0].xxh3, kH2);
  ASSERT_NE(n.find("aot_backward_graph 0/0"), nullptr);
  EXPECT_EQ(n.find("nope"), nullptr);
  EXPECT_TRUE(diff::node_records_of(model::RankTrace{}).empty());
}

// ---- views and partial hashes (issue 24) ---------------------------------------------------------

// t = x transposed (a view of the input), mm, sl = mm's first 4 rows (a view of mm), relu(sl).
const char* kViewBody = R"(t: "f32[64, 8][1, 64]cuda:{d}" = torch.ops.aten.t.default(x)
mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
sl: "f32[4, 64][64, 1]cuda:{d}" = torch.ops.aten.slice.Tensor(mm, 0, 0, 4)
relu: "f32[4, 64][64, 1]cuda:{d}" = torch.ops.aten.relu.default(sl)
return (relu, sl))";

/// A view record as replay writes it: no hash, the base named, where it lies in it.
NodeRecord view_rec(const std::string& node, const std::string& op, const std::string& base,
                    std::int64_t offset, std::vector<std::int64_t> stride, std::vector<std::int64_t> shape,
                    std::vector<std::int64_t> base_stride = {64, 1}) {
  NodeRecord r = rec(node, op, 0);
  r.has_xxh3 = r.has_shard = false;
  r.shard = r.xxh3 = 0;
  r.shape = std::move(shape);
  r.view = model::NodeView{base, 0, offset, std::move(stride), std::move(base_stride)};
  return r;
}

NodeRecord output_view(NodeRecord r) {
  r.output = 1;
  return r;
}

/// x, w, t (view of x), mm, sl (view of mm at `offset` rows), relu; mm's and relu's hashes given.
std::vector<NodeRecord> view_records(std::uint64_t mm, std::uint64_t relu, std::int64_t sl_offset = 0,
                                     std::vector<std::int64_t> mm_stride = {64, 1}) {
  return {rec("x", "placeholder", kH1),
          rec("w", "placeholder", kH1),
          view_rec("t", "aten.t.default", "x", 0, {1, 64}, {64, 8}),
          rec("mm", "aten.mm.default", mm),
          view_rec("sl", "aten.slice.Tensor", "mm", sl_offset, {64, 1}, {4, 64}, std::move(mm_stride)),
          rec("relu", "aten.relu.default", relu),
          rec("output", "output", relu),
          output_view(view_rec("output", "output", "mm", sl_offset, {64, 1}, {4, 64}))};
}

TEST(NodeCompare, AViewFollowsItsBaseAndIsNeverComparedByHash) {
  const auto g = gparity::testing::fx_graph(kViewBody);
  // Equal: the views are not counted as compared, they followed their bases.
  auto r = diff::compare_node_graph(kGraphLabel, {view_records(kH1, kH1), &g}, {view_records(kH1, kH1), &g});
  EXPECT_FALSE(r.first);
  EXPECT_EQ(r.views, 2U);
  EXPECT_EQ(r.compared, 5U);  // x, w, mm, relu, output (its relu element; sl's follows mm)
  // mm differs: sl lies in mm, so relu (reading only sl) propagates mm's divergence.
  r = diff::compare_node_graph(kGraphLabel, {view_records(kH1, kH1), &g}, {view_records(kH2, kH2), &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "mm");
  EXPECT_EQ(r.first->cause, DivergenceCause::Origin);
  EXPECT_EQ(r.origins, 1U) << "relu reads the view of the divergent mm";
  EXPECT_EQ(r.divergent, 3U);  // mm, relu, output
  // The same without graphs: the records name the view's base, so relu still sees it.
  const auto a = view_records(kH1, kH1), b = view_records(kH2, kH2);
  const auto by_name = diff::compare_node_graph(kGraphLabel, {a, nullptr}, {b, nullptr});
  ASSERT_GE(by_name.causal.size(), 5U);
  EXPECT_EQ(by_name.causal[4].node, "sl");
  EXPECT_FALSE(by_name.causal[4].compared);
  EXPECT_EQ(by_name.causal[4].inputs, (std::vector<std::size_t>{3}));  // mm, its base
}

TEST(NodeCompare, AViewPlacedElsewhereInAnEqualBaseIsTheOrigin) {
  const auto g = gparity::testing::fx_graph(kViewBody);
  // The candidate slices rows 4..7 of an equal mm: sl reads other elements (a rank-dependent
  // slice bound), so it is where the divergence starts, not relu.
  const auto r = diff::compare_node_graph(kGraphLabel, {view_records(kH1, kH1), &g},
                                          {view_records(kH1, kH2, 4 * 64), &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "sl");
  EXPECT_EQ(r.first->fields, (std::vector<std::string>{"view"}));
  EXPECT_EQ(r.first->cause, DivergenceCause::Origin);
  EXPECT_EQ(r.origins, 1U);
  std::vector<diff::Finding> findings;
  std::vector<diff::Check> checks;
  diff::NodeRankResult rank;
  rank.graphs.push_back(r);
  diff::node_findings(rank, findings, checks);
  ASSERT_FALSE(findings.empty());
  EXPECT_NE(findings[0].message.find("view of mm at offset 0 strides [64, 1] vs of mm at offset 256"),
            std::string::npos)
      << findings[0].message;
  // Bases laid out differently (other strides): the offsets cannot be compared, the view follows
  // its (equal) base, and relu is where the difference shows.
  const auto other_layout = diff::compare_node_graph(kGraphLabel, {view_records(kH1, kH1), &g},
                                                     {view_records(kH1, kH2, 4, {1, 8}), &g});
  ASSERT_TRUE(other_layout.first);
  EXPECT_EQ(other_layout.first->node_a, "relu");
}

TEST(NodeCompare, AShardOnlyRunAgainstABothRunComparesTheShardHashAndSaysSo) {
  const auto g = gparity::testing::fx_graph(kBody);
  const auto a = records(kNames);  // XXH3 and shard
  auto b = records(kNames);
  for (auto& x : b) {
    x.has_xxh3 = false;
    x.xxh3 = 0;
  }
  auto r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  EXPECT_FALSE(r.first) << "XXH3 on one side only is not a difference";
  EXPECT_EQ(r.xxh3_one_side, kNames.size());
  diff::NodeRankResult rank;
  rank.graphs.push_back(r);
  std::vector<diff::Finding> findings;
  std::vector<diff::Check> checks;
  diff::node_findings(rank, findings, checks);
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].kind, "node_hashes_partial");
  ASSERT_EQ(checks.size(), 1U);
  EXPECT_NE(checks[0].message.find("7 outputs by the shard hash only"), std::string::npos)
      << checks[0].message;
  EXPECT_EQ(diff::node_summary(rank)["graphs"][0]["xxh3_one_side"], 7);
  // The shard hash still tells a divergence.
  b[3].shard = kH2;  // relu
  r = diff::compare_node_graph(kGraphLabel, {a, &g}, {b, &g});
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->node_a, "relu");
  EXPECT_EQ(r.first->fields, (std::vector<std::string>{"shard"}));
}

// ---- end to end: run directories ------------------------------------------------------------------

/// A replay run: per rank a "graph" record (our graph JSON beside the trace) and node records.
void write_replay_run(const std::filesystem::path& dir, const model::Graph& g,
                      const std::vector<std::vector<NodeRecord>>& per_rank) {
  model::RunManifest m;
  m.world_size = static_cast<int>(per_rank.size());
  model::write_manifest(dir, m);
  {
    std::ofstream f(dir / "forward.json");
    f << model::graph_to_json(g).dump();
  }
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    model::TraceWriter w(dir, static_cast<int>(r));
    model::GraphRef ref;
    ref.path = "forward.json";
    ref.kind = "aot_forward_graph";
    ref.compile_id = "0/0";
    w.write_graph(ref);
    for (const auto& rec : per_rank[r]) w.write_node(rec);
  }
}

TEST(NodeCompare, CompareRunsReportsTheFirstDivergentNodePerRank) {
  gparity::testing::TempDir tmp;
  const auto ga = gparity::testing::fx_graph(kBody);
  const auto gb = gparity::testing::fx_graph(kRenamed);
  write_replay_run(tmp.path() / "a", ga, {records(kNames), records(kNames)});
  // Rank 0: identical (renamed nodes); rank 1: tanh is an origin.
  write_replay_run(tmp.path() / "b", gb,
                   {records(kRenamedNames), records(kRenamedNames, {"tanh_9", "mul_1"})});
  diff::CollectingConsumer out;
  const int rc = diff::compare_runs(model::open_run((tmp.path() / "a").string()),
                                    model::open_run((tmp.path() / "b").string()), {}, out);
  EXPECT_EQ(rc, 1);
  std::vector<const diff::Finding*> divergences;
  for (const auto& f : out.findings) {
    if (f.kind == "node_divergence") divergences.push_back(&f);
    EXPECT_NE(f.kind, "node_graph_unavailable") << f.message;
  }
  ASSERT_EQ(divergences.size(), 1U);
  const auto& f = *divergences[0];
  EXPECT_EQ(f.where.rank, 1);
  EXPECT_EQ(f.where.graph, kGraphLabel);
  EXPECT_EQ(f.where.node, "tanh");
  EXPECT_EQ(f.values["node_b"], "tanh_9");
  EXPECT_EQ(f.values["cause"], "origin");
  EXPECT_EQ(f.values["matched_by"], "structure");
  EXPECT_NE(f.message.find("origin: its inputs were equal"), std::string::npos) << f.message;
  int pass = 0, fail = 0;
  for (const auto& c : out.checks) {
    if (c.name != "nodes " + kGraphLabel) continue;
    (c.outcome == diff::Check::Outcome::Pass ? pass : fail)++;
  }
  EXPECT_EQ(pass, 1);
  EXPECT_EQ(fail, 1);
  const auto& summary = out.verdict.summary;
  EXPECT_NE(std::find(summary.begin(), summary.end(),
                      "rank 1: first divergent node tanh (aten.tanh.default, /workspace/train.py:45) in "
                      "aot_forward_graph 0/0, origin"),
            summary.end());
  EXPECT_NE(std::find(summary.begin(), summary.end(), "rank 0 identical"), summary.end());
}

// Issue 24: node records hashed with shard spec v1 against v2 (docs/hashing.md). The shard hashes
// differ everywhere, yet that is no divergence: XXH3 compares them; without XXH3 on one side the
// values are not compared, and the comparison says INCOMPLETE (exit 1), never divergent or equal.
std::vector<NodeRecord> as_v2(std::vector<NodeRecord> rs, bool keep_xxh3) {
  for (auto& r : rs) {
    r.shard_spec = 2;
    r.shard = ~r.shard;
    r.has_xxh3 = keep_xxh3;
  }
  return rs;
}

TEST(NodeCompare, ShardSpecV1AgainstV2ComparesByXxh3AndIsNeverADivergence) {
  gparity::testing::TempDir tmp;
  const auto g = gparity::testing::fx_graph(kBody);
  write_replay_run(tmp.path() / "a", g, {records(kNames)});
  write_replay_run(tmp.path() / "b", g, {as_v2(records(kNames), true)});
  write_replay_run(tmp.path() / "c", g, {as_v2(records(kNames, {"relu", "add"}), true)});
  write_replay_run(tmp.path() / "d", g, {as_v2(records(kNames), false)});
  const auto run = [&](const char* other, diff::CollectingConsumer& out) {
    return diff::compare_runs(model::open_run((tmp.path() / "a").string()),
                              model::open_run((tmp.path() / other).string()), {}, out);
  };
  const auto kinds = [](const diff::CollectingConsumer& out) {
    std::vector<std::string> k;
    for (const auto& f : out.findings) k.push_back(f.kind);
    return k;
  };
  const auto has = [](const std::vector<std::string>& k, const char* kind) {
    return std::find(k.begin(), k.end(), kind) != k.end();
  };
  diff::CollectingConsumer same;
  EXPECT_EQ(run("b", same), 0);
  EXPECT_TRUE(has(kinds(same), "node_shard_spec_differs"));
  EXPECT_FALSE(has(kinds(same), "node_divergence"));
  diff::CollectingConsumer changed;
  EXPECT_EQ(run("c", changed), 1);
  bool relu = false;
  for (const auto& f : changed.findings)
    relu = relu || (f.kind == "node_divergence" && f.where.node == "relu");
  EXPECT_TRUE(relu) << "a real change is still found through XXH3";
  diff::CollectingConsumer shard_only;
  EXPECT_EQ(run("d", shard_only), 1);
  EXPECT_TRUE(has(kinds(shard_only), "node_shard_spec_unverifiable"));
  EXPECT_FALSE(has(kinds(shard_only), "node_divergence"));
}

TEST(NodeCompare, BackwardInputsPropagateAForwardDivergence) {
  gparity::testing::TempDir tmp;
  const auto g = gparity::testing::fx_graph(kBody);
  auto fwd_a = records(kNames);
  auto fwd_b = records(kNames, {"mm", "relu", "add"});
  // The "backward" graph (same shape for the test) reads the forward's result as its input x.
  auto bwd_a = records(kNames);
  auto bwd_b = records(kNames, {"x", "mm", "relu", "add", "tanh", "mul"});
  for (auto* v : {&bwd_a, &bwd_b})
    for (auto& r : *v) r.graph = "aot_backward_graph 0/0";
  fwd_a.insert(fwd_a.end(), bwd_a.begin(), bwd_a.end());
  fwd_b.insert(fwd_b.end(), bwd_b.begin(), bwd_b.end());
  write_replay_run(tmp.path() / "a", g, {fwd_a});
  write_replay_run(tmp.path() / "b", g, {fwd_b});
  diff::CollectingConsumer out;
  EXPECT_EQ(diff::compare_runs(model::open_run((tmp.path() / "a").string()),
                               model::open_run((tmp.path() / "b").string()), {}, out),
            1);
  std::vector<std::string> got;
  for (const auto& f : out.findings) {
    if (f.kind == "node_divergence")
      got.push_back(f.where.graph + " " + f.where.node + " " + f.values["cause"].get<std::string>());
  }
  // No "graph" record names the backward graph: its nodes pair by name, and its graph input x
  // differs because the forward diverged.
  EXPECT_EQ(got, (std::vector<std::string>{"aot_forward_graph 0/0 mm origin",
                                           "aot_backward_graph 0/0 x propagated"}));
}

TEST(NodeCompare, ADamagedNodeRecordIsTheReadersIssueAndCostsOnlyItself) {
  gparity::testing::TempDir tmp;
  const auto g = gparity::testing::fx_graph(kBody);
  write_replay_run(tmp.path() / "a", g, {records(kNames)});
  write_replay_run(tmp.path() / "b", g, {records(kNames, {"tanh", "mul"})});
  {
    // A node record with a bad hash, in the middle of the candidate's rank file.
    model::TraceWriter w(tmp.path() / "b", 0, /*truncate=*/false);
    w.write_raw(nlohmann::json::parse(
        R"({"type":"node","graph":"aot_forward_graph 0/0","node":"relu","dtype":"f32","shape":[8,64],
            "xxh3":"123","shard":"0000000000000001"})"));
    w.write_node(rec("late", "aten.late.default", kH1));
  }
  diff::CollectingConsumer out;
  const int rc = diff::compare_runs(model::open_run((tmp.path() / "a").string()),
                                    model::open_run((tmp.path() / "b").string()), {}, out);
  EXPECT_EQ(rc, 2) << "damaged input";
  const diff::Finding* corrupt = nullptr;
  const diff::Finding* divergence = nullptr;
  for (const auto& f : out.findings) {
    if (f.kind == "corrupt_line") corrupt = &f;
    if (f.kind == "node_divergence") divergence = &f;
  }
  ASSERT_NE(corrupt, nullptr);
  EXPECT_NE(corrupt->message.find("xxh3"), std::string::npos) << corrupt->message;
  EXPECT_EQ(corrupt->where.line, static_cast<std::int64_t>(kNames.size()) + 2) << "graph record, 7 nodes, it";
  ASSERT_NE(divergence, nullptr) << "the other records are still compared";
  EXPECT_EQ(divergence->where.node, "tanh");
}

TEST(NodeCompare, RunsWithoutNodeRecordsAreUnaffected) {
  model::RankTrace a, b;
  EXPECT_TRUE(diff::compare_node_records(a, "", b, "", 0).empty());
}

// Two ranks of tp group '3' (gparity::testing::kTpBody).
using gparity::testing::kTpBody;
using gparity::testing::kTpNodes;

void write_tp_manifest(const std::filesystem::path& dir, const std::vector<int>& group3) {
  model::RunManifest m;
  m.world_size = 2;
  m.extra["replay"] = {{"groups", {{"3", {{"ranks", group3}, {"desc", "mesh_tp"}}}}}};
  model::write_manifest(dir, m);
}

TEST(NodeCompare, ARankThatOnlyReceivedIsNotAnOriginAndTheOriginComesFirst) {
  const auto g = gparity::testing::fx_graph(kTpBody);
  // Rank 1's mm is wrong; rank 0's all-reduce gets it.
  std::vector<diff::NodeRankResult> ranks(2);
  const auto a = records(kTpNodes);
  const auto b0 = records(kTpNodes, {"all_reduce", "wait_tensor", "mul"});
  const auto b1 = records(kTpNodes, {"mm", "all_reduce", "wait_tensor", "mul"});
  for (int r = 0; r < 2; ++r) {
    ranks[static_cast<std::size_t>(r)].rank = r;
    ranks[static_cast<std::size_t>(r)].graphs.push_back(
        diff::compare_node_graph(kGraphLabel, {a, &g}, {r == 0 ? b0 : b1, &g}));
  }
  // Alone, rank 0's all-reduce looks like an origin.
  EXPECT_EQ(ranks[0].graphs[0].first->cause, DivergenceCause::Origin);
  const diff::causality::GroupTable groups = {{"3", {{0, 1}, "mesh_tp"}}};
  EXPECT_TRUE(diff::classify_node_ranks(ranks, groups, groups).empty());
  const auto& d0 = *ranks[0].graphs[0].first;
  EXPECT_EQ(d0.node_a, "all_reduce");
  EXPECT_EQ(d0.cause, DivergenceCause::Received);
  ASSERT_TRUE(d0.cross_rank);
  EXPECT_EQ(d0.cross_rank->from_ranks, (std::vector<int>{1}));
  EXPECT_EQ(d0.cross_rank->origin.node, "mm");
  EXPECT_EQ(ranks[0].graphs[0].origins, 0U);
  EXPECT_EQ(ranks[1].graphs[0].first->cause, DivergenceCause::Origin);
  EXPECT_EQ(ranks[1].graphs[0].origins, 1U);
  EXPECT_EQ(diff::node_summary_line(ranks[0]),
            "rank 0: received at all_reduce (group tp '3') from rank 1, origin mm at /workspace/train.py:42 "
            "(first divergent node of aot_forward_graph 0/0)");
  std::vector<diff::Finding> fs;
  std::vector<diff::Check> checks;
  diff::node_findings(ranks[0], fs, checks);
  ASSERT_EQ(fs.size(), 1U);
  EXPECT_EQ(fs[0].values["cause"], "received");
  EXPECT_EQ(fs[0].values["origin_rank"], 1);
  EXPECT_EQ(fs[0].values["group"], "3");
  EXPECT_EQ(fs[0].values["collective"], "all_reduce");
  EXPECT_NE(fs[0].message.find("received at all_reduce (group tp '3') from rank 1, origin mm"),
            std::string::npos)
      << fs[0].message;

  // End to end through compare_runs, with the group table in the runs' manifests.
  gparity::testing::TempDir tmp;
  write_replay_run(tmp.path() / "a", g, {a, a});
  write_replay_run(tmp.path() / "b", g, {b0, b1});
  write_tp_manifest(tmp.path() / "a", {0, 1});
  write_tp_manifest(tmp.path() / "b", {0, 1});
  diff::CollectingConsumer out;
  EXPECT_EQ(diff::compare_runs(model::open_run((tmp.path() / "a").string()),
                               model::open_run((tmp.path() / "b").string()), {}, out),
            1);
  std::vector<std::string> got;
  for (const auto& f : out.findings)
    if (f.kind == "node_divergence")
      got.push_back(std::to_string(*f.where.rank) + " " + f.where.node + " " +
                    f.values["cause"].get<std::string>());
  EXPECT_EQ(got, (std::vector<std::string>{"1 mm origin", "0 all_reduce received"}));
  ASSERT_GE(out.verdict.summary.size(), 2U);
  std::vector<std::string> node_lines;
  for (const auto& l : out.verdict.summary)
    if (l.find("divergent node") != std::string::npos) node_lines.push_back(l);
  ASSERT_EQ(node_lines.size(), 2U);
  EXPECT_TRUE(node_lines[0].starts_with("rank 1: first divergent node mm")) << node_lines[0];
  EXPECT_TRUE(node_lines[1].starts_with("rank 0: received at all_reduce")) << node_lines[1];

  // The candidate's table puts rank 2 in group '3': named, exit 2, and rank 0's all-reduce is not
  // called an origin.
  write_tp_manifest(tmp.path() / "b", {0, 2});
  diff::CollectingConsumer bad;
  EXPECT_EQ(diff::compare_runs(model::open_run((tmp.path() / "a").string()),
                               model::open_run((tmp.path() / "b").string()), {}, bad),
            2);
  bool named = false;
  for (const auto& f : bad.findings) {
    named = named ||
            (f.kind == "causality_group_mismatch" && f.message.find("group tp '3'") != std::string::npos);
    if (f.kind == "node_divergence" && f.where.rank == 0) {
      EXPECT_NE(f.values["cause"], "origin") << f.message;
    }
  }
  EXPECT_TRUE(named);
}

}  // namespace
