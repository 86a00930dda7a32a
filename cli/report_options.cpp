#include "cli/report_options.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/terminal.hpp"
#include "core/model/base/input_error.hpp"
#include "diff/reporters.hpp"

namespace gparity::cli {

struct ReportSinks::Impl {
  std::vector<std::unique_ptr<std::ofstream>> files;
  std::vector<std::unique_ptr<diff::FindingConsumer>> consumers;

  std::ostream& open(const std::string& path) {
    auto f = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
    if (!*f) throw model::InputError(path, "cannot create report file");
    files.push_back(std::move(f));
    return *files.back();
  }
};

ReportSinks::ReportSinks(const ReportOptions& o, const std::string& junit_suite)
    : impl_(std::make_unique<Impl>()) {
  if (o.json) {
    impl_->consumers.push_back(diff::make_json_reporter(std::cout));
  } else {
    impl_->consumers.push_back(diff::make_text_reporter(std::cout, {colour_enabled(stdout), o.verbose}));
  }
  if (!o.json_file.empty()) impl_->consumers.push_back(diff::make_json_reporter(impl_->open(o.json_file)));
  if (!o.junit.empty())
    impl_->consumers.push_back(diff::make_junit_reporter(impl_->open(o.junit), junit_suite));
  if (!o.markdown.empty()) impl_->consumers.push_back(diff::make_markdown_reporter(impl_->open(o.markdown)));
  if (!o.html.empty()) impl_->consumers.push_back(diff::make_html_reporter(impl_->open(o.html)));
  for (auto& c : impl_->consumers) fan_.add(*c);
}

ReportSinks::~ReportSinks() = default;

}  // namespace gparity::cli
