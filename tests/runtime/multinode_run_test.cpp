// `gparity run` across nodes, on one machine: two "nodes" are two launches of `gparity run
// --nproc 2 --nnodes 2 --node-rank R` on localhost (Gloo, CPU) meeting at one rendezvous port and
// writing one shared run folder. Two such runs compare in parity; a run whose node 1 is killed
// whole (its launcher and with it its ranks) mid-run is INCOMPLETE, node 1 and its ranks named.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_writer.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

extern char** environ;

namespace gparity {
namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
using namespace std::chrono_literals;

/// A loopback port that was free a moment ago, below the ephemeral range (as the launcher picks
/// its own: a port from that range can be taken by a rank's outgoing connection first).
int free_port() {
  int lo = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> lo;
  std::random_device rd;
  std::uniform_int_distribution<int> pick(10000, std::max(10001, lo - 1));
  for (int tries = 0; tries < 100; ++tries) {
    const int port = pick(rd);
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(s);
    if (ok) return port;
  }
  return 0;
}

/// One node's launcher, running in the background with its output in a file.
class Node {
 public:
  Node(const std::vector<std::string>& args, const std::filesystem::path& log) : log_(log) {
    std::vector<std::string> argv{GPARITY_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (posix_spawn(&pid_, GPARITY_EXE, &fa, nullptr, cargv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Node() {
    if (running()) kill_now();
    if (pid_ > 0 && !status_) waitpid(pid_, nullptr, 0);
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  [[nodiscard]] bool running() const { return pid_ > 0 && !status_; }
  /// SIGKILL to the launcher: its ranks die with it (the launcher makes them die with their parent).
  void kill_now() const { kill(pid_, SIGKILL); }

  /// The launcher's exit status, or -1 after `limit` (then it is killed: a test never hangs).
  int wait(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0 && !status_) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill_now();
        waitpid(pid_, nullptr, 0);
        status_ = -1;
      } else {
        std::this_thread::sleep_for(20ms);
      }
    }
    return status_.value_or(-1);
  }

  [[nodiscard]] std::string output() const {
    std::ifstream f(log_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::filesystem::path log_;
};

std::vector<std::string> node_args(const std::filesystem::path& out, int node, int port,
                                   std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"run",
                                "--nproc",
                                "2",
                                "--nnodes",
                                "2",
                                "--node-rank",
                                std::to_string(node),
                                "--master-addr",
                                "127.0.0.1",
                                "--master-port",
                                std::to_string(port),
                                "--out",
                                out.string(),
                                "--steps",
                                "4",
                                "--dim",
                                "32",
                                "--layers",
                                "1",
                                "--heads",
                                "2",
                                "--hidden",
                                "64",
                                "--vocab",
                                "64",
                                "--seq-len",
                                "8",
                                "--batch",
                                "2",
                                "--timeout",
                                "10"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// Runs both nodes of one run to the end; their exit statuses.
std::pair<int, int> run_two_nodes(const std::filesystem::path& out, const std::filesystem::path& logs) {
  const int port = free_port();
  Node n0(node_args(out, 0, port), logs / (out.filename().string() + ".node0.log"));
  Node n1(node_args(out, 1, port), logs / (out.filename().string() + ".node1.log"));
  const int s1 = n1.wait(60s), s0 = n0.wait(60s);
  EXPECT_EQ(s0, 0) << n0.output();
  EXPECT_EQ(s1, 0) << n1.output();
  return {s0, s1};
}

std::size_t steps_recorded(const std::filesystem::path& run, int rank) {
  const auto path = model::rank_trace_path(run, rank);
  if (!std::filesystem::exists(path)) return 0;
  return model::read_rank_trace(path.string(), rank).steps.size();
}

class TwoNodeRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    baseline_ = dir_->path() / "baseline";
    run_two_nodes(baseline_, dir_->path());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static TempDir* dir_;
  static std::filesystem::path baseline_;
};
TempDir* TwoNodeRun::dir_ = nullptr;
std::filesystem::path TwoNodeRun::baseline_;

TEST_F(TwoNodeRun, TwoRunsOfTwoNodesCompareInParityAndTheManifestPlacesEveryRank) {
  const auto again = dir_->path() / "again";
  run_two_nodes(again, dir_->path());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(steps_recorded(baseline_, r), 4u) << "rank " << r;

  std::ifstream manifest_file(model::manifest_path(baseline_));
  const auto m = model::manifest_from_json(nlohmann::json::parse(manifest_file), "manifest.json");
  EXPECT_EQ(m.world_size, 4);
  ASSERT_EQ(m.ranks.size(), 4u);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (int r = 0; r < 4; ++r) {
    const auto& info = m.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(info.rank, r);
    EXPECT_EQ(info.node, r / 2) << "rank " << r;        // node 0: ranks 0-1, node 1: ranks 2-3
    EXPECT_EQ(info.local_rank, r % 2) << "rank " << r;  // each launcher numbers its own ranks
    EXPECT_EQ(info.host, host);
  }

  const auto cmp = run_command(GPARITY_EXE, {"compare", baseline_.string(), again.string()});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
  EXPECT_NE(cmp.out.find("PARITY"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("ranks 0-3 identical"), std::string::npos) << cmp.out;
}

TEST_F(TwoNodeRun, ANodeKilledMidRunIsIncompleteWithItsRanksNamed) {
  const auto killed = dir_->path() / "killed";
  const int port = free_port();
  // Rank 2 stops at the start of step 3 (alive, not hashing on): it only pins the moment of the
  // kill, after every rank recorded step 2, so that the test does not race the run. Then node 1
  // dies whole, as a node does: its launcher is SIGKILLed and its ranks with it.
  Node n0(node_args(killed, 0, port, {"--inject-fault", "hang:2:3"}), dir_->path() / "killed.node0.log");
  Node n1(node_args(killed, 1, port, {"--inject-fault", "hang:2:3"}), dir_->path() / "killed.node1.log");
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline && n1.running() &&
         (steps_recorded(killed, 2) < 2 || steps_recorded(killed, 3) < 2))
    std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(n1.running()) << n1.output();
  n1.kill_now();
  EXPECT_EQ(n1.wait(10s), 128 + SIGKILL);
  // Node 0's ranks find their peers gone, record the failure and stop; its launcher says so.
  EXPECT_EQ(n0.wait(60s), 2) << n0.output();
  EXPECT_NE(n0.output().find("rank 2 is dead or not responding"), std::string::npos) << n0.output();

  // Against the complete run: INCOMPLETE, exit 1, the lost node named with its ranks in the
  // headline; the steps the run lacks are missing evidence, not a divergence.
  const auto cmp = run_command(GPARITY_EXE, {"compare", baseline_.string(), killed.string()});
  EXPECT_EQ(cmp.exit_code, 1) << cmp.out << cmp.err;
  EXPECT_NE(cmp.out.find("INCOMPLETE: evidence is missing: candidate node 1 (host "), std::string::npos)
      << cmp.out;
  EXPECT_NE(cmp.out.find(", ranks 2-3) was lost; no divergence in what was compared"), std::string::npos)
      << cmp.out;
  EXPECT_EQ(cmp.out.find("DIVERGENCE"), std::string::npos) << cmp.out;
  EXPECT_EQ(cmp.out.find("but missing in candidate"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("in baseline not compared: candidate rank 2 stopped after step 2"),
            std::string::npos)
      << cmp.out;
  EXPECT_NE(cmp.out.find("incomplete [rank 2]: candidate node 1 (host "), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find(", ranks 2-3) was lost: its ranks stopped by step 2"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("missing evidence: candidate node 1 (host "), std::string::npos) << cmp.out;
  // Node 0 is not called lost: its ranks wrote the failure they saw.
  EXPECT_EQ(cmp.out.find("node 0 ("), std::string::npos) << cmp.out;
  // On its own (against itself) the run is INCOMPLETE: nothing differs, evidence is missing.
  const auto self = run_command(GPARITY_EXE, {"compare", killed.string(), killed.string()});
  EXPECT_EQ(self.exit_code, 1) << self.out << self.err;
  EXPECT_NE(self.out.find("INCOMPLETE: evidence is missing: baseline node 1 (host "), std::string::npos)
      << self.out;
  EXPECT_NE(self.out.find("baseline node 1 (host "), std::string::npos) << self.out;

  const auto js = run_command(GPARITY_EXE, {"compare", baseline_.string(), killed.string(), "--json"});
  EXPECT_EQ(js.exit_code, 1);
  EXPECT_NE(js.out.find("\"node_lost\""), std::string::npos) << js.out;
  EXPECT_NE(js.out.find("\"steps_not_compared\""), std::string::npos) << js.out;
}

TEST(TwoNodeReplay, CoorAcrossTwoNodesGivesTheVerdictOfOneLaunch) {
  // `gparity replay --coor` of the 4-rank causal trace (tests/runtime/replay_causality_test.cpp),
  // as two nodes of two ranks: rank 1 is still the origin, and the manifest places every rank.
  TempDir dir;
  const auto out = dir.path() / "replay";
  const std::string trace = std::string(GPARITY_SOURCE_DIR) + "/tests/data/replay/causal_trace";
  const int port = free_port();
  std::vector<std::unique_ptr<Node>> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(std::make_unique<Node>(
        std::vector<std::string>{"replay", trace, "--compile-id", "1/0", "--coor", "--nproc", "2", "--nnodes",
                                 "2", "--node-rank", std::to_string(node), "--master-addr", "127.0.0.1",
                                 "--master-port", std::to_string(port), "--timeout", "30", "--out",
                                 out.string()},
        dir.path() / ("node" + std::to_string(node) + ".log")));
  }
  EXPECT_EQ(nodes[0]->wait(60s), 1) << nodes[0]->output();  // 1: a divergence was found
  EXPECT_EQ(nodes[1]->wait(60s), 1) << nodes[1]->output();
  EXPECT_NE(nodes[0]->output().find("all ranks: unsafe: origin on rank 1"), std::string::npos)
      << nodes[0]->output();
  EXPECT_NE(nodes[1]->output().find("[rank 3] rank 3: safe"), std::string::npos) << nodes[1]->output();
  std::ifstream manifest_file(model::manifest_path(out));
  const auto m = model::manifest_from_json(nlohmann::json::parse(manifest_file), "manifest.json");
  ASSERT_EQ(m.ranks.size(), 4u);
  EXPECT_EQ(m.ranks[3].node, 1);
  EXPECT_EQ(m.ranks[3].local_rank, 1);
}

}  // namespace
}  // namespace gparity
