// Output files written atomically, through the real binary: a report or output file that cannot
// be written is exit 2 naming the file and the OS error, no verdict is printed, and nothing (no
// partial file, no temporary) is left under the output folder. The failures are real: a file
// size limit on the child (RLIMIT_FSIZE with SIGXFSZ ignored: EFBIG, as on a full disk),
// /dev/full (ENOSPC), a parent that is a regular file (ENOTDIR). Root ignores permission bits,
// so read-only folders are not used.

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::testing::ChildLimits;
using gparity::testing::names_in;
using gparity::testing::read_file;
using gparity::testing::run_command;
using gparity::testing::TempDir;

const std::string kOutputRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/runs/";

/// A small FX graph whose aten call takes `arg_literal`.
std::string fx_graph(const std::string& arg_literal) {
  return "class GraphModule(torch.nn.Module):\n"
         "    def forward(self, L_x_ : torch.Tensor):\n"
         "        l_x_ = L_x_\n"
         "        add = torch.ops.aten.add.Tensor(l_x_, " +
         arg_literal +
         ");  l_x_ = None\n"
         "        return (add,)\n";
}

/// Checks a failed write: exit 2, stderr names `file` and the OS error, no verdict printed.
void expect_write_failure(const gparity::testing::CommandResult& r, const fs::path& file, int os_error) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::strerror(os_error)), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("PARITY"), std::string::npos) << r.out;
}

TEST(CliAtomicOutput, GateOnAFullDiskExitsTwoAndLeavesNoReport) {
  TempDir tmp;
  const auto out = tmp.path() / "reports";
  const auto policy = std::string(GPARITY_SOURCE_DIR) + "/samples/runs/gate.json";
  // 2000 bytes: junit.xml, report.md and report.html (about 1.8 KB each) fit, report.json (3.4 KB)
  // does not.
  const auto r =
      run_command(GPARITY_EXE, {"gate", "--policy", policy, "--out", out.string()}, {}, ChildLimits{2000});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find((out / "report.json").string() + ": cannot write: " + std::strerror(EFBIG)),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("PARITY"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("reports:"), std::string::npos) << r.out;
  EXPECT_TRUE(names_in(out).empty()) << "no report, not even the ones that fit; no temporary";

  // Without the limit the same gate passes and writes all four.
  const auto ok = run_command(GPARITY_EXE, {"gate", "--policy", policy, "--out", out.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(names_in(out),
            (std::vector<std::string>{"junit.xml", "report.html", "report.json", "report.md"}));
}

TEST(CliAtomicOutput, GateReportInAFileInsteadOfAFolderExitsTwo) {
  TempDir tmp;
  const auto blocker = tmp.write("blocker", "a file, not a folder");
  const auto junit = fs::path(blocker) / "junit.xml";
  const auto r = run_command(
      GPARITY_EXE, {"gate", "--baseline", kOutputRuns + "eager", "--candidate", kOutputRuns + "eager_repeat",
                    "--junit", junit.string(), "--out", (tmp.path() / "out").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(junit.string()), std::string::npos) << r.err;
}

TEST(CliAtomicOutput, CompareHtmlThatCannotBeWrittenExitsTwo) {
  TempDir tmp;
  const auto html = tmp.path() / "report.html";
  const auto r = run_command(
      GPARITY_EXE, {"compare", kOutputRuns + "eager", kOutputRuns + "eager_repeat", "--html", html.string()},
      {}, ChildLimits{512});
  expect_write_failure(r, html, EFBIG);
  EXPECT_TRUE(names_in(tmp.path()).empty());

  const auto full = run_command(
      GPARITY_EXE, {"compare", kOutputRuns + "eager", kOutputRuns + "eager_repeat", "--html", "/dev/full"});
  expect_write_failure(full, "/dev/full", ENOSPC);

  const auto ok = run_command(
      GPARITY_EXE, {"compare", kOutputRuns + "eager", kOutputRuns + "eager_repeat", "--html", html.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(read_file(html).find("</html>"), std::string::npos);
}

TEST(CliAtomicOutput, GraphExportThatCannotBeWrittenExitsTwo) {
  TempDir tmp;
  const auto fx = tmp.write("g.txt", fx_graph("'x'"));
  const auto out = tmp.path() / "out";
  fs::create_directories(out);
  const auto json = out / "graph.json";
  expect_write_failure(
      run_command(GPARITY_EXE, {"graph", "export", fx, "-o", json.string()}, {}, ChildLimits{64}), json,
      EFBIG);
  EXPECT_TRUE(names_in(out).empty());
  expect_write_failure(run_command(GPARITY_EXE, {"graph", "export", fx, "-o", "/dev/full"}), "/dev/full",
                       ENOSPC);
  const auto under_file = fs::path(fx) / "graph.json";
  expect_write_failure(run_command(GPARITY_EXE, {"graph", "export", fx, "-o", under_file.string()}),
                       under_file, ENOTDIR);
  // An existing export is kept whole when the new one fails.
  ASSERT_EQ(run_command(GPARITY_EXE, {"graph", "export", fx, "-o", json.string()}).exit_code, 0);
  const std::string before = read_file(json);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "export", fx, "--format", "dot", "-o", json.string()}, {},
                        ChildLimits{64})
                .exit_code,
            2);
  EXPECT_EQ(read_file(json), before);
  EXPECT_EQ(names_in(out), std::vector<std::string>{"graph.json"});
}

TEST(CliAtomicOutput, GraphDiffHtmlAndHoistOutThatCannotBeWrittenExitTwo) {
  TempDir tmp;
  const auto a = tmp.write("a.txt", fx_graph("'x'"));
  const auto html = tmp.path() / "out" / "diff.html";
  fs::create_directories(html.parent_path());
  expect_write_failure(
      run_command(GPARITY_EXE, {"graph", "diff", a, a, "--html", html.string()}, {}, ChildLimits{256}), html,
      EFBIG);
  EXPECT_TRUE(names_in(html.parent_path()).empty());
  const auto hoisted = tmp.path() / "out" / "hoisted.json";
  expect_write_failure(
      run_command(GPARITY_EXE, {"graph", "hoist", a, "--to-rank", "1", "-o", hoisted.string()}, {},
                  ChildLimits{64}),
      hoisted, EFBIG);
  EXPECT_TRUE(names_in(hoisted.parent_path()).empty());
}

}  // namespace
