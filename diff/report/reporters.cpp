#include "diff/report/reporters.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>

#include "core/model/base/display_text.hpp"
#include "core/model/base/json_output.hpp"
#include "diff/graphs/report_html.hpp"

namespace gparity::diff {
namespace {

using model::shown;

std::string ansi(std::string_view text, const char* code, bool on) {
  if (!on) return std::string(text);
  return std::string("\033[") + code + "m" + std::string(text) + "\033[0m";
}

const char* severity_colour(Severity s) {
  switch (s) {
    case Severity::Error: return "1;31";
    case Severity::Divergence: return "31";
    case Severity::Incomplete: return "1;33";
    case Severity::Warning: return "33";
    case Severity::Info: return "2";
  }
  return "0";
}

std::string check_name(const Check& c) {
  return c.rank ? c.name + " [rank " + std::to_string(*c.rank) + "]" : c.name + " [all ranks]";
}

class TextReporter final : public FindingConsumer {
 public:
  TextReporter(std::ostream& out, TextOptions o) : out_(out), o_(o) {}
  // Every string of a report may quote an input (a path, a parameter or node name): each goes
  // through display_text, so an artifact's control characters never reach the terminal.
  void begin(const ReportHeader& h) override {
    out_ << ansi(model::display_text(h.title), "1", o_.colour) << ": " << shown(h.baseline)
         << " (baseline) vs " << shown(h.candidate) << " (candidate)\n";
    out_ << "  comparison: " << shown(h.mode) << '\n';
    for (const auto& n : h.notes) out_ << "  note: " << shown(n) << '\n';
  }
  void finding(const Finding& f) override {
    incomplete_ = incomplete_ || f.severity == Severity::Incomplete;
    if (f.severity == Severity::Info && !o_.verbose) return;
    out_ << ansi(std::string(severity_name(f.severity)), severity_colour(f.severity), o_.colour);
    const auto where = f.where.text();
    if (!where.empty()) out_ << " [" << shown(where) << "]";
    out_ << ": " << shown(f.message) << '\n';
  }
  void check(const Check& c) override { checks_.push_back(c); }
  void end(const Verdict& v) override {
    if (!checks_.empty()) {
      std::size_t count[4] = {0, 0, 0, 0};
      for (const auto& c : checks_) ++count[static_cast<int>(c.outcome)];
      out_ << "checks: " << count[0] << " passed, " << count[1] << " failed, " << count[3] << " errors, "
           << count[2] << " skipped (not recorded in both runs)\n";
    }
    for (const auto& s : v.summary) out_ << "  " << shown(s) << '\n';
    const char* colour = v.exit_code != 0 ? "1;31" : (incomplete_ ? "1;33" : "1;32");
    out_ << ansi(model::display_text(v.headline), colour, o_.colour) << '\n';
  }

 private:
  std::ostream& out_;
  TextOptions o_;
  std::vector<Check> checks_;
  bool incomplete_ = false;
};

class JsonReporter final : public FindingConsumer {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out) {}
  void begin(const ReportHeader& h) override {
    doc_["title"] = h.title;
    doc_["baseline"] = h.baseline;
    doc_["candidate"] = h.candidate;
    doc_["mode"] = h.mode;
    doc_["notes"] = h.notes;
    doc_["findings"] = nlohmann::json::array();
    doc_["checks"] = nlohmann::json::array();
  }
  void finding(const Finding& f) override {
    doc_["findings"].push_back({{"severity", severity_name(f.severity)},
                                {"kind", f.kind},
                                {"where", f.where.to_json()},
                                {"message", f.message},
                                {"values", f.values}});
  }
  void check(const Check& c) override {
    nlohmann::json j = {{"name", c.name}, {"outcome", outcome_name(c.outcome)}, {"message", c.message}};
    if (c.rank) j["rank"] = *c.rank;
    doc_["checks"].push_back(j);
  }
  void end(const Verdict& v) override {
    doc_["exit_code"] = v.exit_code;
    doc_["parity"] = v.exit_code == 0;
    doc_["headline"] = v.headline;
    doc_["summary"] = v.summary;
    doc_["result"] = v.data;
    out_ << model::json_output(doc_) << '\n';
  }

