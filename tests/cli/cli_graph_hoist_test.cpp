// `gparity graph hoist` and the hoisting part of `gparity graph devices` through the real binary,
// on the fsdp2 sample (tests/data/graph/compile, Flight Recorder dumps beside the logs) and on
// FX text with a collective: exit codes (0 everything mapped, 1 something left as it is, 2 bad
// input), the written JSON is rank 1's graph, groups from --group, and `gparity compare` on two
// replay runs with node records (the first divergent node in text and JSON, exit 1).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/graph_json.hpp"
#include "core/model/graph/graph_load.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;

const std::string kHoistGraphs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/";

const std::string kHoistFx = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4][1]cuda:0"):
        full: "f32[4][1]cuda:0" = torch.ops.aten.full.default([4], 1.0, device = device(type='cuda', index=0))
        add: "f32[4][1]cuda:0" = torch.ops.aten.add.Tensor(x, full)
        r: "f32[4][1]cuda:0" = torch.ops._c10d_functional.all_reduce.default(add, 'sum', '3')
        return (r,)
)FX";

TEST(CliGraphHoist, Rank0JointGraphBecomesRank1s) {
  TempDir dir;
  const auto out = (dir.path() / "j.json").string();
  const auto r = run_command(GPARITY_EXE, {"graph", "hoist", kHoistGraphs + "compile", "--graph",
                                           "aot_joint_graph", "--to-rank", "1", "--out", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["from_rank"], 0);
  EXPECT_EQ(j["counts"]["device"], 3);
  EXPECT_EQ(j["counts"]["group"], 0);
  EXPECT_EQ(j["flight_recorder"].size(), 2U);
  std::vector<std::string> devices;
  for (const auto& c : j["changes"]) {
    if (c["kind"] == "device")
      devices.push_back(c["node"].get<std::string>() + " " + c["field"].get<std::string>() + " -> " +
                        c["to"].get<std::string>());
  }
  EXPECT_EQ(devices,
            (std::vector<std::string>{"full kwargs.device -> cuda:1", "full_1 kwargs.device -> cuda:1",
                                      "full_2 kwargs.device -> cuda:1"}));
  EXPECT_EQ(j["counts"]["annotation"], 139);
  // The file is rank 1's joint graph, exactly, without any normalization.
  const auto d =
      run_command(GPARITY_EXE, {"graph", "diff", "--no-local-device", out, kHoistGraphs + "compile", "--rank",
                                "0", "--rank", "1", "--graph", "aot_joint_graph"});
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  // Two graphs of that kind (forward and backward post-grad): ambiguous without --index.
  EXPECT_EQ(
      run_command(GPARITY_EXE, {"graph", "hoist", kHoistGraphs + "compile", "--graph",
                                "before_post_grad_graph", "--rank", "0", "--to-rank", "1", "--out", out})
          .exit_code,
      2);
  EXPECT_EQ(
      run_command(GPARITY_EXE, {"graph", "hoist", kHoistGraphs + "compile", "--graph",
                                "before_post_grad_graph", "--index", "1", "--to-rank", "1", "--out", out})
          .exit_code,
      0);
  const auto amb =
      run_command(GPARITY_EXE, {"graph", "hoist", kHoistGraphs + "compile", "--to-rank", "1", "--out", out});
  EXPECT_EQ(amb.exit_code, 2);
  EXPECT_NE(amb.err.find("graphs match; narrow the selection"), std::string::npos) << amb.err;
}

TEST(CliGraphHoist, GroupsFromTheCommandLine) {
  TempDir dir;
  const auto src = dir.write("g.py", kHoistFx);
  const auto out = (dir.path() / "h.json").string();
  // No group table: the device moves, the group is reported, exit 1.
  auto r = run_command(GPARITY_EXE, {"graph", "hoist", src, "--to-rank", "2", "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("unresolved  r (_c10d_functional.all_reduce.default) args[2]: 3"), std::string::npos)
      << r.out;
  r = run_command(GPARITY_EXE, {"graph", "hoist", src, "--to-rank", "2", "--out", out, "--group", "3=0,1",
                                "--group", "4=2,3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("group  r (_c10d_functional.all_reduce.default) args[2]: '3' -> '4'"),
            std::string::npos)
      << r.out;
  const auto g = gparity::model::load_graphs(out);
  ASSERT_EQ(g.entries.size(), 1U);
  const auto& hg = *g.entries[0].graph;
  EXPECT_EQ(gparity::model::value_text(hg, hg.node(hg.find_node("r")).args.back()), "'4'");
  // Bad input: malformed spec, conflicting sets, unknown file.
  EXPECT_EQ(
      run_command(GPARITY_EXE, {"graph", "hoist", src, "--to-rank", "2", "--out", out, "--group", "3=a"})
          .exit_code,
      2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "hoist", src, "--to-rank", "2", "--out", out, "--group",
                                      "3=0,1", "--group", "3=0,2"})
                .exit_code,
            2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "hoist", src, "--to-rank", "1", "--out", out,
                                      "--flight-recorder", dir.write("fr.json", "{\"pg_config\": 3}")})
                .exit_code,
            2);
}

TEST(CliGraphDevices, ReportsWhatHoistingWouldChange) {
  TempDir dir;
  const auto src = dir.write("g.py", kHoistFx);
  const auto r = run_command(GPARITY_EXE, {"graph", "devices", "--json", "--rank", "0", "--to-rank", "2", src,
                                           "--group", "3=0,1", "--group", "4=2,3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hoist"]["counts"]["device"], 1);
  EXPECT_EQ(j["hoist"]["counts"]["group"], 1);
  EXPECT_EQ(j["hoist"]["counts"]["annotation"], 4);
  EXPECT_TRUE(j["hoist"]["unresolved"].empty());
  const auto t = run_command(GPARITY_EXE, {"graph", "devices", "--rank", "0", "--to-rank", "2", src});
  EXPECT_NE(t.out.find("hoisting rank 0 -> rank 2: 1 literal and group changes, 4 annotations, 1 unresolved"),
            std::string::npos)
      << t.out;
}

}  // namespace
