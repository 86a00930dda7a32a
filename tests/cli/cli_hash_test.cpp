#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;

const std::string kSample = std::string(GPARITY_SOURCE_DIR) + "/samples/tiny-checkpoint.safetensors";

TEST(CliHash, JsonMatchesIndependentExpectations) {
  const auto r = run_command(GPARITY_EXE, {"hash", "--json", kSample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  std::ifstream ef(std::string(GPARITY_SOURCE_DIR) + "/samples/tiny-checkpoint.expected.json");
  const auto expected = nlohmann::json::parse(ef);
  ASSERT_EQ(out.size(), 1U);
  const auto& tensors = out[0]["tensors"];
  ASSERT_EQ(tensors.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(tensors[i]["name"], expected[i]["name"]);
    EXPECT_EQ(tensors[i]["xxh3"], expected[i]["xxh3"]);
    EXPECT_EQ(tensors[i]["shard_hash"], expected[i]["shard_hash"]);
  }
}

// --spec v2 against the independent Python reference (scripts/shard_hash_v2_ref.py), which reads
// the safetensors file itself here; v1 stays the default and says so.
TEST(CliHash, SpecV2MatchesThePythonReferenceAndIsNamed) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  gparity::testing::TempDir tmp;
  tmp.write("ref.py", R"(import json, struct, sys
sys.path.insert(0, sys.argv[1] + "/scripts")
import shard_hash_v2_ref as ref
raw = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
size = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "BF16": 2, "F16": 2, "I16": 2, "U8": 1, "I8": 1, "BOOL": 1,
        "F8_E4M3": 1, "F8_E5M2": 1}
out = {}
for name, t in header.items():
    if name == "__metadata__":
        continue
    begin, end = t["data_offsets"]
    out[name] = "%016x" % ref.shard_hash(raw[8 + n + begin:8 + n + end], size[t["dtype"]])
print(json.dumps(out))
)");
  const auto py =
      run_command("/usr/bin/python3", {(tmp.path() / "ref.py").string(), GPARITY_SOURCE_DIR, kSample});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto want = nlohmann::json::parse(py.out);
  const auto r = run_command(GPARITY_EXE, {"hash", "--spec", "v2", "--json", kSample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out[0]["shard_spec"], "v2");
  ASSERT_EQ(out[0]["tensors"].size(), want.size());
  for (const auto& t : out[0]["tensors"])
    EXPECT_EQ(t["shard_hash"], want.at(t["name"].get<std::string>())) << t["name"];
  const auto v1 = nlohmann::json::parse(run_command(GPARITY_EXE, {"hash", "--json", kSample}).out);
  EXPECT_EQ(v1[0]["shard_spec"], "v1");
  EXPECT_NE(v1[0]["tensors"][0]["shard_hash"], out[0]["tensors"][0]["shard_hash"]);
  const auto bad = run_command(GPARITY_EXE, {"hash", "--spec", "v3", kSample});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

TEST(CliHash, TextTableListsEveryTensor) {
  const auto r = run_command(GPARITY_EXE, {"hash", kSample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tok.weight"), std::string::npos);
  EXPECT_NE(r.out.find("bfloat16"), std::string::npos);
  EXPECT_NE(r.out.find("[48, 16]"), std::string::npos);
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "no colour when stdout is not a TTY";
}

TEST(CliHash, MalformedFileExitsTwoNamingTheFile) {
  gparity::testing::TempDir tmp;
  const auto bad = tmp.write("broken.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13));
  const auto r = run_command(GPARITY_EXE, {"hash", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
}

TEST(CliHash, MissingFileAndUsageErrorsExitTwo) {
  EXPECT_EQ(run_command(GPARITY_EXE, {"hash", "/nonexistent/file.bin"}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"hash"}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"no-such-command"}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {}).exit_code, 2);
}

TEST(CliHash, HelpExitsZeroEverywhere) {
  for (const auto& args : {std::vector<std::string>{"--help"}, std::vector<std::string>{"hash", "--help"}}) {
    const auto r = run_command(GPARITY_EXE, args);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
}

// A named command builds only its own options (run_app), so help without one must still list
// every command, and each command's own help must still be there.
TEST(CliHash, TopLevelHelpListsEveryCommandAndEachHasItsOwn) {
  const auto top = run_command(GPARITY_EXE, {"--help"});
  ASSERT_EQ(top.exit_code, 0);
  for (const std::string cmd :
       {"hash", "run", "replay", "compare", "gate", "graph", "collectives", "buckets", "nccl-rings"}) {
    EXPECT_NE(top.out.find("\n  " + cmd + " "), std::string::npos) << cmd << "\n" << top.out;
    if (cmd == "run" || cmd == "replay") continue;  // forwarded to gparity-run
    const auto own = run_command(GPARITY_EXE, {cmd, "--help"});
    EXPECT_EQ(own.exit_code, 0) << cmd;
    EXPECT_NE(own.out.find("Usage: gparity " + cmd), std::string::npos) << own.out;
  }
  // graph's subcommands come from three registrars: all of them are there under `graph`.
  const auto graph = run_command(GPARITY_EXE, {"graph", "--help"});
  for (const std::string sub : {"list", "show", "export", "ranks", "diff", "devices", "hoist"})
    EXPECT_NE(graph.out.find("\n  " + sub + " "), std::string::npos) << sub << "\n" << graph.out;
  EXPECT_EQ(run_command(GPARITY_EXE, {"--version"}).exit_code, 0);
}

}  // namespace
