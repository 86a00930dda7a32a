// Cross-rank causality (diff/causality/causality.*) on hand-built record sets: one buggy rank in a
// tp group (the only origin; its partner received), bugs on two ranks of different groups, all
// equal, a collective itself the origin, damage received twice over (rank 2 from rank 0, which
// had it from rank 1), a graph input after an earlier graph diverged, a point-to-point pair, a
// collective seen on only some members and group tables that differ between the sides (reported
// by name, never an origin), ranks issuing collectives in different orders (reported, no hang),
// and the JSON form the ranks exchange.

#include "diff/causality/causality.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace {

using namespace gparity::diff::causality;

// 2x2 mesh: tp groups '3' = {0, 1} and '4' = {2, 3}; dp groups '5' = {0, 2} and '6' = {1, 3}.
GroupTable mesh() {
  return {{"3", {{0, 1}, "mesh_tp"}},
          {"4", {{2, 3}, "mesh_tp"}},
          {"5", {{0, 2}, "mesh_dp"}},
          {"6", {{1, 3}, "mesh_dp"}}};
}

std::string tp_group(int rank) {
  return rank < 2 ? "3" : "4";
}

// The graph of issue 22: x -> slice -> mul -> all_reduce(tp) -> wait_tensor -> add(wait, x).
enum { kX, kSlice, kMul, kAllReduce, kWait, kAdd };

Record node(const std::string& name, const std::string& op, std::vector<std::size_t> inputs, int line) {
  Record r;
  r.graph = "aot_forward_graph 0/0";
  r.node = name;
  r.op = op;
  r.source = "/workspace/coor.py:" + std::to_string(line);
  r.inputs = std::move(inputs);
  return r;
}

/// One rank's records; `differ` lists the records whose outputs differ.
RankRecords rank_records(int rank, const std::set<int>& differ, const std::string& group) {
  RankRecords rr;
  rr.rank = rank;
  auto x = node("arg0_1", "placeholder", {}, 0);
  x.graph_input = true;
  x.source.clear();
  rr.records.push_back(x);
  rr.records.push_back(node("slice_1", "aten.slice.Tensor", {kX}, 20));
  rr.records.push_back(node("mul", "aten.mul.Tensor", {kSlice}, 21));
  auto ar = node("all_reduce", "_c10d_functional.all_reduce.default", {kMul}, 22);
  ar.comm = Comm{Comm::Kind::Collective, group, -1};
  rr.records.push_back(ar);
  rr.records.push_back(node("wait_tensor", "_c10d_functional.wait_tensor.default", {kAllReduce}, 22));
  rr.records.push_back(node("add", "aten.add.Tensor", {kWait, kX}, 23));
  for (const int d : differ) rr.records[static_cast<std::size_t>(d)].differs = true;
  return rr;
}

/// Rank `bug` slices wrongly: everything from its slice on differs there, and from the
/// all-reduce on on its tp partner.
std::vector<RankRecords> one_bug(int world, const std::set<int>& bugs) {
  std::vector<RankRecords> out;
  for (int r = 0; r < world; ++r) {
    const int partner = r ^ 1;
    std::set<int> d;
    if (bugs.contains(r)) d = {kSlice, kMul, kAllReduce, kWait, kAdd};
    if (bugs.contains(partner)) d.insert({kAllReduce, kWait, kAdd});
    out.push_back(rank_records(r, d, tp_group(r)));
  }
  return out;
}

Cause cause_of(const Result& r, int rank, std::size_t record) {
  const auto* c = r.find(rank, record);
  EXPECT_NE(c, nullptr) << "rank " << rank << " record " << record << " is not divergent";
  return c ? c->cause : Cause::Unknown;
}

bool has_problem(const Result& r, const std::string& kind, const std::string& phrase) {
  return std::any_of(r.problems.begin(), r.problems.end(), [&](const gparity::diff::Finding& f) {
    return f.kind == kind && f.message.find(phrase) != std::string::npos;
  });
}

