#pragma once
// Report options shared by `gparity compare` and `gparity gate`: where each consumer writes.

#include <memory>
#include <string>
#include <vector>

#include "diff/finding.hpp"

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
};

/// --allow-incomplete (cmd_compare.cpp): missing evidence is reported but does not fail.
void add_allow_incomplete(CLI::App& cmd, bool& flag);

/// Owns the consumers and their files; `consumer()` fans out to all of them.
class ReportSinks {
 public:
  /// Throws InputError when a report file cannot be created.
  ReportSinks(const ReportOptions& o, const std::string& junit_suite);
  ~ReportSinks();
  ReportSinks(const ReportSinks&) = delete;
  ReportSinks& operator=(const ReportSinks&) = delete;
  diff::FindingConsumer& consumer() { return fan_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  diff::FanOutConsumer fan_;
};

}  // namespace gparity::cli
