// Issue 36: a step recorded in part is incomplete from where its records stop, never divergent.
// A rank killed mid-step (or a log cut inside a step) leaves one side's records of the step
// short: the eager ops past the cut have no compiled record, and before this they were judged
// divergent, the first of them an "origin". Pinned on the PyTorch 2.11 DebugMode sample
// (tests/data/ops/debugmode, a copy cut in the test) and on gparity op records written here the
// way gparity.record_ops writes them (2 ranks, 2 steps), cut at a line and mid-line, on the
// compiled side and on the eager side.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/model/ops/debugmode.hpp"
#include "core/model/ops/op_records.hpp"
#include "core/model/ops/op_run.hpp"
#include "diff/ops/op_compare.hpp"

namespace gparity::diff::ops {
namespace {
namespace step_cut {

const std::string kData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/";

std::vector<RankLogs> load_run(const std::string& dir) {
  return read_rank_logs(model::ops::open_op_run(dir));
}

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The first `lines` lines of `text`, plus `partial` characters of the next (a write cut mid-line).
std::string first_lines(const std::string& text, std::size_t lines, std::size_t partial = 0) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < lines; ++i) at = text.find('\n', at) + 1;
  return text.substr(0, at + partial);
}

struct Compared {
  int code = -1;
  CollectingConsumer report;
  [[nodiscard]] std::vector<const Finding*> of_kind(std::string_view kind) const {
    std::vector<const Finding*> out;
    for (const auto& f : report.findings)
      if (f.kind == kind) out.push_back(&f);
    return out;
  }
};

Compared compare_logs(const std::vector<RankLogs>& e, const std::vector<RankLogs>& c, bool allow = false) {
  Compared r;
  OpCompareOptions o;
  o.allow_incomplete = allow;
  r.code = compare_op_logs(e, c, o, r.report);
  return r;
}

std::vector<RankVerdict> judge_logs(const std::vector<RankLogs>& e, const std::vector<RankLogs>& c) {
  return judge_op_logs(e, c, choose_hashes(e.front().logs.front(), c.front().logs.front()));
}

const Check* check_of(const Compared& r, int rank) {
  for (const auto& c : r.report.checks)
    if (c.name == "ops" && c.rank == rank) return &c;
  return nullptr;
}

// ---- the DebugMode sample ---------------------------------------------------------------------

/// The sample's `mode` (a folder under tests/data/ops) with rank 1's step-1 log cut after `lines`
/// lines (+ `partial` characters) and its step 2 gone: what a rank killed mid-step leaves.
std::vector<RankLogs> cut_rank1(const std::string& mode, std::size_t lines, std::size_t partial = 0) {
  const std::string dir = mode.find('/') == std::string::npos ? "debugmode/" + mode : mode;
  auto c = load_run(kData + dir);
  const std::string text = text_of(kData + dir + "/rank1_step1.debug.txt");
  c[1].logs.clear();  // step 2 gone
  c[1].logs.push_back(
      model::ops::parse_debugmode_text(first_lines(text, lines, partial), "rank1_step1.debug.txt", 1, 1));
  return c;
}

TEST(OpStepCut, ADebugModeLogCutInsideAStepIsIncompleteFromTheCutNeverAnOrigin) {
  // Before issue 36: rank 1's first divergent op aten::t, "input ... differs" (a weight the cut
  // log never reached), exit 1 for the wrong reason.
  const auto e = load_run(kData + "debugmode/eager");
  const auto whole = judge_logs(e, load_run(kData + "debugmode/compile"));
  for (const std::size_t partial : {std::size_t{0}, std::size_t{30}}) {
    const auto c = cut_rank1("compile", 64, partial);
    const auto r = compare_logs(e, c);
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.of_kind("op_divergence").empty()) << r.of_kind("op_divergence").front()->message;
    const auto cuts = r.of_kind("op_step_cut");
    ASSERT_EQ(cuts.size(), 1u);
    const Finding& f = *cuts[0];
    EXPECT_EQ(f.severity, Severity::Incomplete);
    EXPECT_EQ(f.where.rank, 1);
    EXPECT_EQ(f.where.step, 1);
    EXPECT_EQ(f.values["side"], "compiled");
    EXPECT_EQ(f.where.line, c[1].logs[0].records.back().line);  // where the records stop
    EXPECT_LE(f.where.line, 64);
    EXPECT_NE(f.message.find("stop at rank1_step1.debug.txt:" + std::to_string(f.where.line)),
              std::string::npos)
        << f.message;
    EXPECT_NE(
        f.values["why"].get<std::string>().find(partial ? "last line is cut" : "no later compiled step"),
        std::string::npos)
        << f.values["why"];
    ASSERT_EQ(r.of_kind("op_step_missing").size(), 1u);  // rank 1's step 2
    // Rank 0 keeps its parity; rank 1 is not parity.
    EXPECT_EQ(check_of(r, 0)->outcome, Check::Outcome::Pass);
    EXPECT_EQ(check_of(r, 1)->outcome, Check::Outcome::Fail);
    EXPECT_EQ(r.report.verdict.data["ranks"][1]["parity"], false);
    EXPECT_EQ(r.report.verdict.data["ranks"][1]["incomplete"]["step"], 1);
    // Where the cut is in eager order: every op before it keeps the verdict it has against the
    // whole log, and the first op past it would have been found there.
    const auto v = judge_logs(e, c);
    const StepVerdict& sv = v[1].steps[0];
    ASSERT_EQ(sv.cuts.size(), 1u);
    const std::uint32_t from = sv.cuts[0].eager_from;
    EXPECT_EQ(f.values["first_not_compared"]["line"], sv.eager.at(from).line);
    const StepVerdict& full = whole[1].steps[0];
    for (std::uint32_t i = 0; i < from; ++i)
      EXPECT_EQ(sv.alignment.eager[i].status, full.alignment.eager[i].status) << "eager op " << i;
    EXPECT_EQ(sv.alignment.eager[from].status, ValueStatus::NotRecorded);
    EXPECT_NE(full.alignment.eager[from].status, ValueStatus::Divergent);  // it would have been found
    for (std::uint32_t i = from; i < sv.eager.size(); ++i)
      EXPECT_NE(sv.alignment.eager[i].status, ValueStatus::Divergent) << "eager op " << i;
    EXPECT_GT(sv.not_recorded, 100u);
    EXPECT_EQ(sv.not_recorded, sv.cuts[0].not_recorded);
    EXPECT_FALSE(sv.first);
  }
}

