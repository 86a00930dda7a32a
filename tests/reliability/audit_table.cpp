#include "tests/reliability/audit_table.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gparity::testing {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The cells of a table line; '|' inside a code span is text (commands have none, but be exact).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool code = false;
  for (std::size_t i = 1; i < line.size(); ++i) {  // line[0] == '|'
    const char c = line[i];
    if (c == '`') code = !code;
    if (c == '|' && !code) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::vector<std::string> code_spans(const std::string& cell) {
  std::vector<std::string> out;
  for (std::size_t b = cell.find('`'); b != std::string::npos; b = cell.find('`', b + 1)) {
    const auto e = cell.find('`', b + 1);
    if (e == std::string::npos) break;
    out.push_back(cell.substr(b + 1, e - b - 1));
    b = e;
  }
  return out;
}

std::vector<AuditRow> read_audit_table(const std::string& markdown_path) {
  std::ifstream in(markdown_path);
  if (!in) throw std::runtime_error("cannot read " + markdown_path);
  std::vector<AuditRow> rows;
  std::string line, section;
  bool in_table = false;
  int n = 0;
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error(markdown_path + ":" + std::to_string(n) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++n;
    if (line.starts_with("#")) section = trim(line.substr(line.find_first_not_of('#')));
    if (!line.starts_with("|")) {
      in_table = false;
      continue;
    }
    const auto c = cells(line);
    if (c.size() == 5 && c[0] == "case" && c[1] == "input" && c[2] == "command" && c[3] == "exit" &&
        c[4] == "output names") {
      in_table = true;
      continue;
    }
    if (!in_table || line.starts_with("| ---") || line.starts_with("|---")) continue;
    if (c.size() != 5) fail("an audit row has 5 cells");
    AuditRow r;
    r.section = section;
    r.line = n;
    const auto id = code_spans(c[0]), input = code_spans(c[1]), command = code_spans(c[2]);
    if (id.size() != 1 || input.empty() || command.size() != 1) fail("case, input and command are `code`");
    r.id = id[0];
    r.input = input[0];
    r.command = words(command[0]);
    if (r.command.empty() || r.command[0] != "gparity") fail("the command starts with gparity");
    r.command.erase(r.command.begin());
    for (const auto& w : words(c[3])) {
      if (w == "or" || w == ",") continue;
      try {
        r.exits.push_back(std::stoi(w));
      } catch (const std::exception&) {
        fail("exit is a code or codes (\"1 or 2\")");
      }
    }
    if (r.exits.empty()) fail("no exit code");
    r.expect = code_spans(c[4]);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace gparity::testing
