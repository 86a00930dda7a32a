// `gparity nccl-rings`: writes an NCCL graph file (for NCCL_GRAPH_FILE) whose ring channels run
// different rank orders, so that one node reduces like a multi-node job does: each channel sums
// its slice of a payload in another order, and moving bytes inside a collective (a new bucket
// order) then changes bf16 results (docs/ring-orders.md). The speeds and the channel count are
// NCCL's own, from a dump of the machine: --from DUMP rewrites one (any machine); without it,
// gparity-run makes the dump on this machine's GPUs (`gparity run --ring-orders`, one step).

#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/formats/nccl_graph.hpp"

namespace gparity::cli {
namespace {

struct NcclRingsArgs {
  int ranks = 0;
  std::string out;
  std::string pattern = "reverse-odd";
  std::uint64_t seed = 0;
  std::string from;
  bool json = false;
};

std::filesystem::path runner_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path() / "gparity-run";
}

/// Runs `gparity-run run --ring-orders` for one step on `ranks` local GPUs: NCCL dumps its graph
/// into `dir` (nccl-graph-dump.xml). Returns the dump's path; throws InputError when that fails.
std::filesystem::path dump_on_this_machine(const NcclRingsArgs& a, const std::filesystem::path& dir) {
  const auto runner = runner_path();
  if (runner.empty() || !std::filesystem::exists(runner)) {
    throw model::InputError(
        "--from",
        "not given, and no NCCL dump can be made here: that needs gparity-run (built with LibTorch and "
        "NCCL) and " +
            std::to_string(a.ranks) +
            " GPUs. Pass --from DUMP, a file NCCL wrote with NCCL_GRAPH_DUMP_FILE=DUMP NCCL_ALGO=Ring "
            "(docs/ring-orders.md)");
  }
  std::vector<std::string> args = {
      runner.string(), "run",     "--nproc",     std::to_string(a.ranks), "--device",
      "cuda",          "--steps", "1",           "--hash-every",          "0",
      "--ring-orders", a.pattern, "--ring-seed", std::to_string(a.seed),  "--out",
      dir.string()};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::cerr << "gparity nccl-rings: dumping NCCL's graph with one step of `gparity run` on " << a.ranks
            << " GPUs" << std::endl;
  const pid_t pid = fork();
  if (pid < 0) throw model::InputError("gparity-run", std::string("cannot start: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);  // our stdout is the report (or --json)
    execv(argv[0], argv.data());
    std::_Exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const auto dump = dir / "nccl-graph-dump.xml";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !std::filesystem::exists(dump)) {
    throw model::InputError(
        dump.string(),
        "NCCL wrote no graph dump (gparity run failed, see above): pass --from DUMP made on "
        "the GPU machine");
  }
  return dump;
}

std::string ring_text(const std::vector<std::int64_t>& r) {
  std::string s;
  for (const auto g : r) s += (s.empty() ? "" : " ") + std::to_string(g);
  return s;
}

int run_nccl_rings(const NcclRingsArgs& a) {
  const auto pattern = model::parse_ring_pattern(a.pattern);
  if (!pattern)
    throw model::InputError("--pattern", "'" + a.pattern + "' is not one of " + model::ring_pattern_names());
  std::filesystem::path dump = a.from;
  if (dump.empty()) {
    auto dir = std::filesystem::path(a.out);
    dir += ".dump";
    dump = dump_on_this_machine(a, dir);
  }
  const auto rw = model::write_ring_orders_file(dump, a.out, *pattern, a.seed, a.ranks);
  if (a.json) {
    std::cout << model::json_output(nlohmann::json{{"out", a.out},
                                                   {"from", dump.string()},
                                                   {"pattern", a.pattern},
                                                   {"seed", a.seed},
                                                   {"graph_id", rw.graph_id},
                                                   {"rings", rw.after},
                                                   {"distinct_rings", rw.distinct_after}},
                                    -1)
              << '\n';
    return kExitParity;
  }
  std::cout << "wrote " << model::shown(a.out) << " from " << model::shown(dump.string()) << ": ring graph "
            << rw.graph_id << ", " << rw.after.size()
            << " channels (NCCL's speeds and channel count kept), pattern " << a.pattern;
  if (*pattern == model::RingPattern::Random) std::cout << " (seed " << a.seed << ")";
  std::cout << ", " << rw.distinct_after << " distinct ring" << (rw.distinct_after == 1 ? "" : "s") << '\n';
  for (std::size_t c = 0; c < rw.after.size(); ++c) {
    std::cout << "  channel " << (c < 10 ? " " : "") << c << ": " << ring_text(rw.after[c]);
    if (rw.after[c] != rw.before[c]) std::cout << "   (was " << ring_text(rw.before[c]) << ")";
    std::cout << '\n';
  }
  if (a.ranks < 3) {
    std::cout << "note: with " << a.ranks
              << " ranks every order is the same ring and each sum has two terms (a + b == b + a): no "
                 "pattern can change the numbers\n";
  }
  std::cout << "use: export NCCL_GRAPH_FILE=" << model::shown(std::filesystem::absolute(a.out).string())
            << " NCCL_ALGO=Ring   (the same file for every rank)\n";
  return kExitParity;
}

}  // namespace

void register_nccl_rings(CLI::App& app, Action& action) {
  auto a = std::make_shared<NcclRingsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "nccl-rings",
      "Write an NCCL graph file (NCCL_GRAPH_FILE) whose ring channels use different rank orders, as on a "
      "multi-node job, keeping NCCL's own speeds and channel count: a bucket-order change then shows its "
      "numeric effect on one node (docs/ring-orders.md). Exit 0 written, 2 bad input.");
  cmd->add_option("--ranks", a->ranks, "Ranks (GPUs) of the ring, as in the dump")
      ->required()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--out", a->out, "Graph file to write")->required();
  cmd->add_option("--pattern", a->pattern,
                  "reverse-odd (odd channels backwards: 0 3 2 1), rotate (channel c turns the ring after its "
                  "first GPU by c), random (seeded)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of --pattern random")->capture_default_str();
  cmd->add_option(
      "--from", a->from,
      "Rewrite this dump (NCCL_GRAPH_DUMP_FILE with NCCL_ALGO=Ring) instead of making one on this "
      "machine's GPUs");
  cmd->add_flag("--json", a->json, "One JSON object with the rings written");
  cmd->callback([a, &action] { action = [a] { return run_nccl_rings(*a); }; });
}

}  // namespace gparity::cli