TEST(OpStepCut, OtherRanksKeepTheirVerdictsAndTheCutRankNamesNoOrigin) {
  // compile_gelu (the wrong gelu decomposition on both ranks), rank 1 cut at line 64, before its
  // gelu: rank 0 still names its gelu, an origin, and step 2 following it; rank 1's gelu was
  // never recorded, so rank 1 names nothing.
  const auto e = load_run(kData + "debugmode/eager");
  const auto r = compare_logs(e, cut_rank1("compile_gelu", 64));
  EXPECT_EQ(r.code, 1);
  std::vector<const Finding*> divs = r.of_kind("op_divergence");
  ASSERT_EQ(divs.size(), 1u);
  EXPECT_EQ(divs[0]->where.rank, 0);
  EXPECT_EQ(divs[0]->values["eager"]["op"], "aten::gelu");
  EXPECT_EQ(divs[0]->values["cause"], "origin");
  ASSERT_EQ(r.of_kind("op_divergence_follows").size(), 1u);
  EXPECT_EQ(r.of_kind("op_divergence_follows")[0]->where.rank, 0);
  const auto cuts = r.of_kind("op_step_cut");
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0]->where.rank, 1);
  // The headline leads with rank 0's origin.
  EXPECT_NE(r.report.verdict.headline.find("first at rank 0 step 1, aten::gelu"), std::string::npos)
      << r.report.verdict.headline;
}