 private:
  std::ostream& out_;
  nlohmann::json doc_ = nlohmann::json::object();
};

class JunitReporter final : public FindingConsumer {
 public:
  JunitReporter(std::ostream& out, std::string suite) : out_(out), suite_(std::move(suite)) {}
  void begin(const ReportHeader& h) override { header_ = h; }
  void finding(const Finding& f) override {
    if (f.severity == Severity::Info) return;
    // Findings go into the failure text of the check on the same rank, so a CI page shows the
    // first divergent values right under the failed test case.
    auto& bucket = details_[f.where.rank ? *f.where.rank : -1];
    if (bucket.size() < 20) bucket.push_back(std::string(severity_name(f.severity)) + ": " + f.message);
  }
  void check(const Check& c) override { checks_.push_back(c); }
  void end(const Verdict& v) override {
    std::size_t failures = 0;
    std::size_t errors = 0;
    std::size_t skipped = 0;
    for (const auto& c : checks_) {
      failures += c.outcome == Check::Outcome::Fail;
      errors += c.outcome == Check::Outcome::Error;
      skipped += c.outcome == Check::Outcome::Skipped;
    }
    out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ << "<testsuites name=\"" << xml_escape(suite_) << "\" tests=\"" << checks_.size() << "\" failures=\""
         << failures << "\" errors=\"" << errors << "\">\n";
    out_ << "  <testsuite name=\"" << xml_escape(suite_) << "\" tests=\"" << checks_.size()
         << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
    out_ << "    <properties>\n";
    out_ << "      <property name=\"baseline\" value=\"" << xml_escape(header_.baseline) << "\"/>\n";
    out_ << "      <property name=\"candidate\" value=\"" << xml_escape(header_.candidate) << "\"/>\n";
    out_ << "      <property name=\"comparison\" value=\"" << xml_escape(header_.mode) << "\"/>\n";
    // Notes carry what weakens the result (rounded text, --allow-incomplete): a CI page shows them.
    for (const auto& n : header_.notes)
      out_ << "      <property name=\"note\" value=\"" << xml_escape(n) << "\"/>\n";
    out_ << "    </properties>\n";
    for (const auto& c : checks_) {
      out_ << "    <testcase classname=\"" << xml_escape(suite_ + "." + c.name) << "\" name=\""
           << xml_escape(check_name(c)) << "\"";
      if (c.outcome == Check::Outcome::Pass) {
        out_ << "/>\n";
        continue;
      }
      out_ << ">\n";
      const char* tag = c.outcome == Check::Outcome::Fail    ? "failure"
                        : c.outcome == Check::Outcome::Error ? "error"
                                                             : "skipped";
      out_ << "      <" << tag << " message=\"" << xml_escape(c.message) << "\">";
      if (c.outcome != Check::Outcome::Skipped) {
        const auto it = details_.find(c.rank ? *c.rank : -1);
        if (it != details_.end()) {
          for (const auto& d : it->second) out_ << xml_escape(d) << "&#10;";
        }
      }
      out_ << "</" << tag << ">\n    </testcase>\n";
    }
    out_ << "    <system-out>" << xml_escape(v.headline);
    for (const auto& s : v.summary) out_ << "&#10;" << xml_escape(s);
    out_ << "</system-out>\n  </testsuite>\n</testsuites>\n";
  }