TEST(Causality, OneBuggyRankInATpGroupIsTheOnlyOriginAndItsPartnerReceives) {
  for (const int world : {2, 4}) {
    const auto ranks = one_bug(world, {1});
    const auto r = classify(ranks, mesh());
    EXPECT_TRUE(r.problems.empty()) << r.problems.front().message;
    // Rank 1: the slice is the origin, everything after it is propagated on rank 1.
    EXPECT_EQ(cause_of(r, 1, kSlice), Cause::Origin);
    EXPECT_EQ(cause_of(r, 1, kMul), Cause::Propagated);
    EXPECT_EQ(cause_of(r, 1, kAllReduce), Cause::Propagated) << "its own input already differed";
    // Rank 0: its all-reduce's inputs were equal, rank 1's were not.
    const auto* c = r.find(0, kAllReduce);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->cause, Cause::Received);
    EXPECT_EQ(c->from_ranks, (std::vector<int>{1}));
    EXPECT_EQ(c->group, "3");
    EXPECT_EQ(c->group_desc, "mesh_tp");
    EXPECT_EQ(c->sequence, 0);
    EXPECT_EQ(c->origin.rank, 1);
    EXPECT_EQ(c->origin.node, "slice_1");
    EXPECT_EQ(c->text(ranks[0].records[kAllReduce].node, 0),
              "received at all_reduce (group tp '3') from rank 1, origin slice_1 at /workspace/coor.py:20");
    // Downstream on rank 0: propagated, carrying rank 1's origin.
    const auto* w = r.find(0, kWait);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->cause, Cause::Propagated);
    EXPECT_EQ(w->origin.rank, 1);
    EXPECT_NE(
        w->text(ranks[0].records[kWait].node, 0).find("origin slice_1 at /workspace/coor.py:20 on rank 1"),
        std::string::npos);
    ASSERT_EQ(r.origins.size(), 1U) << world;
    EXPECT_EQ(r.origins[0].rank, 1);
    EXPECT_EQ(r.origins[0].node, "slice_1");
    EXPECT_EQ(r.origin_ranks(), (std::vector<int>{1}));
    // The other tp group saw nothing.
    for (int rank = 2; rank < world; ++rank)
      for (std::size_t i = 0; i < ranks[static_cast<std::size_t>(rank)].records.size(); ++i)
        EXPECT_EQ(r.find(rank, i), nullptr) << rank;
  }
}