TEST(OpStepCut, ACollectiveTheCutRankNeverRecordedIsUnknownOnTheOtherRanks) {
  // debugmode_nnmod: the wrong gelu on rank 1 only; rank 0 receives it through the gradient
  // all-reduces. Rank 1 cut at line 60, before its gelu and its all-reduces: rank 0's first
  // divergent all-reduce is unknown ("not in the records of rank 1"), not an origin, and none of
  // the others is an other origin. Uncut, it is received from rank 1 (the sample's own test).
  const auto e = load_run(kData + "debugmode_nnmod/eager");
  const auto r = compare_logs(e, cut_rank1("debugmode_nnmod/compile_gelu_rank1", 60));
  EXPECT_EQ(r.code, 1);
  const auto divs = r.of_kind("op_divergence");
  ASSERT_EQ(divs.size(), 1u);
  EXPECT_EQ(divs[0]->where.rank, 0);
  EXPECT_EQ(divs[0]->values["eager"]["op"], "c10d::allreduce_");
  EXPECT_EQ(divs[0]->values["cause"], "unknown");
  EXPECT_EQ(divs[0]->values["other_origin_total"], 0);
  EXPECT_NE(divs[0]->message.find("not in the records of rank 1"), std::string::npos) << divs[0]->message;
  ASSERT_EQ(r.of_kind("op_step_cut").size(), 1u);
  EXPECT_EQ(r.of_kind("op_step_cut")[0]->where.rank, 1);
  const auto whole = compare_logs(e, load_run(kData + "debugmode_nnmod/compile_gelu_rank1"));
  for (const auto* f : whole.of_kind("op_divergence")) {
    if (f->where.rank == 0) {
      EXPECT_EQ(f->values["cause"], "received");
    }
  }
}

TEST(OpStepCut, NoStepOfTheWholeSamplesIsTakenForCut) {
  // Every step of the samples ends its log (one file a rank and step), compiled or eager runs
  // whose steps go on differently (decompositions, Inductor's kernels past eager's last value,
  // rank 1 absent from compile_inductor): none is cut, nothing is not recorded.
  for (const auto& [eager, other] : std::vector<std::pair<std::string, std::string>>{
           {"debugmode/eager", "debugmode/eager_repeat"},
           {"debugmode/eager", "debugmode/compile"},
           {"debugmode/eager", "debugmode/compile_gelu"},
           {"debugmode/compile_gelu", "debugmode/eager"},
           {"debugmode_nnmod/eager", "debugmode_nnmod/compile_gelu_rank1"},
           {"debugmode_nnmod/eager", "debugmode_nnmod/compile_inductor"}}) {
    const auto r = compare_logs(load_run(kData + eager), load_run(kData + other));
    EXPECT_TRUE(r.of_kind("op_step_cut").empty())
        << eager << " vs " << other << ": " << r.of_kind("op_step_cut").front()->message;
    for (const auto* f : r.of_kind("op_step_compared")) EXPECT_EQ(f->values["not_recorded_ops"], 0);
  }
}

// ---- gparity op records -------------------------------------------------------------------------

/// One step of a small transformer's ops as the op recorder writes them: each op reads the
/// previous op's output (no hash: its producer's says what it holds) and, for the embedding,
/// layer norms and linear layers, a parameter (hashed), and writes a fresh hashed value.
const std::vector<std::string> kStepOps = {"aten::embedding",
                                           "aten::native_layer_norm",
                                           "aten::addmm",
                                           "aten::_scaled_dot_product_efficient_attention",
                                           "aten::addmm",
                                           "aten::add.Tensor",
                                           "aten::native_layer_norm",
                                           "aten::addmm",
                                           "aten::gelu",
                                           "aten::addmm",
                                           "aten::add.Tensor",
                                           "aten::native_layer_norm",
                                           "aten::addmm",
                                           "aten::_log_softmax",
                                           "aten::nll_loss_forward",
                                           "aten::ones_like",
                                           "aten::nll_loss_backward",
                                           "aten::_log_softmax_backward_data",
                                           "aten::mm",
                                           "aten::mm",
                                           "aten::sum.dim_IntList",
                                           "aten::native_layer_norm_backward",
                                           "aten::mm",
                                           "aten::gelu_backward",
                                           "aten::mm",
                                           "aten::embedding_dense_backward",
                                           "aten::div_.Tensor",
                                           "aten::add_.Tensor"};

