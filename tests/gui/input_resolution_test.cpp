// What `gparity compare` and gparity-view make of their inputs (issue 36): one resolver
// (diff/resolve/inputs.hpp) decides it for both. For every kind of input in the test data (op
// logs as DebugMode folders and files and as gparity op records, checkpoints, run folders, replay
// runs, Flight Recorder dumps, and input that is none of them), the kind `compare` resolves is the
// kind the viewer's verdict has, and input `compare` cannot use is rejected by the viewer too,
// naming the same file; the viewer alone also opens one replay run and Flight Recorder dumps.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/model/base/input_error.hpp"
#include "diff/resolve/inputs.hpp"
#include "gui/verdict.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::gui {
namespace {

using diff::InputKind;
using gparity::testing::app;

const std::string kData = GPARITY_SOURCE_DIR "/tests/data/";

/// The verdict kind the viewer shows for each input kind.
JobVerdict::Kind viewer_kind(InputKind k) {
  switch (k) {
    case InputKind::OpLogs: return JobVerdict::Kind::Ops;
    case InputKind::Checkpoints: return JobVerdict::Kind::Checkpoints;
    case InputKind::Runs: return JobVerdict::Kind::Runs;
    case InputKind::ReplayRun: return JobVerdict::Kind::Replay;
    case InputKind::Collectives: return JobVerdict::Kind::Collectives;
  }
  return JobVerdict::Kind::Runs;
}

/// What one side of the comparison made of the inputs: a kind, or the file its error names.
struct Outcome {
  std::optional<InputKind> kind;
  std::optional<JobVerdict::Kind> verdict;  // the viewer's
  std::string rejected;                     // InputError::source()
  std::string message;
};

Outcome as_compare(const std::vector<std::string>& paths) {
  Outcome o;
  try {
    o.kind = diff::resolve_inputs(paths, diff::ResolveFor::Compare).kind;
  } catch (const model::InputError& e) {
    o.rejected = e.source();
    o.message = e.what();
  }
  return o;
}

Outcome as_viewer(const std::vector<std::string>& paths) {
  Outcome o;
  try {
    const auto kind = diff::resolve_inputs(paths, diff::ResolveFor::View).kind;
    o.verdict = compute_verdict(paths).kind;
    o.kind = kind;
  } catch (const model::InputError& e) {
    o.rejected = e.source();
    o.message = e.what();
  }
  return o;
}

class InputResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    // gparity op records (trace v1 `"type": "op"` lines), as the op recorder writes them.
    const std::string gelu =
        R"({"type":"op","step":1,"index":0,"op":"aten::gelu","phase":"forward",)"
        R"("args":[{"id":3,"dtype":"float32","shape":[4,16],"xxh3":"00000000000000ff","shard":"0000000000000001"}],)"
        R"("outs":[{"id":4,"dtype":"float32","shape":[4,16],"xxh3":"ffffffffffffffff","shard":"8000000000000000"}]})"
        "\n";
    for (const char* run : {"ops_a", "ops_b"}) {
      dir_.write(std::string(run) + "/manifest.json",
                 R"({"schema_version": 1, "format": "gparity-trace", "world_size": 1})");
      dir_.write(std::string(run) + "/rank-0.jsonl", gelu);
    }
    dir_.write("notes.md", "# not an input of any kind\n");
  }
  [[nodiscard]] std::string tmp(const char* name) const { return (dir_.path() / name).string(); }
  testing::TempDir dir_;
};

