#pragma once
// Runs a program with arguments (no shell), capturing stdout, stderr and the exit code: how the
// CLI tests drive the real `gparity` binary.

#include <string>
#include <vector>

namespace gparity::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& exe, const std::vector<std::string>& args,
                          const std::string& stdin_text = {});

}  // namespace gparity::testing