std::string hashed(int id, std::uint64_t h) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                R"({"id":%d,"dtype":"float32","shape":[4],"xxh3":"%016llx","shard":"%016llx"})", id,
                static_cast<unsigned long long>(h), static_cast<unsigned long long>(h * 3 + 1));
  return buf;
}

std::string rank_file(int rank) {
  std::string out;
  int id = 0;
  for (const std::int64_t step : {1, 2}) {
    for (std::size_t i = 0; i < kStepOps.size(); ++i) {
      const std::uint64_t value = 100000u * static_cast<unsigned>(rank + 1) + 1000u * step + i;
      const std::string prev =
          i == 0 ? std::string()
                 : R"({"id":)" + std::to_string(id - 1) + R"(,"dtype":"float32","shape":[4]},)";
      const bool has_param = kStepOps[i].find("embedding") != std::string::npos ||
                             kStepOps[i].find("addmm") != std::string::npos ||
                             kStepOps[i].find("native_layer_norm") != std::string::npos;
      const std::string param =
          has_param ? hashed(5000 + static_cast<int>(i), 900000u + 1000u * step + i) : "";
      std::string prev_arg = prev;
      if (param.empty() && !prev_arg.empty()) prev_arg.pop_back();  // its trailing comma
      out += R"({"type":"op","step":)" + std::to_string(step) + R"(,"index":)" + std::to_string(i) +
             R"(,"op":")" + kStepOps[i] + R"(","phase":"forward","args":[)" + prev_arg + param +
             R"(],"outs":[)" + hashed(id, value) + "]}\n";
      ++id;
    }
  }
  return out;
}

std::vector<RankLogs> op_records(const std::vector<std::string>& per_rank) {
  std::vector<RankLogs> out;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    RankLogs rl{static_cast<int>(r), {}};
    rl.logs.push_back(model::ops::parse_op_records(per_rank[r], "rank-" + std::to_string(r) + ".jsonl",
                                                   static_cast<int>(r)));
    out.push_back(std::move(rl));
  }
  return out;
}

std::size_t position_of(const std::string& op) {
  return static_cast<std::size_t>(std::find(kStepOps.begin(), kStepOps.end(), op) - kStepOps.begin());
}

TEST(OpStepCut, OpRecordsOfARankCutInsideStepOneNameWhereTheyStopNotTheNextOp) {
  // The issue's case: rank 1's records stop just before aten::_log_softmax of step 1 (at a line,
  // and mid-line). Before issue 36 _log_softmax was named the origin on rank 1.
  const std::size_t cut = position_of("aten::_log_softmax");
  const auto e = op_records({rank_file(0), rank_file(1)});
  ASSERT_EQ(compare_logs(e, op_records({rank_file(0), rank_file(1)})).code, 0);  // uncut: parity
  for (const std::size_t partial : {std::size_t{0}, std::size_t{60}}) {
    const auto c = op_records({rank_file(0), first_lines(rank_file(1), cut, partial)});
    const auto r = compare_logs(e, c);
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.of_kind("op_divergence").empty()) << r.of_kind("op_divergence").front()->message;
    const auto cuts = r.of_kind("op_step_cut");
    ASSERT_EQ(cuts.size(), 1u);
    const Finding& f = *cuts[0];
    EXPECT_EQ(f.where.rank, 1);
    EXPECT_EQ(f.where.step, 1);
    EXPECT_EQ(f.where.line, static_cast<std::int64_t>(cut));  // the last line it kept
    EXPECT_EQ(f.values["last_record"]["op"], kStepOps[cut - 1]);
    EXPECT_EQ(f.where.node, "aten::_log_softmax");  // the first eager op not compared
    EXPECT_EQ(f.values["first_not_compared"]["op"], "aten::_log_softmax");
    EXPECT_EQ(f.values["eager_ops_after"], kStepOps.size() - cut);
    EXPECT_EQ(f.values["not_recorded"], kStepOps.size() - cut);
    EXPECT_NE(f.message.find("stop at rank-1.jsonl:" + std::to_string(cut) + " (" + kStepOps[cut - 1] + ")"),
              std::string::npos)
        << f.message;
    ASSERT_EQ(r.of_kind("op_step_missing").size(), 1u);
    EXPECT_EQ(r.of_kind("op_step_missing")[0]->where.step, 2);
    EXPECT_EQ(check_of(r, 0)->outcome, Check::Outcome::Pass);
    EXPECT_NE(check_of(r, 1)->message.find("incomplete"), std::string::npos) << check_of(r, 1)->message;
    // --allow-incomplete reports it without failing: what was compared agrees.
    const auto allowed = compare_logs(e, c, /*allow=*/true);
    EXPECT_EQ(allowed.code, 0);
    EXPECT_EQ(check_of(allowed, 1)->outcome, Check::Outcome::Skipped);
    const auto v = judge_logs(e, c);
    const StepVerdict& sv = v[1].steps[0];
    for (std::size_t i = 0; i < kStepOps.size(); ++i)
      EXPECT_EQ(sv.alignment.eager[i].status, i < cut ? ValueStatus::Matched : ValueStatus::NotRecorded) << i;
  }
}

