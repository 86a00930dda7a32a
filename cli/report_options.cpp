#include "cli/report_options.hpp"

#include <iostream>

#include "cli/terminal.hpp"
#include "core/model/base/atomic_file.hpp"
#include "diff/report/reporters.hpp"

namespace gparity::cli {

/// The terminal's reporter and the files' reporters, each file an AtomicFile; end() commits the
/// files before the terminal shows the verdict, so no verdict is printed over a lost report.
struct ReportSinks::Impl final : diff::FindingConsumer {
  std::unique_ptr<diff::FindingConsumer> terminal;
  std::vector<std::unique_ptr<model::AtomicFile>> files;
  std::vector<std::unique_ptr<diff::FindingConsumer>> file_reporters;

  std::ostream& open(const std::string& path) {
    files.push_back(std::make_unique<model::AtomicFile>(path));
    return files.back()->stream();
  }

  void begin(const diff::ReportHeader& h) override {
    for (auto& r : file_reporters) r->begin(h);
    terminal->begin(h);
  }
  void finding(const diff::Finding& f) override {
    for (auto& r : file_reporters) r->finding(f);
    terminal->finding(f);
  }
  void check(const diff::Check& c) override {
    for (auto& r : file_reporters) r->check(c);
    terminal->check(c);
  }
  void end(const diff::Verdict& v) override {
    for (auto& r : file_reporters) r->end(v);
    // Every file written and closed before any is renamed: one failure leaves none in place.
    for (auto& f : files) f->close();
    for (auto& f : files) f->commit();
    terminal->end(v);
  }
};

ReportSinks::ReportSinks(const ReportOptions& o, const std::string& junit_suite)
    : impl_(std::make_unique<Impl>()) {
  auto& i = *impl_;
  std::ostream& term = o.terminal != nullptr ? *o.terminal : std::cout;
  i.terminal =
      o.json ? diff::make_json_reporter(term)
             : diff::make_text_reporter(term, {o.terminal == nullptr && colour_enabled(stdout), o.verbose});
  if (!o.json_file.empty()) i.file_reporters.push_back(diff::make_json_reporter(i.open(o.json_file)));
  if (!o.junit.empty()) i.file_reporters.push_back(diff::make_junit_reporter(i.open(o.junit), junit_suite));
  if (!o.markdown.empty()) i.file_reporters.push_back(diff::make_markdown_reporter(i.open(o.markdown)));
  if (!o.html.empty()) i.file_reporters.push_back(diff::make_html_reporter(i.open(o.html)));
}

ReportSinks::~ReportSinks() = default;

diff::FindingConsumer& ReportSinks::consumer() {
  return *impl_;
}

}  // namespace gparity::cli
