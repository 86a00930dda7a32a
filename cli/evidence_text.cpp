#include "cli/evidence_text.hpp"

#include "cli/terminal.hpp"
#include "core/model/base/display_text.hpp"

namespace gparity::cli {
namespace {

int combined(const diff::EvidenceRuling& r, int exit_code) {
  if (r.exit_code == 2) return 2;
  return std::max(exit_code, r.exit_code);
}

}  // namespace

int print_evidence(const diff::EvidenceRuling& r, int exit_code, std::ostream& out, bool colour) {
  for (const auto& f : r.findings) {
    const bool error = f.severity == diff::Severity::Error;
    out << paint(diff::severity_name(f.severity), error ? Colour::Red : Colour::Yellow, colour);
    const auto where = f.where.text();
    if (!where.empty()) out << " [" << model::shown(where) << "]";
    out << ": " << model::shown(f.message) << '\n';
  }
  for (const auto& line : r.summary) out << "  " << model::shown(line) << '\n';
  const int code = combined(r, exit_code);
  if (code != exit_code) out << paint(model::display_text(r.headline), Colour::Red, colour) << '\n';
  return code;
}

int json_evidence(const diff::EvidenceRuling& r, int exit_code, nlohmann::ordered_json& doc) {
  // Converted, not dumped and parsed: a path that is not UTF-8 stays as it is for the caller's dump.
  nlohmann::ordered_json ev(r.json);
  const int code = combined(r, exit_code);
  if (!r.findings.empty()) {
    auto findings = nlohmann::ordered_json::array();
    for (const auto& f : r.findings) {
      findings.push_back({{"severity", diff::severity_name(f.severity)},
                          {"kind", f.kind},
                          {"where", nlohmann::ordered_json(f.where.to_json())},
                          {"message", f.message}});
    }
    ev["findings"] = std::move(findings);
  }
  if (code != exit_code) ev["headline"] = r.headline;
  ev["exit_code"] = code;
  doc["evidence"] = std::move(ev);
  return code;
}

}  // namespace gparity::cli
