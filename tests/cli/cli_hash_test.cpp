#include <gtest/gtest.h>

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
