#pragma once
// The evidence rule (diff/report/evidence.hpp) for commands that print their own text instead of going
// through a FindingConsumer (graph ranks, graph diff, graph devices): the rule's findings, the
// "compared: ..." line and, when the rule overrides the verdict, its headline; and the exit code
// with the rule applied. JSON output carries the ruling as "evidence".

#include <nlohmann/json.hpp>
#include <ostream>

#include "diff/report/evidence.hpp"

namespace gparity::cli {

/// Prints the ruling's findings and summary lines to `out` (text mode), then its headline when
/// it changes the verdict. Returns the exit code: the rule's 2 over anything, its 1 over 0.
int print_evidence(const diff::EvidenceRuling& r, int exit_code, std::ostream& out, bool colour);

/// The ruling as the "evidence" member of a command's JSON (result.evidence's shape, plus the
/// rule's findings and headline when it overrides the verdict). Returns the exit code as above.
int json_evidence(const diff::EvidenceRuling& r, int exit_code, nlohmann::ordered_json& doc);

}  // namespace gparity::cli