TEST(Causality, AReceivedDivergenceNamesTheSendersFirstOriginAndTheOneThatReachedTheCollective) {
  // Rank 1 slices x twice with the same wrong bound: slice_1 (kept for the output) is its first
  // origin, slice_2 (all-reduced) its second. Rank 0 receives slice_2's damage; it names slice_1,
  // as rank 1's own findings do, and slice_2 as the way it came (issue 36).
  enum { X, Slice1, Mul, Slice2, Mul1, AllReduce, Wait, Add };
  const auto program = [](int rank, const std::set<int>& differ) {
    RankRecords rr;
    rr.rank = rank;
    auto x = node("arg0_1", "placeholder", {}, 0);
    x.graph_input = true;
    rr.records.push_back(x);
    rr.records.push_back(node("slice_1", "aten.slice.Tensor", {X}, 30));
    rr.records.push_back(node("mul", "aten.mul.Tensor", {Slice1}, 31));
    rr.records.push_back(node("slice_2", "aten.slice.Tensor", {X}, 32));
    rr.records.push_back(node("mul_1", "aten.mul.Tensor", {Slice2}, 33));
    auto ar = node("all_reduce", "_c10d_functional.all_reduce.default", {Mul1}, 34);
    ar.comm = Comm{Comm::Kind::Collective, "3", -1};
    rr.records.push_back(ar);
    rr.records.push_back(node("wait_tensor", "_c10d_functional.wait_tensor.default", {AllReduce}, 34));
    rr.records.push_back(node("add", "aten.add.Tensor", {Wait, Mul}, 36));
    for (const int d : differ) rr.records[static_cast<std::size_t>(d)].differs = true;
    return rr;
  };
  const std::vector<RankRecords> ranks = {program(0, {AllReduce, Wait, Add}),
                                          program(1, {Slice1, Mul, Slice2, Mul1, AllReduce, Wait, Add})};
  const auto r = classify(ranks, mesh());
  EXPECT_TRUE(r.problems.empty());
  ASSERT_EQ(r.origins.size(), 2U);
  EXPECT_EQ(r.origins[0].node, "slice_1");
  EXPECT_EQ(r.origins[1].node, "slice_2");
  const auto* c = r.find(0, AllReduce);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cause, Cause::Received);
  EXPECT_EQ(c->origin.rank, 1);
  EXPECT_EQ(c->origin.node, "slice_1") << "the origin rank 1's own findings name";
  ASSERT_TRUE(c->through.has_value());
  EXPECT_EQ(c->through->rank, 1);
  EXPECT_EQ(c->through->node, "slice_2");
  EXPECT_EQ(c->text("all_reduce", 0),
            "received at all_reduce (group tp '3') from rank 1, origin slice_1 at /workspace/coor.py:30, "
            "reaching all_reduce through slice_2 at /workspace/coor.py:32");
  EXPECT_EQ(c->to_json()["through"]["node"], "slice_2");
  // What follows on rank 0 carries the same origin.
  const auto* w = r.find(0, Wait);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->origin.node, "slice_1");
  EXPECT_FALSE(w->through.has_value());
  // An origin of an earlier graph on rank 1 (an optimizer state of its own) is not the one named:
  // the receiver names rank 1's first origin in the graph where the damage started.
  auto with_earlier = ranks;
  for (auto& rr : with_earlier) {
    for (auto& rec : rr.records)
      for (auto& in : rec.inputs) ++in;
    auto state = node("state", "aten.copy_.default", {}, 10);
    state.graph = "aot_forward_graph 0/0";
    state.differs = rr.rank == 1;
    rr.records.insert(rr.records.begin(), state);
    for (std::size_t i = 1; i < rr.records.size(); ++i) rr.records[i].graph = "aot_backward_graph 0/0";
  }
  const auto r2 = classify(with_earlier, mesh());
  const auto* c2 = r2.find(0, AllReduce + 1);
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->cause, Cause::Received);
  EXPECT_EQ(c2->origin.node, "slice_1");
  ASSERT_TRUE(c2->through.has_value());
  EXPECT_EQ(c2->through->node, "slice_2");
  ASSERT_EQ(r2.origins.size(), 3U);
  EXPECT_EQ(r2.origins[0].node, "state");
  // One origin that reaches the collective itself: no "through".
  const auto one = one_bug(2, {1});
  const auto r1 = classify(one, mesh());  // kept: find() points into it
  const auto* c1 = r1.find(0, kAllReduce);
  ASSERT_NE(c1, nullptr);
  EXPECT_FALSE(c1->through.has_value());
}

TEST(Causality, BugsOnTwoRanksOfDifferentGroupsAreBothOrigins) {
  const auto ranks = one_bug(4, {1, 3});
  const auto r = classify(ranks, mesh());
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.origin_ranks(), (std::vector<int>{1, 3}));
  EXPECT_EQ(cause_of(r, 1, kSlice), Cause::Origin);
  EXPECT_EQ(cause_of(r, 3, kSlice), Cause::Origin);
  const auto* c0 = r.find(0, kAllReduce);
  const auto* c2 = r.find(2, kAllReduce);
  ASSERT_TRUE(c0 && c2);
  EXPECT_EQ(c0->cause, Cause::Received);
  EXPECT_EQ(c0->from_ranks, (std::vector<int>{1}));
  EXPECT_EQ(c0->group, "3");
  EXPECT_EQ(c2->cause, Cause::Received);
  EXPECT_EQ(c2->from_ranks, (std::vector<int>{3}));
  EXPECT_EQ(c2->group, "4");
  EXPECT_EQ(c2->origin.rank, 3);
}

