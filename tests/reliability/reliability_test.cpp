// The reliability audit (docs/reliability.md): every row of the doc's tables is a test case that
// builds its hostile input, runs the real `gparity` on it and checks what the row says: the exit
// code, the text the output must hold (the file named, the key words), and for every row alike:
// no crash (no signal), no hang (a generous hang guard, not a speed goal), no "internal error",
// and no raw control character from an input on stdout or stderr.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

#include "tests/reliability/audit_table.hpp"
#include "tests/reliability/child_process.hpp"
#include "tests/reliability/hostile_inputs.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::testing {
namespace {

namespace fs = std::filesystem;
using Vars = std::map<std::string, std::string>;

const std::string kDoc = std::string(GPARITY_SOURCE_DIR) + "/docs/reliability.md";

// Read once at start-up (the tests are generated from it); a doc that does not parse yields no
// rows here and fails AuditDoc.ParsesAndEveryRowIsWellFormed with the reason.
const std::vector<AuditRow>& rows() {
  static const std::vector<AuditRow> r = [] {
    try {
      return read_audit_table(kDoc);
    } catch (const std::exception&) {
      return std::vector<AuditRow>{};
    }
  }();
  return r;
}

const HostileInput* input_named(const std::string& key) {
  for (const auto& i : hostile_inputs())
    if (i.key == key) return &i;
  return nullptr;
}

/// `text` with each {name} replaced; an unknown name is a failure of the row, not a pass.
std::string substitute(const std::string& text, const Vars& vars) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto open = text.find('{', i);
    const auto close = open == std::string::npos ? std::string::npos : text.find('}', open);
    if (close == std::string::npos) {
      out += text.substr(i);
      break;
    }
    const auto name = text.substr(open + 1, close - open - 1);
    const auto it = vars.find(name);
    if (it == vars.end()) throw std::runtime_error("unknown placeholder {" + name + "} in '" + text + "'");
    out += text.substr(i, open - i) + it->second;
    i = close + 1;
  }
  return out;
}

/// The first control character (C0 but tab and newline, DEL) in `text`, with some context.
std::string first_control(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      const auto from = i < 60 ? 0 : i - 60;
      std::string context;
      for (char ch : text.substr(from, 120)) {
        const auto u = static_cast<unsigned char>(ch);
        if (u < 0x20 || u == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", u);
          context += hex;
        } else {
          context += ch;
        }
      }
      return "byte " + std::to_string(i) + ": ..." + context + "...";
    }
  }
  return "";
}

bool runtime_built() {
  return fs::exists(fs::path(GPARITY_EXE).parent_path() / "gparity-run");
}

class AuditTable : public ::testing::TestWithParam<AuditRow> {};