TEST_F(InputResolution, CompareAndTheViewerResolveEveryInputKindOfTheTestDataAlike) {
  struct Case {
    const char* what;
    std::vector<std::string> paths;
    std::optional<InputKind> kind;  // compare's; none: rejected
    std::string rejected;           // the file the rejection names
  };
  const std::vector<Case> cases = {
      {"DebugMode folders",
       {kData + "ops/debugmode/eager", kData + "ops/debugmode/compile"},
       InputKind::OpLogs,
       ""},
      {"DebugMode files",
       {kData + "ops/debugmode/eager/rank0_step1.debug.txt",
        kData + "ops/debugmode/compile/rank0_step1.debug.txt"},
       InputKind::OpLogs,
       ""},
      {"gparity op records", {tmp("ops_a"), tmp("ops_b")}, InputKind::OpLogs, ""},
      {"DCP checkpoint and safetensors",
       {kData + "dcp/grid", kData + "dcp/grid.safetensors"},
       InputKind::Checkpoints,
       ""},
      {"run folders", {kData + "runs/eager", kData + "runs/eager_repeat"}, InputKind::Runs, ""},
      {"a killed run",
       {kData + "runs/faults/killed-rank1-step2", kData + "runs/faults/killed-rank1-step2"},
       InputKind::Runs,
       ""},
      {"replay runs", {kData + "replay/coor_run", kData + "replay/coor_run"}, InputKind::Runs, ""},
      {"op logs against a run",
       {kData + "ops/debugmode/eager", kData + "runs/eager"},
       std::nullopt,
       kData + "runs/eager"},
      {"a run against op logs",
       {kData + "runs/eager", kData + "ops/debugmode/eager"},
       std::nullopt,
       kData + "runs/eager"},
      {"a run against a file of no kind",
       {kData + "runs/eager", tmp("notes.md")},
       std::nullopt,
       tmp("notes.md")},
      {"a file of no kind, twice", {tmp("notes.md"), tmp("notes.md")}, std::nullopt, tmp("notes.md")},
      {"a missing path against a run", {tmp("missing"), kData + "runs/eager"}, std::nullopt, tmp("missing")},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const Outcome cli = as_compare(c.paths);
    const Outcome view = as_viewer(c.paths);
    EXPECT_EQ(cli.kind, c.kind) << cli.message;
    EXPECT_EQ(view.kind, c.kind) << view.message;
    if (c.kind) {
      EXPECT_EQ(view.verdict, viewer_kind(*c.kind)) << view.message;
      continue;
    }
    // Rejected by both, naming the same file.
    EXPECT_EQ(cli.rejected, c.rejected) << cli.message;
    EXPECT_EQ(view.rejected, c.rejected) << view.message;
    EXPECT_FALSE(view.verdict.has_value());
  }
}

TEST_F(InputResolution, TheViewerAloneOpensOneReplayRunAndFlightRecorderDumps) {
  // `compare` takes two inputs of one kind; these it rejects naming the first. The viewer opens
  // them through the same resolver.
  const std::string dumps = kData + "flight_recorder_pickle/json";
  const Outcome pair = as_compare({dumps, dumps});
  EXPECT_FALSE(pair.kind.has_value());
  EXPECT_EQ(pair.rejected, dumps) << pair.message;
  const Outcome viewed = as_viewer({dumps, dumps});
  EXPECT_EQ(viewed.kind, InputKind::Collectives) << viewed.message;
  EXPECT_EQ(viewed.verdict, JobVerdict::Kind::Collectives) << viewed.message;

  const Outcome one_dump = as_viewer({dumps});
  EXPECT_EQ(one_dump.verdict, JobVerdict::Kind::Collectives) << one_dump.message;
  const Outcome replay = as_viewer({kData + "replay/coor_run"});
  EXPECT_EQ(replay.kind, InputKind::ReplayRun) << replay.message;
  EXPECT_EQ(replay.verdict, JobVerdict::Kind::Replay) << replay.message;
  EXPECT_TRUE(diff::is_replay_run(kData + "replay/coor_run"));
  EXPECT_FALSE(diff::is_replay_run(kData + "runs/eager"));
  // One path `compare` never takes; one the viewer cannot read is named.
  EXPECT_EQ(as_compare({kData + "replay/coor_run"}).kind, std::nullopt);
  const Outcome nothing = as_viewer({tmp("notes.md")});
  EXPECT_FALSE(nothing.verdict.has_value());
  EXPECT_EQ(nothing.rejected, tmp("notes.md")) << nothing.message;
}

}  // namespace
}  // namespace gparity::gui
