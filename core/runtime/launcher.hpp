#pragma once
// Starts N local ranks of one command, like `torchrun --standalone --nproc-per-node N`: each
// child gets RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT (a free local port), its
// stdout and stderr come back line by line tagged with the rank, and when one rank fails the
// others get `grace` to stop on their own before they are killed. No LibTorch here.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::runtime {

struct LaunchOptions {
  int nproc = 1;
  std::string exe;                // program to run
  std::vector<std::string> args;  // its arguments (argv[1..])
  std::chrono::milliseconds grace{30'000};
};

struct RankExit {
  int rank = 0;
  int exit_code = 0;  // when !signalled
  int signal = 0;     // when signalled
  bool signalled = false;
  bool killed_by_launcher = false;
};

struct LaunchResult {
  std::vector<RankExit> exits;  // in the order the ranks ended
  /// Empty when every rank exited 0; else names the first rank that failed and how.
  std::string failure;
  [[nodiscard]] bool ok() const noexcept { return failure.empty(); }
};

/// One line of a child's output (without the newline).
using LineSink = std::function<void(int rank, bool is_stderr, std::string_view line)>;

LaunchResult launch_local(const LaunchOptions& opts, const LineSink& sink);

/// A TCP port on 127.0.0.1 that was free a moment ago.
int pick_free_port();

/// Describes how a rank ended: "exited with status 3", "was killed by signal 9 (SIGKILL)".
std::string describe_exit(const RankExit& e);

}  // namespace gparity::runtime
