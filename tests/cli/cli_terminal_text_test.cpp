// Terminal-safe text through the real binary: a string read from an input (an FX graph's
// argument and source comment, a run's parameter name, a policy file's key) reaches the terminal
// and the text reports with its control characters escaped (model::display_text); --json and
// exported JSON keep it exact.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/file_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::testing::run_command;
using gparity::testing::TempDir;

const std::string kTextRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/runs/";

// OSC 0 (retitle the terminal, ended by BEL), then CSI 2J (clear the screen).
const std::string kHostile = "\x1b]0;title\x07\x1b[2J";
const std::string kHostileShown = "\\x1b]0;title\\x07\\x1b[2J";

bool has_terminal_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b < 0x20 && b != '\n') || b == 0x7F;
  });
}

using gparity::testing::slurp;

bool json_holds_string(const nlohmann::json& j, const std::string& s) {
  if (j.is_string()) return j.get<std::string>() == s;
  if (j.is_structured())
    return std::any_of(j.begin(), j.end(), [&](const nlohmann::json& v) { return json_holds_string(v, s); });
  return false;
}

/// An FX graph whose aten call takes kHostile as a string argument (a Python escape, as
/// print_readable writes it) and whose source comment holds raw ESC bytes.
std::string hostile_fx(const std::string& arg_literal = "'\\x1b]0;title\\x07\\x1b[2J'") {
  return "class GraphModule(torch.nn.Module):\n"
         "    def forward(self, L_x_ : torch.Tensor):\n"
         "        l_x_ = L_x_\n"
         "        \n"
         "        # File: /tmp/ev\x1b[2Jil.py:3 in fn, code: x.add(s)\n"
         "        add = torch.ops.aten.add.Tensor(l_x_, " +
         arg_literal +
         ");  l_x_ = None\n"
         "        return (add,)\n";
}

// --- terminal-safe text ----------------------------------------------------------------------

TEST(CliTerminalSafeText, GraphShowEscapesAnArgumentsControlSequenceAndJsonKeepsIt) {
  TempDir tmp;
  const auto fx = tmp.write("evil.txt", hostile_fx());
  const auto text = run_command(GPARITY_EXE, {"graph", "show", fx});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_FALSE(has_terminal_control(text.out)) << text.out;
  EXPECT_NE(text.out.find(kHostileShown), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("/tmp/ev\\x1b[2Jil.py:3"), std::string::npos) << text.out;

  const auto json = run_command(GPARITY_EXE, {"graph", "show", "--json", fx});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(json_holds_string(nlohmann::json::parse(json.out), kHostile)) << json.out;

  // Exported JSON stays exact too.
  const auto out = tmp.path() / "g.json";
  ASSERT_EQ(run_command(GPARITY_EXE, {"graph", "export", fx, "-o", out.string()}).exit_code, 0);
  EXPECT_TRUE(json_holds_string(nlohmann::json::parse(slurp(out)), kHostile));
}

TEST(CliTerminalSafeText, GraphDiffAndListEscapeTheInputsStrings) {
  TempDir tmp;
  const auto a = tmp.write("a.txt", hostile_fx());
  const auto b = tmp.write("b.txt", hostile_fx("'plain'"));
  const auto r = run_command(GPARITY_EXE, {"graph", "diff", a, b});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(has_terminal_control(r.out)) << r.out;
  EXPECT_NE(r.out.find(kHostileShown), std::string::npos) << r.out;
  const auto j = run_command(GPARITY_EXE, {"graph", "diff", "--json", a, b});
  EXPECT_TRUE(json_holds_string(nlohmann::json::parse(j.out), "'" + kHostile + "'")) << j.out;
  const auto d = run_command(GPARITY_EXE, {"graph", "list", a});
  EXPECT_FALSE(has_terminal_control(d.out + d.err)) << d.out << d.err;
}

TEST(CliTerminalSafeText, ErrorMessagesQuotingAnInputAreEscaped) {
  TempDir tmp;
  // A malformed FX line: the parser's message quotes it.
  const auto fx = tmp.write("bad.txt",
                            "class GraphModule(torch.nn.Module):\n"
                            "    def forward(self, x):\n"
                            "        y = \x1b]0;pwned\x07\x1b[2J(x\n");
  const auto r = run_command(GPARITY_EXE, {"graph", "show", fx});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(fx), std::string::npos) << r.err;
  EXPECT_FALSE(has_terminal_control(r.out + r.err)) << r.out << r.err;
  EXPECT_NE(r.out.find("y = \\x1b]0;pwned\\x07\\x1b[2J(x"), std::string::npos) << r.out;

  // An InputError that quotes the input: a policy file's unknown key.
  const auto policy =
      tmp.write("policy.json", R"({"baseline": "a", "candidate": "b", "\u001b]0;pwned\u0007": 1})");
  const auto g = run_command(GPARITY_EXE, {"gate", "--policy", policy});
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_NE(g.err.find("unknown key \"\\x1b]0;pwned\\x07\""), std::string::npos) << g.err;
  EXPECT_FALSE(has_terminal_control(g.err)) << g.err;
}

/// A copy of run `name` whose parameter tok.weight is called tok<kHostile>.weight.
fs::path run_with_hostile_parameter(const TempDir& tmp, const std::string& name) {
  const auto dir = tmp.path() / name;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kTextRuns + name)) {
    std::string text = slurp(e.path());
    const std::string from = "\"tok.weight\"";
    const std::string to = "\"tok\\u001b]0;title\\u0007\\u001b[2J.weight\"";
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
    std::ofstream(dir / e.path().filename(), std::ios::binary) << text;
  }
  return dir;
}

TEST(CliTerminalSafeText, CompareReportsEscapeAParameterNameAndJsonKeepsIt) {
  TempDir tmp;
  const auto base = run_with_hostile_parameter(tmp, "eager");
  const auto cand = run_with_hostile_parameter(tmp, "compile");
  const auto md = tmp.path() / "report.md";
  const auto r = run_command(GPARITY_EXE, {"compare", "-v", base.string(), cand.string(), "--markdown",
                                           md.string(), "--junit", (tmp.path() / "junit.xml").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("tok" + kHostileShown + ".weight"), std::string::npos) << r.out;
  EXPECT_FALSE(has_terminal_control(r.out)) << r.out;
  EXPECT_FALSE(has_terminal_control(slurp(md)));
  EXPECT_FALSE(has_terminal_control(slurp(tmp.path() / "junit.xml")));
  const auto j = run_command(GPARITY_EXE, {"compare", "--json", base.string(), cand.string()});
  // --json: the exact name (a finding's location).
  EXPECT_TRUE(json_holds_string(nlohmann::json::parse(j.out)["findings"], "tok" + kHostile + ".weight"))
      << j.out.substr(0, 2000);
}

}  // namespace
