#pragma once
// Starts N local ranks of one command, like `torchrun --standalone --nproc-per-node N`: each
// child gets RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT (a free local port), its
// stdout and stderr come back line by line tagged with the rank, and when one rank fails the
// others get `grace` to stop on their own before they are killed. Across nodes (like torchrun
// --nnodes M --node-rank R): each node's launcher starts its N ranks as global ranks R*N ..
// R*N+N-1 of M*N, all meeting at the given MASTER_ADDR:MASTER_PORT (rank 0's node), and sets
// GROUP_RANK / GROUP_WORLD_SIZE as torchrun does. No LibTorch here.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::runtime {

/// Where this launcher's ranks sit among the nodes of a run.
struct NodeLayout {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;  // "": 127.0.0.1 (one node only)
  int master_port = 0;      // 0: a free local port (one node only)
};

/// Throws std::invalid_argument naming the first bad value: across nodes every launcher needs
/// rank 0's node's address and port, and its own node rank below nnodes.
void validate(const NodeLayout& layout);

struct LaunchOptions {
  int nproc = 1;  // ranks on this node
  NodeLayout node;
  std::string exe;                // program to run
  std::vector<std::string> args;  // its arguments (argv[1..])
  std::chrono::milliseconds grace{30'000};
};

struct RankExit {
  int rank = 0;       // global
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

/// One line of a child's output (without the newline); `rank` is global.
using LineSink = std::function<void(int rank, bool is_stderr, std::string_view line)>;

LaunchResult launch_local(const LaunchOptions& opts, const LineSink& sink);

/// A TCP port on 127.0.0.1 that was free a moment ago.
int pick_free_port();

/// A command line (argv[0] first) without the launcher's own options (--nproc, --nnodes,
/// --node-rank, --master-addr, --master-port, as "--opt V" or "--opt=V") and without argv[0]:
/// what each started rank gets, the layout reaching it through the environment instead.
std::vector<std::string> rank_arguments(const std::vector<std::string>& command_line);

/// Describes how a rank ended: "exited with status 3", "was killed by signal 9 (SIGKILL)".
std::string describe_exit(const RankExit& e);

}  // namespace gparity::runtime
