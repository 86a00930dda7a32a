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

/// Limits the child runs under, to make failures real (no mocks).
struct ChildLimits {
  /// RLIMIT_FSIZE in bytes, 0 for none. SIGXFSZ is ignored in the child, so a write past the
  /// limit fails with EFBIG, as on a full disk, instead of killing the process.
  unsigned long long max_file_bytes = 0;
};

CommandResult run_command(const std::string& exe, const std::vector<std::string>& args,
                          const std::string& stdin_text, const ChildLimits& limits);

}  // namespace gparity::testing