TEST(Causality, AllEqualHasNoDivergenceAndNoOrigin) {
  const auto ranks = one_bug(4, {});
  const auto r = classify(ranks, mesh());
  EXPECT_TRUE(r.problems.empty());
  EXPECT_TRUE(r.origins.empty());
  for (const auto& rr : r.ranks) EXPECT_TRUE(rr.divergent.empty()) << rr.rank;
}

TEST(Causality, ACollectiveWithEqualInputsOnEveryMemberIsItselfTheOrigin) {
  // Both members' all-reduces differ (another reduce op) while every input compared equal.
  std::vector<RankRecords> ranks = {rank_records(0, {kAllReduce, kWait, kAdd}, "3"),
                                    rank_records(1, {kAllReduce, kWait, kAdd}, "3")};
  const auto r = classify(ranks, mesh());
  EXPECT_EQ(cause_of(r, 0, kAllReduce), Cause::Origin);
  EXPECT_EQ(cause_of(r, 1, kAllReduce), Cause::Origin);
  EXPECT_EQ(r.origin_ranks(), (std::vector<int>{0, 1}));
  EXPECT_EQ(r.find(0, kAllReduce)->text(ranks[0].records[kAllReduce].node, 0),
            "origin: the inputs of all_reduce (group tp '3') were equal on every member");
}

TEST(Causality, DamageReceivedTwiceNamesTheFirstOrigin) {
  // Rank 1 is wrong; rank 0 receives it on tp '3'; then a dp all-reduce on '5' = {0, 2} carries
  // rank 0's received damage to rank 2, whose own inputs were equal.
  std::vector<RankRecords> ranks = one_bug(4, {1});
  for (auto& rr : ranks) {
    auto dp = node("all_reduce_1", "_c10d_functional.all_reduce.default", {kAdd}, 24);
    dp.comm = Comm{Comm::Kind::Collective, rr.rank % 2 == 0 ? "5" : "6", -1};
    dp.differs = true;  // rank 1 damages its dp partner 3 as well
    rr.records.push_back(dp);
  }
  const auto r = classify(ranks, mesh());
  const auto* c2 = r.find(2, kAdd + 1);
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->cause, Cause::Received);
  EXPECT_EQ(c2->from_ranks, (std::vector<int>{0}));
  EXPECT_EQ(c2->group, "5");
  EXPECT_EQ(c2->origin.rank, 1) << "the origin that reached rank 0 and through it rank 2";
  EXPECT_EQ(c2->origin.node, "slice_1");
  EXPECT_NE(c2->text(ranks[2].records.back().node, 2)
                .find("from rank 0, origin slice_1 at /workspace/coor.py:20 on rank 1"),
            std::string::npos);
  const auto* c3 = r.find(3, kAdd + 1);
  ASSERT_NE(c3, nullptr);
  EXPECT_EQ(c3->cause, Cause::Received);
  EXPECT_EQ(c3->from_ranks, (std::vector<int>{1}));
  EXPECT_EQ(cause_of(r, 0, kAdd + 1), Cause::Propagated);
  EXPECT_EQ(r.origin_ranks(), (std::vector<int>{1}));
}

