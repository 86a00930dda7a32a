#pragma once
// Report options shared by `gparity compare`, `gparity gate` and the other commands that report
// through diff::FindingConsumer: where each consumer writes.

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "diff/report/finding.hpp"

namespace CLI {
class App;
}

namespace gparity::cli {

struct ReportOptions {
  bool json = false;  // JSON on stdout instead of text
  bool verbose = false;
  std::string junit;     // file
  std::string markdown;  // file
  std::string json_file;
  std::string html;  // file
  /// Where the terminal report goes (nullptr: std::cout). `gparity gate --json` sends its second,
  /// op-level report to std::cerr as text, so that stdout stays one JSON document.
  std::ostream* terminal = nullptr;
};

/// --allow-incomplete (cmd_compare.cpp): missing evidence is reported but does not fail.
void add_allow_incomplete(CLI::App& cmd, bool& flag);

/// Owns the consumers and their files; `consumer()` fans out to all of them. Report files are
/// written atomically (model::AtomicFile): at the engine's end() every file's document is written
/// and closed, with every error checked, and only then are they all renamed into place and the
/// terminal's verdict printed. A failed write throws model::OutputError out of end() (exit 2,
/// naming the file and the OS error); a command that fails, or never ends its report, leaves no
/// file under the final names.
class ReportSinks {
 public:
  /// Throws model::OutputError when a report file cannot be created.
  ReportSinks(const ReportOptions& o, const std::string& junit_suite);
  ~ReportSinks();
  ReportSinks(const ReportSinks&) = delete;
  ReportSinks& operator=(const ReportSinks&) = delete;
  diff::FindingConsumer& consumer();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gparity::cli