TEST_P(AuditTable, Row) {
  const AuditRow& row = GetParam();
  SCOPED_TRACE("docs/reliability.md:" + std::to_string(row.line) + " (" + row.section + ")");
  const HostileInput* input = input_named(row.input);
  ASSERT_NE(input, nullptr) << "no hostile input named '" << row.input << "' (tests/reliability/hostile/)";
  if ((row.command[0] == "run" || row.command[0] == "replay") && !runtime_built())
    GTEST_SKIP() << "gparity-run is built only with LibTorch";
  TempDir dir;
  const auto variants = input->build(dir.path());
  ASSERT_FALSE(variants.empty());
  for (const Variant& v : variants) {
    if (!v.limits.mounts.empty()) {
      if (const auto why = tmpfs_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
    }
    SCOPED_TRACE(row.input + (v.label.empty() ? "" : ": " + v.label));
    Vars vars = standard_vars(dir.path());
    for (const auto& [k, val] : v.vars) vars[k] = val;
    std::vector<std::string> args;
    for (const auto& w : row.command) args.push_back(substitute(w, vars));
    const ChildResult r = run_child(GPARITY_EXE, args, v.limits);
    ASSERT_EQ(r.setup_error, "");
    // GPARITY_AUDIT_SHOW=1 prints what each row's command printed: to write a row's expectations.
    if (std::getenv("GPARITY_AUDIT_SHOW") != nullptr)
      std::cout << "--- " << row.id << " [" << v.label << "] exit " << r.exit_code << "\n"
                << (r.out + r.err).substr(0, 1500) << "\n";
    const std::string all = r.out + r.err;
    const std::string shown =
        all.size() > 4000 ? all.substr(0, 2000) + "\n[...]\n" + all.substr(all.size() - 2000) : all;
    ASSERT_FALSE(r.timed_out) << "hang guard ran out\n" << shown;
    ASSERT_EQ(r.signal, 0) << "killed by signal " << r.signal << "\n" << shown;
    EXPECT_TRUE(std::find(row.exits.begin(), row.exits.end(), r.exit_code) != row.exits.end())
        << "exit " << r.exit_code << "\n"
        << shown;
    EXPECT_EQ(all.find("internal error"), std::string::npos) << shown;
    for (const auto& e : row.expect) {
      if (e.starts_with("no file ")) {
        const auto path = substitute(e.substr(8), vars);
        std::error_code ec;
        EXPECT_FALSE(fs::exists(fs::symlink_status(path, ec))) << path << " was left behind";
      } else {
        const auto text = substitute(e, vars);
        EXPECT_NE(all.find(text), std::string::npos) << "expected '" << text << "' in the output\n" << shown;
      }
    }
    EXPECT_EQ(first_control(all), "") << "a raw control character reached the output";
  }
}

std::string test_name(const ::testing::TestParamInfo<AuditRow>& info) {
  std::string s = info.param.id;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Doc, AuditTable, ::testing::ValuesIn(rows()), test_name);

// ---- the table itself ---------------------------------------------------------------------------

TEST(AuditDoc, ParsesAndEveryRowIsWellFormed) {
  const auto parsed = read_audit_table(kDoc);  // throws with the line of a malformed row
  ASSERT_GT(parsed.size(), 50U);
  std::set<std::string> ids;
  for (const auto& r : parsed) {
    EXPECT_TRUE(ids.insert(r.id).second) << "case " << r.id << " twice (line " << r.line << ")";
    EXPECT_NE(input_named(r.input), nullptr) << "line " << r.line << ": no input " << r.input;
    EXPECT_FALSE(r.expect.empty()) << "line " << r.line << ": a row names what the output holds";
  }
}

TEST(AuditDoc, EveryInputBuiltHereHasARow) {
  std::set<std::string> used;
  for (const auto& r : rows()) used.insert(r.input);
  for (const auto& i : hostile_inputs())
    EXPECT_TRUE(used.contains(i.key)) << i.key << " has no row in the doc";
}

TEST(AuditDoc, EveryKindOfHostileInputHasRows) {
  std::set<std::string> kinds;
  for (const auto& r : rows())
    if (const auto* i = input_named(r.input)) kinds.insert(i->kind);
  for (const auto& k : hostile_kinds()) EXPECT_TRUE(kinds.contains(k)) << "no row for: " << k;
  for (const auto& i : hostile_inputs())
    EXPECT_NE(std::find(hostile_kinds().begin(), hostile_kinds().end(), i.kind), hostile_kinds().end())
        << i.key << ": unknown kind " << i.kind;
}

TEST(AuditDoc, EveryCommandHasRows) {
  std::set<std::string> commands;
  for (const auto& r : rows())
    commands.insert(r.command[0] == "graph" && r.command.size() > 1 ? "graph " + r.command[1] : r.command[0]);
  for (const auto* c :
       {"compare", "gate", "collectives", "buckets", "graph list", "graph show", "graph export",
        "graph ranks", "graph diff", "graph devices", "graph hoist", "hash", "nccl-rings", "replay", "run"})
    EXPECT_TRUE(commands.contains(c)) << "no row runs gparity " << c;
}

}  // namespace
}  // namespace gparity::testing
