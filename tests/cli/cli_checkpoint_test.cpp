// `gparity hash` on DCP folders, `gparity compare` / `gparity gate` on checkpoints, and
// `gparity collectives` on pickled Flight Recorder dumps, through the real binary.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::testing::run_command;

const std::string kCheckpointData = std::string(GPARITY_SOURCE_DIR) + "/tests/data";
// The shared samples' torch-2.11-dcp; empty when absent.
const fs::path kDcpSamples = gparity::testing::sample_folder("torch-2.11-dcp");

#define SKIP_WITHOUT_SAMPLES() \
  if (kDcpSamples.empty()) GTEST_SKIP() << "no shared samples (../shared or $GPARITY_SAMPLES)"

std::string sample(const std::string& rel) {
  return (kDcpSamples / rel).string();
}

TEST(CliCheckpoint, HashJsonOfADcpFolder) {
  const auto r = run_command(GPARITY_EXE, {"hash", "--json", kCheckpointData + "/dcp/grid",
                                           kCheckpointData + "/dcp/grid.safetensors"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2U);
  EXPECT_EQ(j[0]["format"], "dcp");
  EXPECT_EQ(j[0]["other_entries"], nlohmann::json::array({"step"}));
  // Every DCP tensor hashes like the safetensors one of the same name.
  for (const auto& t : j[0]["tensors"]) {
    bool found = false;
    for (const auto& u : j[1]["tensors"]) {
      if (u["name"] != t["name"]) continue;
      found = true;
      EXPECT_EQ(t["xxh3"], u["xxh3"]) << t["name"];
      EXPECT_EQ(t["shard_hash"], u["shard_hash"]) << t["name"];
      EXPECT_EQ(t["shape"], u["shape"]) << t["name"];
    }
    EXPECT_TRUE(found) << t["name"];
  }
}

TEST(CliCheckpoint, LayoutsCompareEqualPerParameter) {
  SKIP_WITHOUT_SAMPLES();
  for (const char* step : {"step-0", "step-3"}) {
    const std::string s = step;
    const auto r =
        run_command(GPARITY_EXE, {"compare", "--json", sample("fsdp4/" + s), sample("fsdp2/" + s)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_NE(j.dump().find("all 8 parameters bitwise identical"), std::string::npos) << j.dump(1);
    // Each DCP checkpoint against the safetensors of its own step.
    for (const char* layout : {"fsdp4/", "fsdp2/"}) {
      const auto st =
          run_command(GPARITY_EXE, {"compare", sample(layout + s), sample(layout + s + ".safetensors")});
      EXPECT_EQ(st.exit_code, 0) << layout << s << "\n" << st.out << st.err;
    }
  }
  // Run folders: every common step (0 and 3), DCP folders preferred over the safetensors files.
  const auto runs = run_command(GPARITY_EXE, {"compare", "--json", sample("fsdp4"), sample("fsdp2")});
  ASSERT_EQ(runs.exit_code, 0) << runs.out << runs.err;
  EXPECT_NE(runs.out.find("all 16 parameters bitwise identical"), std::string::npos) << runs.out;
}

TEST(CliCheckpoint, Step0AgainstStep3DiffersInRegistrationOrder) {
  SKIP_WITHOUT_SAMPLES();
  const auto r =
      run_command(GPARITY_EXE, {"compare", "--json", sample("fsdp4/step-0"), sample("fsdp2/step-3")});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const std::string text = j.dump();
  EXPECT_NE(text.find("8 of 8 parameters differ; first: model.tok.weight, model.layers.0.norm.weight"),
            std::string::npos)
      << j.dump(1);
  EXPECT_NE(text.find("4 chunks of [64, 128]"), std::string::npos);  // the layout of each side
  EXPECT_NE(text.find("2 chunks of [128, 128]"), std::string::npos);
  // The same facts from the safetensors files of the same steps.
  const auto st = run_command(
      GPARITY_EXE, {"compare", sample("fsdp4/step-0.safetensors"), sample("fsdp4/step-3.safetensors")});
  EXPECT_EQ(st.exit_code, 1) << st.out;
}

TEST(CliCheckpoint, GatePolicyAcceptsCheckpoints) {
  gparity::testing::TempDir tmp;
  const auto policy =
      tmp.write("policy.json", nlohmann::json{{"baseline", kCheckpointData + "/dcp/grid"},
                                              {"candidate", kCheckpointData + "/dcp/grid.safetensors"}}
                                   .dump());
  const auto r =
      run_command(GPARITY_EXE, {"gate", "--policy", policy, "--out", (tmp.path() / "out").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(tmp.path() / "out" / "junit.xml"));
}

TEST(CliCheckpoint, BadCheckpointsExitTwo) {
  gparity::testing::TempDir tmp;
  fs::copy(kCheckpointData + "/dcp/grid", tmp.path() / "ckpt", fs::copy_options::recursive);
  fs::permissions(tmp.path() / "ckpt" / "__0_0.distcp", fs::perms::owner_write, fs::perm_options::add);
  fs::resize_file(tmp.path() / "ckpt" / "__0_0.distcp", 100);
  const auto h = run_command(GPARITY_EXE, {"hash", (tmp.path() / "ckpt").string()});
  EXPECT_EQ(h.exit_code, 2);
  EXPECT_NE(h.err.find("__0_0.distcp"), std::string::npos) << h.err;
  const auto c =
      run_command(GPARITY_EXE, {"compare", (tmp.path() / "ckpt").string(), kCheckpointData + "/dcp/grid"});
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
}

TEST(CliCheckpoint, PickledFlightRecorderDumpsGiveTheSameCollectivesAsJson) {
  const auto pkl =
      run_command(GPARITY_EXE, {"collectives", "--json", kCheckpointData + "/flight_recorder_pickle"});
  const auto json =
      run_command(GPARITY_EXE, {"collectives", "--json", kCheckpointData + "/flight_recorder_pickle/json"});
  // gather_object's gather: only the destination records outputs; root and non-root records
  // pair by the rooted rule (diff/collectives/collectives.hpp), so the ranks agree, the same in both forms.
  ASSERT_EQ(json.exit_code, 0) << json.out << json.err;
  ASSERT_EQ(pkl.exit_code, json.exit_code) << pkl.out << pkl.err;
  auto a = nlohmann::json::parse(pkl.out);
  auto b = nlohmann::json::parse(json.out);
  // Identical reports apart from the file paths they name.
  std::string ta = a.dump(), tb = b.dump();
  const auto strip = [](std::string s, const std::string& what) {
    for (auto at = s.find(what); at != std::string::npos; at = s.find(what)) s.erase(at, what.size());
    return s;
  };
  const std::string dir = kCheckpointData + "/flight_recorder_pickle";
  ta = strip(strip(ta, dir), "/fr_rank");
  tb = strip(strip(strip(tb, dir + "/json"), "_flight_recorder.json"), "/rank");
  ta = strip(ta, ".pkl");
  EXPECT_EQ(ta, tb);
  EXPECT_GT(a["result"]["rooted_pairs"].get<int>(), 0) << pkl.out;  // the gathers, root and non-root
}

TEST(CliCheckpoint, PickledDumpReferencingOsSystemIsRefused) {
  gparity::testing::TempDir tmp;
  const auto evil =
      tmp.write("rank0_dump.pkl",
                std::string("\x80\x02}(X\x07\x00\x00\x00versioncos\nsystem\nX\x01\x00\x00\x00x\x85Ru.", 37));
  const auto r = run_command(GPARITY_EXE, {"collectives", evil});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("os.system"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("allow-list"), std::string::npos) << r.err;
}

}  // namespace
