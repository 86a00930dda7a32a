#pragma once
// `gparity gate` policy files (spec: docs/gate.md): a JSON object naming the runs, what must
// match, the steps, bitwise or a named tolerance, and where the reports go. Paths in a policy
// are relative to the policy file's directory. A run may also name the command that produces it
// ({"command": [argv...], "path": "..."}): run_gate_command runs it, without a shell, first.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "diff/runs/run_compare.hpp"

namespace gparity::diff {

struct GatePolicy {
  std::string baseline;
  std::string candidate;
  /// argv of the commands that produce the runs (empty: the run already exists).
  std::vector<std::string> baseline_command;
  std::vector<std::string> candidate_command;
  /// Where the commands run: the policy file's directory ("" = the current directory).
  std::string command_dir;
  CompareOptions options;
  std::string junit;     // "" = none
  std::string markdown;  // "" = none
  std::string json;      // "" = none
  std::string html;      // "" = none
  /// Op-level parity required (policy "ops": {"baseline": ..., "candidate": ...}): the op-record
  /// or DebugMode runs of the same training (docs/ops.md), compared op by op with their own
  /// reports (ops-junit.xml, ops-report.md, ops-report.json, ops-report.html beside the others).
  /// Both empty: not required.
  std::string ops_baseline;
  std::string ops_candidate;
  /// "ops": {..., "kernels": true}: kernel-level parity required (docs/ops.md, "Inductor
  /// kernels"): both op runs must show kernel launches on every rank, else exit 2.
  bool ops_kernels = false;
  [[nodiscard]] bool requires_ops() const noexcept { return !ops_baseline.empty(); }
};

/// Parses a policy document. Throws InputError naming `source` and the problem.
GatePolicy parse_gate_policy(std::string_view text, const std::string& source);
/// Reads and parses a policy file; relative paths are resolved against its directory.
GatePolicy load_gate_policy(const std::string& path);

/// Runs `argv` (argv[0] looked up in PATH, no shell) in `dir` ("" = here), its stdout sent to
/// our stderr so that `--json` output stays clean, and waits for it. Throws InputError naming
/// `what` ("baseline command") when it cannot start, exits non-zero or dies of a signal.
void run_gate_command(std::span<const std::string> argv, const std::string& dir, const std::string& what);

}  // namespace gparity::diff
