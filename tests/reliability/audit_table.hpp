#pragma once
// docs/reliability.md is the reliability suite's table: each row of its tables headed
// | case | input | command | exit | output names | is one test case. The doc says what each hostile
// input must do; the suite builds the input (hostile_inputs.hpp) and runs the command, so the
// doc and the tests cannot drift apart.

#include <ostream>
#include <string>
#include <vector>

namespace gparity::testing {

struct AuditRow {
  std::string id;                    // `case`: unique, the test's name
  std::string input;                 // the hostile input's key (hostile_inputs.hpp)
  std::vector<std::string> command;  // after "gparity": words, each may hold {placeholders}
  std::vector<int> exits;            // accepted exit codes ("1 or 2": never parity)
  std::vector<std::string> expect;   // each must appear in stdout + stderr; "no file P": P must not exist
  std::string section;               // the heading above the table
  int line = 0;                      // in the doc
};

/// The doc's rows; throws std::runtime_error naming the line of a malformed row.
std::vector<AuditRow> read_audit_table(const std::string& markdown_path);

/// gtest prints a row by its case name.
inline void PrintTo(const AuditRow& row, std::ostream* os) {
  *os << row.id;
}

/// The backquoted spans of a table cell, in order.
std::vector<std::string> code_spans(const std::string& cell);

}  // namespace gparity::testing