TEST(Causality, AGraphInputAfterAnEarlierGraphDivergedIsPropagated) {
  RankRecords rr = rank_records(0, {kSlice, kMul}, "3");
  auto bw = node("tangents_1", "placeholder", {}, 0);
  bw.graph = "aot_backward_graph 0/0";
  bw.graph_input = true;
  bw.differs = true;
  rr.records.push_back(bw);
  std::vector<RankRecords> ranks = {rr, rank_records(1, {}, "3")};
  const auto r = classify(ranks, mesh());
  const auto* c = r.find(0, rr.records.size() - 1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cause, Cause::Propagated);
  EXPECT_EQ(c->after_graph, "aot_forward_graph 0/0");
  EXPECT_EQ(c->origin.node, "slice_1");
  // A first graph's input that differs: the graph was fed different values.
  RankRecords fed = rank_records(0, {kX, kSlice}, "3");
  const std::vector<RankRecords> ranks2 = {fed};
  EXPECT_EQ(cause_of(classify(ranks2, {}), 0, kX), Cause::Input);
}

TEST(Causality, PointToPointReceivePairsWithItsSend) {
  // Rank 0 computes t wrongly and sends it to rank 1; rank 1's recv differs with nothing of its own.
  RankRecords r0;
  r0.rank = 0;
  r0.records.push_back(node("t", "aten.mul.Tensor", {}, 30));
  r0.records[0].differs = true;
  auto send = node("send", "c10d.send", {0}, 31);
  send.comm = Comm{Comm::Kind::Send, "0", 1};
  send.compared = false;  // a send produces nothing to compare
  r0.records.push_back(send);
  RankRecords r1;
  r1.rank = 1;
  auto recv = node("recv", "c10d.recv", {}, 32);
  recv.comm = Comm{Comm::Kind::Recv, "0", 0};
  recv.differs = true;
  r1.records.push_back(recv);
  const std::vector<RankRecords> ranks = {r0, r1};
  const auto r = classify(ranks, {{"0", {{0, 1}, "default_pg"}}});
  EXPECT_EQ(cause_of(r, 0, 0), Cause::Origin);
  const auto* c = r.find(1, 0);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cause, Cause::Received);
  EXPECT_EQ(c->from_ranks, (std::vector<int>{0}));
  EXPECT_EQ(c->origin.node, "t");
  EXPECT_TRUE(r.problems.empty());
}

TEST(Causality, ACollectiveSeenOnOnlySomeMembersIsNamedAndNeverAnOrigin) {
  // Rank 0's all-reduce differs with equal inputs, but rank 1's records have no collective on
  // group '3': whether rank 1's inputs differed is unknown.
  auto r1 = rank_records(1, {}, "3");
  r1.records[kAllReduce].comm.reset();
  std::vector<RankRecords> ranks = {rank_records(0, {kAllReduce, kWait, kAdd}, "3"), r1};
  const auto r = classify(ranks, mesh());
  const auto* c = r.find(0, kAllReduce);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cause, Cause::Unknown);
  EXPECT_NE(c->why_unknown.find("not in the records of rank 1"), std::string::npos) << c->why_unknown;
  EXPECT_TRUE(r.origins.empty());
  EXPECT_TRUE(has_problem(r, "causality_collective_unmatched", "group tp '3'")) << r.problems.size();
  EXPECT_TRUE(has_problem(r, "causality_collective_unmatched", "rank 1"));
  EXPECT_EQ(r.problems.front().severity, gparity::diff::Severity::Incomplete);
  // A member with no records at all: the same.
  const std::vector<RankRecords> alone = {rank_records(0, {kAllReduce, kWait, kAdd}, "3")};
  const auto r2 = classify(alone, mesh());
  EXPECT_EQ(cause_of(r2, 0, kAllReduce), Cause::Unknown);
  EXPECT_TRUE(has_problem(r2, "causality_collective_unmatched", "not in the records of rank 1"));
  // Damage known to come from a member that has the collective is still received.
  auto ranks3 = one_bug(2, {1});
  ranks3.push_back(rank_records(2, {}, "3"));  // a stranger to group '3'
  const auto r3 = classify(ranks3, mesh());
  EXPECT_EQ(cause_of(r3, 0, kAllReduce), Cause::Received);
}