 private:
  std::ostream& out_;
  std::string suite_;
  ReportHeader header_;
  std::vector<Check> checks_;
  std::map<int, std::vector<std::string>> details_;
};

/// Markdown-inert text: controls and invalid UTF-8 shown as display_text does (a line feed too,
/// so no string can end a table row), then Markdown's active characters backslashed.
std::string md_escape(std::string_view text) {
  std::string out;
  for (const char c : model::display_text(text)) {
    if (c == '|' || c == '*' || c == '_' || c == '`' || c == '<' || c == '>') out += '\\';
    out += c;
  }
  return out;
}

/// A Markdown code span holding `text` as display_text shows it: delimited by more backticks than
/// the longest run inside, so a backtick in a path cannot end it.
std::string md_code(std::string_view text) {
  const std::string shown_text = model::display_text(text);
  std::size_t longest = 0;
  for (std::size_t i = 0, run = 0; i < shown_text.size(); ++i) {
    run = shown_text[i] == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !shown_text.empty() && (shown_text.front() == '`' || shown_text.back() == '`');
  return fence + (pad ? " " : "") + shown_text + (pad ? " " : "") + fence;
}

class MarkdownReporter final : public FindingConsumer {
 public:
  explicit MarkdownReporter(std::ostream& out) : out_(out) {}
  void begin(const ReportHeader& h) override { header_ = h; }
  void finding(const Finding& f) override {
    if (f.severity != Severity::Info && findings_.size() < 50) findings_.push_back(f);
    if (f.severity != Severity::Info) ++total_;
    incomplete_ = incomplete_ || f.severity == Severity::Incomplete;
  }
  void check(const Check& c) override { checks_.push_back(c); }
  void end(const Verdict& v) override {
    // Passing on incomplete evidence (--allow-incomplete) is not a plain green.
    const char* mark = v.exit_code != 0 ? "❌ " : (incomplete_ ? "⚠️ " : "✅ ");
    out_ << "## " << mark << md_escape(header_.title) << "\n\n";
    out_ << "**" << md_escape(v.headline) << "**\n\n";
    out_ << "Baseline " << md_code(header_.baseline) << " vs candidate " << md_code(header_.candidate)
         << "; comparison: " << md_escape(header_.mode) << ".\n\n";
    for (const auto& n : header_.notes) out_ << "> " << md_escape(n) << "\n\n";
    for (const auto& s : v.summary) out_ << "- " << md_escape(s) << '\n';
    if (!v.summary.empty()) out_ << '\n';
    if (!checks_.empty()) {
      out_ << "| check | rank | result | detail |\n| --- | --- | --- | --- |\n";
      for (const auto& c : checks_) {
        out_ << "| " << md_escape(c.name) << " | " << (c.rank ? std::to_string(*c.rank) : "all") << " | "
             << outcome_name(c.outcome) << " | " << md_escape(c.message) << " |\n";
      }
      out_ << '\n';
    }
    if (!findings_.empty()) {
      out_ << "<details><summary>" << total_ << " finding" << (total_ == 1 ? "" : "s") << "</summary>\n\n";
      for (const auto& f : findings_) {
        out_ << "- **" << severity_name(f.severity) << "** " << md_escape(f.where.text()) << ": "
             << md_escape(f.message) << '\n';
      }
      if (total_ > findings_.size()) out_ << "- … " << (total_ - findings_.size()) << " more\n";
      out_ << "\n</details>\n";
    }
  }

 private:
  std::ostream& out_;
  ReportHeader header_;
  std::vector<Finding> findings_;
  std::size_t total_ = 0;
  bool incomplete_ = false;
  std::vector<Check> checks_;
};

/// The id of a node finding's row: "node-<rank>-<graph>-<node>", characters other than letters,
/// digits, '_' and '.' as '_'.
std::string node_id(int rank, const std::string& graph, const std::string& node) {
  std::string id = "node-" + std::to_string(rank) + "-" + graph + "-" + node;
  for (auto& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  return id;
}

std::string node_anchor(const Finding& f) {
  if (!f.where.rank || f.where.node.empty() || !f.kind.starts_with("node_")) return {};
  return " id=\"" + node_id(*f.where.rank, f.where.graph, f.where.node) + "\"";
}

/// A divergence whose origin is elsewhere (received, propagated from another rank) links to it.
std::string origin_link(const Finding& f) {
  const auto it = f.values.find("origin");
  if (it == f.values.end() || !it->is_object() || !f.where.rank) return {};
  const int rank = it->value("rank", -1);
  const std::string graph = it->value("graph", ""), node = it->value("node", "");
  if (rank < 0 || node.empty() || (rank == *f.where.rank && node == f.where.node)) return {};
  return " (<a href=\"#" + node_id(rank, graph, node) + "\">origin: rank " + std::to_string(rank) + ", " +
         html_escape(node) + "</a>)";
}

/// One self-contained page (no scripts, no resources from elsewhere): verdict, notes (tolerance,
/// --allow-incomplete), summary, checks and findings; a node finding whose origin is on another
/// rank or node links to that origin's row.
class HtmlReporter final : public FindingConsumer {
 public:
  explicit HtmlReporter(std::ostream& out) : out_(out) {}
  void begin(const ReportHeader& h) override { header_ = h; }
  void finding(const Finding& f) override {
    incomplete_ = incomplete_ || f.severity == Severity::Incomplete;
    if (findings_.size() < kMaxFindings) findings_.push_back(f);
    ++total_;
  }
  void check(const Check& c) override { checks_.push_back(c); }
  void end(const Verdict& v) override {
    const char* state = v.exit_code != 0 ? "fail" : (incomplete_ ? "warn" : "pass");
    out_ << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_escape(header_.title)
         << "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}.pass{color:#070}.fail{color:#b00}"
            ".warn{color:#a60}.incomplete{background:#fff3d0}.divergence{background:#fde}.error{background:#"
            "fcc}"
            "</style></head><body>\n";
    out_ << "<h1>" << html_escape(header_.title) << "</h1>\n<p class=\"" << state << "\" id=\"verdict\"><b>"
         << html_escape(v.headline) << "</b> (exit " << v.exit_code << ")</p>\n";
    out_ << "<p>baseline <code>" << html_escape(header_.baseline) << "</code> vs candidate <code>"
         << html_escape(header_.candidate) << "</code>; comparison: " << html_escape(header_.mode)
         << "</p>\n";
    list("notes", header_.notes);
    list("summary", v.summary);
    if (!checks_.empty()) {
      out_ << "<h2>checks</h2><table><tr><th>check</th><th>rank</th><th>result</th><th>detail</th></tr>\n";
      for (const auto& c : checks_) {
        out_ << "<tr><td>" << html_escape(c.name) << "</td><td>" << (c.rank ? std::to_string(*c.rank) : "all")
             << "</td><td>" << outcome_name(c.outcome) << "</td><td>" << html_escape(c.message)
             << "</td></tr>\n";
      }
      out_ << "</table>\n";
    }
    if (!findings_.empty()) {
      out_ << "<h2>findings</h2><table><tr><th>severity</th><th>where</th><th>kind</th><th>message</th></"
              "tr>\n";
      for (const auto& f : findings_) {
        out_ << "<tr class=\"" << severity_name(f.severity) << "\"" << node_anchor(f) << "><td>"
             << severity_name(f.severity) << "</td><td>" << html_escape(f.where.text()) << "</td><td>"
             << html_escape(f.kind) << "</td><td>" << html_escape(f.message) << origin_link(f)
             << "</td></tr>\n";
      }
      out_ << "</table>\n";
      if (total_ > findings_.size()) out_ << "<p>... " << (total_ - findings_.size()) << " more</p>\n";
    }
    out_ << "</body></html>\n";
  }

 private:
  static constexpr std::size_t kMaxFindings = 1000;
  void list(const char* id, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out_ << "<ul id=\"" << id << "\">";
    for (const auto& i : items) out_ << "<li>" << html_escape(i) << "</li>";
    out_ << "</ul>\n";
  }
  std::ostream& out_;
  ReportHeader header_;
  std::vector<Finding> findings_;
  std::size_t total_ = 0;
  bool incomplete_ = false;
  std::vector<Check> checks_;
};

}  // namespace

std::string xml_escape(std::string_view text) {
  // XML 1.0 forbids most C0 controls even as references, and a document declared UTF-8 must be
  // well-formed UTF-8: controls (but line feeds) and invalid bytes are shown as display_lines
  // shows them ("\x1b"), line feeds become references so attributes keep them.
  const std::string shown_text = model::display_lines(text);
  std::string out;
  out.reserve(shown_text.size());
  for (const char c : shown_text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      default: out += c;
    }
  }
  return out;
}

std::unique_ptr<FindingConsumer> make_text_reporter(std::ostream& out, TextOptions options) {
  return std::make_unique<TextReporter>(out, options);
}
std::unique_ptr<FindingConsumer> make_json_reporter(std::ostream& out) {
  return std::make_unique<JsonReporter>(out);
}
std::unique_ptr<FindingConsumer> make_junit_reporter(std::ostream& out, std::string suite) {
  return std::make_unique<JunitReporter>(out, std::move(suite));
}
std::unique_ptr<FindingConsumer> make_markdown_reporter(std::ostream& out) {
  return std::make_unique<MarkdownReporter>(out);
}
std::unique_ptr<FindingConsumer> make_html_reporter(std::ostream& out) {
  return std::make_unique<HtmlReporter>(out);
}

}  // namespace gparity::diff
