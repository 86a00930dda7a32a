#pragma once
// Runs `gparity` as a child for the reliability suite: no shell, stdin from /dev/null, stdout and
// stderr captured, and what a test needs to make an input hostile from outside the file: a file
// size limit (a full disk, as a non-root user would see it: RLIMIT_FSIZE with SIGXFSZ ignored, so
// writes fail with EFBIG) and tmpfs mounts in a private mount namespace (a read-only folder, a
// filled-up file system: root ignores permission bits, not a read-only or full mount). The child
// gets its own process group, killed as a whole when the hang guard runs out.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gparity::testing {

struct TmpfsMount {
  std::string path;         // an existing folder, covered by the mount in the child only
  std::uint64_t bytes = 0;  // size of the file system
  bool read_only = false;
  bool fill = false;  // write a filler file until the file system is full
};

struct ChildLimits {
  std::optional<std::uint64_t> file_size_bytes;
  std::vector<TmpfsMount> mounts;
  std::chrono::seconds hang_guard{120};
};

struct ChildResult {
  int exit_code = -1;       // when the child exited
  int signal = 0;           // when a signal ended it
  bool timed_out = false;   // the hang guard killed it
  std::string setup_error;  // the child could not apply its limits (no exec happened)
  std::string out, err;     // the first kMaxCaptured bytes of each
};

inline constexpr std::size_t kMaxCaptured = 1 << 20;

ChildResult run_child(const std::string& exe, const std::vector<std::string>& args,
                      const ChildLimits& limits);

/// Whether this process may mount a tmpfs in a private mount namespace ("" when it can, else why not).
std::string tmpfs_unavailable_reason();

}  // namespace gparity::testing
