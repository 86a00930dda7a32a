#pragma once
// The standard FindingConsumers: human text (ANSI colour only when asked, i.e. on a TTY), one
// JSON document, JUnit XML (a test case per check), Markdown for CI job summaries and HTML. Each
// collects what it is sent and writes its document to the stream at end(). Text and Markdown show
// every string through model::display_text (core/model/base/display_text.hpp); JSON keeps strings
// exact.

#include <memory>
#include <ostream>

#include "diff/report/finding.hpp"

namespace gparity::diff {

struct TextOptions {
  bool colour = false;
  /// Info findings are shown only when verbose.
  bool verbose = false;
};

std::unique_ptr<FindingConsumer> make_text_reporter(std::ostream& out, TextOptions options = {});
std::unique_ptr<FindingConsumer> make_json_reporter(std::ostream& out);
/// `suite` names the JUnit test suite ("gparity.compare", "gparity.gate").
std::unique_ptr<FindingConsumer> make_junit_reporter(std::ostream& out, std::string suite);
std::unique_ptr<FindingConsumer> make_markdown_reporter(std::ostream& out);
/// A self-contained HTML page: verdict, notes, summary, checks and findings.
std::unique_ptr<FindingConsumer> make_html_reporter(std::ostream& out);

/// XML text escaping for the JUnit and HTML reporters: &, <, >, ", ' as entities, line feeds as
/// &#10;, other control characters and invalid UTF-8 bytes as model::display_lines shows them.
std::string xml_escape(std::string_view text);

}  // namespace gparity::diff
