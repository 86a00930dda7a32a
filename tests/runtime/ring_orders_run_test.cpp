// `gparity run --ring-orders` through the real binary on CPU: refused without CUDA (exit 2), and
// a Gloo run's manifest has no "nccl".

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;

std::vector<std::string> tiny(const std::filesystem::path& out) {
  return {"run", "--nproc",   "2", "--out",   out.string(), "--steps",   "1",  "--dim",
          "16",  "--layers",  "1", "--heads", "2",          "--hidden",  "32", "--vocab",
          "32",  "--seq-len", "4", "--batch", "1",          "--timeout", "20"};
}

TEST(GparityRunRingOrders, NeedsCuda) {
  TempDir dir;
  auto args = tiny(dir.path() / "r");
  args.insert(args.end(), {"--ring-orders", "reverse-odd"});
  const auto r = run_command(GPARITY_EXE, args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ring-orders sets NCCL's rings: it needs --device cuda"), std::string::npos)
      << r.err;

  args = tiny(dir.path() / "s");
  args.insert(args.end(), {"--device", "cuda", "--ring-orders", "zigzag"});
  EXPECT_EQ(run_command(GPARITY_EXE, args).exit_code, 2);
}

TEST(GparityRunRingOrders, GlooRunsRecordNoNccl) {
  TempDir dir;
  const auto out = dir.path() / "g";
  const auto r = run_command(GPARITY_EXE, tiny(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(out / "manifest.json");
  const auto m = nlohmann::json::parse(f);
  EXPECT_FALSE(m.contains("nccl")) << m.dump();
}

}  // namespace
