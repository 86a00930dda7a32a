#pragma once
// `gparity gate` policy files (spec: docs/gate.md): a JSON object naming the runs, what must
// match, the steps, bitwise or a named tolerance, and where the reports go. Paths in a policy
// are relative to the policy file's directory.

#include <optional>
#include <string>

#include "diff/run_compare.hpp"

namespace gparity::diff {

struct GatePolicy {
  std::string baseline;
  std::string candidate;
  CompareOptions options;
  std::string junit;     // "" = none
  std::string markdown;  // "" = none
  std::string json;      // "" = none
};

/// Parses a policy document. Throws InputError naming `source` and the problem.
GatePolicy parse_gate_policy(std::string_view text, const std::string& source);
/// Reads and parses a policy file; relative paths are resolved against its directory.
GatePolicy load_gate_policy(const std::string& path);

}  // namespace gparity::diff