TEST(Causality, GroupTablesThatDifferBetweenTheSidesAreNamed) {
  const auto ranks = one_bug(2, {});
  auto ranks_d = ranks;
  ranks_d[0].records[kAllReduce].differs = true;
  GroupTable base = mesh();
  GroupTable cand = mesh();
  cand["3"].ranks = {0, 2};
  const auto r = classify(ranks_d, base, cand);
  ASSERT_TRUE(
      has_problem(r, "causality_group_mismatch", "group tp '3' has ranks [0, 1] in the baseline but [0, 2]"));
  const auto& f = *std::find_if(r.problems.begin(), r.problems.end(),
                                [](const auto& p) { return p.kind == "causality_group_mismatch"; });
  EXPECT_EQ(f.severity, gparity::diff::Severity::Error);
  EXPECT_EQ(f.values["group"], "3");
  EXPECT_EQ(cause_of(r, 0, kAllReduce), Cause::Unknown) << "never an origin on a disputed group";
  // Equal tables: no problem.
  EXPECT_TRUE(classify(ranks, base, mesh()).problems.empty());
}

TEST(Causality, RanksIssuingCollectivesInDifferentOrdersAreReportedWithoutHanging) {
  // Rank 0: all-reduce on group a then b; rank 1 the other way round.
  GroupTable t = {{"a", {{0, 1}, ""}}, {"b", {{0, 1}, ""}}};
  std::vector<RankRecords> ranks(2);
  for (int rank = 0; rank < 2; ++rank) {
    ranks[static_cast<std::size_t>(rank)].rank = rank;
    for (const char* g :
         rank == 0 ? std::vector<const char*>{"a", "b"} : std::vector<const char*>{"b", "a"}) {
      auto c = node(std::string("ar_") + g, "_c10d_functional.all_reduce.default", {}, 40);
      c.comm = Comm{Comm::Kind::Collective, g, -1};
      c.differs = true;
      ranks[static_cast<std::size_t>(rank)].records.push_back(c);
    }
  }
  const auto r = classify(ranks, t);
  EXPECT_TRUE(has_problem(r, "causality_order_mismatch", "different orders"));
  // The walk stops at rank 0's ar_a, which rank 1 reaches only after ar_b: neither side of that
  // instance is judged; ar_b then meets ar_b.
  EXPECT_EQ(cause_of(r, 0, 0), Cause::Unknown);
  EXPECT_EQ(cause_of(r, 1, 1), Cause::Unknown);
  EXPECT_EQ(cause_of(r, 1, 0), Cause::Origin);
}

TEST(Causality, RecordsRoundTripThroughJson) {
  auto ranks = one_bug(2, {1});
  ranks[0].records[kX].inputs_known = false;
  ranks[0].records[kMul].compared = false;
  const auto back = rank_records_from_json(nlohmann::json::parse(to_json(ranks[0]).dump()));
  ASSERT_EQ(back.records.size(), ranks[0].records.size());
  EXPECT_EQ(back.rank, 0);
  for (std::size_t i = 0; i < back.records.size(); ++i) {
    const auto& a = ranks[0].records[i];
    const auto& b = back.records[i];
    EXPECT_EQ(a.graph, b.graph);
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.inputs_known, b.inputs_known);
    EXPECT_EQ(a.compared, b.compared);
    EXPECT_EQ(a.differs, b.differs);
    EXPECT_EQ(a.graph_input, b.graph_input);
    EXPECT_EQ(a.comm.has_value(), b.comm.has_value());
    if (a.comm) {
      EXPECT_EQ(a.comm->group, b.comm->group);
    }
  }
  EXPECT_THROW(rank_records_from_json(nlohmann::json::parse(R"({"rank": 0})")), std::invalid_argument);
  const auto t = group_table_from_json(to_json(mesh()));
  EXPECT_EQ(t.at("4").ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(t.at("4").desc, "mesh_tp");
}

}  // namespace