TEST(OpStepCut, AGenuineDivergenceBeforeTheCutIsStillTheOrigin) {
  // Rank 1's gelu differs (its output and everything after it), and its records stop at
  // _log_softmax: the gelu, recorded on both sides, is the origin; nothing past the cut is judged.
  const std::size_t gelu = position_of("aten::gelu"), cut = position_of("aten::_log_softmax");
  std::string bad = rank_file(1);
  for (std::size_t i = gelu; i < kStepOps.size(); ++i) {
    char from[32], to[32];
    std::snprintf(from, sizeof from, "\"xxh3\":\"%016llx\"",
                  static_cast<unsigned long long>(200000u + 1000u + i));
    std::snprintf(to, sizeof to, "\"xxh3\":\"%016llx\"", static_cast<unsigned long long>(700000u + i));
    bad.replace(bad.find(from), std::string(from).size(), to);
  }
  const auto e = op_records({rank_file(0), rank_file(1)});
  const auto r = compare_logs(e, op_records({rank_file(0), first_lines(bad, cut)}));
  EXPECT_EQ(r.code, 1);
  const auto divs = r.of_kind("op_divergence");
  ASSERT_EQ(divs.size(), 1u);
  EXPECT_EQ(divs[0]->where.rank, 1);
  EXPECT_EQ(divs[0]->values["eager"]["op"], "aten::gelu");
  EXPECT_EQ(divs[0]->values["cause"], "origin");
  EXPECT_LT(divs[0]->values["carried_total"].get<std::size_t>(), cut - gelu);  // none past the cut
  EXPECT_EQ(r.of_kind("op_step_cut").size(), 1u);
}

TEST(OpStepCut, AnEagerLogCutInsideAStepIsNeverParity) {
  // The eager side stops: what it kept matches, but the compiled records past it hold values
  // the eager step never showed. Before issue 36 rank 1's step 1 was parity.
  const std::size_t cut = position_of("aten::_log_softmax");
  for (const std::size_t partial : {std::size_t{0}, std::size_t{60}}) {
    const auto e = op_records({rank_file(0), first_lines(rank_file(1), cut, partial)});
    const auto r = compare_logs(e, op_records({rank_file(0), rank_file(1)}));
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.of_kind("op_divergence").empty());
    const auto cuts = r.of_kind("op_step_cut");
    ASSERT_EQ(cuts.size(), 1u);
    EXPECT_EQ(cuts[0]->where.rank, 1);
    EXPECT_EQ(cuts[0]->values["side"], "eager");
    EXPECT_EQ(cuts[0]->values["compiled_records_after"], kStepOps.size() - cut);
    EXPECT_EQ(cuts[0]->values["first_not_compared"]["op"], "aten::_log_softmax");
    EXPECT_EQ(r.report.verdict.data["ranks"][1]["parity"], false);
  }
}

}  // namespace step_cut
}  // namespace
}  // namespace gparity::diff::ops
