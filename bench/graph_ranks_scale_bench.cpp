// `gparity graph ranks` at 64, 128 and 256 ranks (issue 25), a plain timed main. Inputs are made
// as bench_graph_diff's: the sample aot_joint_graph repeated to ~100,000 nodes, every rank on
// its own device (cuda:<rank>), 16 rank parameters (slice-bound-like integers written
// 32*rank + b: so every rank is a group of its own) and a constant planted on one rank. Each
// case runs in a child process (fork), so that each peak RSS (wait4's ru_maxrss) is the case's
// own:
//   new: every rank's graph built and dropped (timed apart, not counted: it stands for parsing a
//        log), added to a diff::RankGraphSet (timed: `ingest`), classify_rank_set (`classify`);
//   old: every rank's graph built and held, classify_ranks (timed), as `graph ranks` did before.
// Both print groups, verdict and findings, which must agree where both run.
// Usage: bench_graph_ranks_scale [nodes] [old_up_to_ranks] [ranks...]
//        (defaults 100000 64 64 128 256: the old path runs only up to 64 ranks, 3.5 GiB)

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "diff/graphs/rank_graph_set.hpp"
#include "tests/support/rank_graph_maker.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::model::Graph;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kRankParams = 16;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// CPU seconds of this (single-threaded) process: on a machine shared with other builds, the
/// work done, where the wall clock also counts the time the scheduler gave to others.
double cpu_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Graph joint_graph() {
  const fs::path dir = fs::path(GPARITY_SOURCE_DIR) / "tests/data/graph/compile";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("dedicated_log_torch_trace_rank_0_")) continue;
    auto t = gparity::model::read_torch_trace(e.path().string());
    for (auto& g : t.graphs)
      if (g.kind == "aot_joint_graph") return std::move(g.graph);
  }
  std::fprintf(stderr, "no aot_joint_graph in %s\n", dir.c_str());
  std::exit(2);
}

int planted_rank(int ranks) {
  return ranks / 2 + 5 < ranks ? ranks / 2 + 5 : ranks - 1;
}

Graph rank_graph(const gparity::testing::RankGraphMaker& maker, int rank, int ranks) {
  return maker.rank_graph(
      rank, rank, true,
      rank == planted_rank(ranks) ? std::optional<std::int64_t>(1000 + 32 * rank) : std::nullopt);
}

void summary(const char* label, int ranks, const gparity::diff::GraphClassification& c, double t_build,
             double t_ingest, double t_classify, double cpu_ingest, double cpu_classify,
             const std::string& extra) {
  std::size_t by_class[4] = {0, 0, 0, 0};
  for (const auto& f : c.findings) ++by_class[static_cast<int>(f.cls)];
  std::printf(
      "%s %3d ranks: build+drop %.1f s (not counted), ingest %.3f s, classify %.3f s, total %.3f s wall, "
      "%.3f s CPU (ingest %.3f + classify %.3f); %zu groups, "
      "verdict %s, %zu findings (%zu device-, %zu rank-parametric, %zu divergent)%s\n",
      label, ranks, t_build, t_ingest, t_classify, t_ingest + t_classify, cpu_ingest + cpu_classify,
      cpu_ingest, cpu_classify, c.groups.size(), std::string(gparity::diff::verdict_name(c.verdict)).c_str(),
      c.findings.size(), by_class[0], by_class[1], by_class[3], extra.c_str());
  std::fflush(stdout);
}

void new_case(const gparity::testing::RankGraphMaker& maker, int ranks) {
  gparity::diff::RankGraphSet set({}, 0);
  double t_build = 0, t_ingest = 0, cpu_ingest = 0;
  for (int r = 0; r < ranks; ++r) {
    auto t0 = Clock::now();
    std::optional<Graph> g = rank_graph(maker, r, ranks);
    t_build += since(t0);
    t0 = Clock::now();
    const double c0 = cpu_now();
    set.add(r, *g);
    cpu_ingest += cpu_now() - c0;
    t_ingest += since(t0);
    t0 = Clock::now();
    g.reset();  // what a reader does after adding a parsed graph: counted with building
    t_build += since(t0);
  }
  const auto t0 = Clock::now();
  const double c0 = cpu_now();
  const auto c = gparity::diff::classify_rank_set(set, {});
  const double cpu_classify = cpu_now() - c0;
  const double t_classify = since(t0);
  summary("new", ranks, c, t_build, t_ingest, t_classify, cpu_ingest, cpu_classify,
          "; " + std::to_string(set.base_count()) + " base graph(s), " + std::to_string(set.patched_nodes()) +
              " patched nodes held");
}

void old_case(const gparity::testing::RankGraphMaker& maker, int ranks) {
  std::vector<Graph> graphs;
  const auto t0 = Clock::now();
  for (int r = 0; r < ranks; ++r) graphs.push_back(rank_graph(maker, r, ranks));
  const double t_build = since(t0);
  std::vector<gparity::diff::RankGraph> rg;
  for (int r = 0; r < ranks; ++r) rg.push_back({r, &graphs[static_cast<std::size_t>(r)]});
  const auto t1 = Clock::now();
  const double c0 = cpu_now();
  const auto c = gparity::diff::classify_ranks(rg, {}, {});
  const double cpu = cpu_now() - c0;
  summary("old", ranks, c, t_build, 0, since(t1), 0, cpu, "");
}

template <typename F>
void in_child(const char* label, int ranks, F&& f) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    f();
    std::fflush(stdout);
    ::_exit(0);
  }
  int status = 0;
  rusage u{};
  ::wait4(pid, &status, 0, &u);
  std::printf("%s %3d ranks: peak RSS %.0f MiB%s\n", label, ranks, static_cast<double>(u.ru_maxrss) / 1024.0,
              WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : " (the case failed)");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t nodes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int old_up_to = argc > 2 ? std::atoi(argv[2]) : 64;
  std::vector<int> rank_counts;
  for (int i = 3; i < argc; ++i) rank_counts.push_back(std::atoi(argv[i]));
  if (rank_counts.empty()) rank_counts = {64, 128, 256};
  const Graph sample = joint_graph();
  const gparity::testing::RankGraphMaker maker(sample, nodes, kRankParams);
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) < 0) load[0] = -1;
  std::printf(
      "%zu-node graph (sample aot_joint_graph x %zu), %zu rank parameters; load average %.2f %.2f %.2f\n",
      maker.base().nodes.size(), maker.base().nodes.size() / (sample.nodes.size() - 1), maker.rank_params(),
      load[0], load[1], load[2]);
  std::fflush(stdout);
  for (const int ranks : rank_counts) {
    in_child("new", ranks, [&] { new_case(maker, ranks); });
    if (ranks <= old_up_to) in_child("old", ranks, [&] { old_case(maker, ranks); });
  }
  if (::getloadavg(load, 3) >= 0)
    std::printf("load average at the end %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  return 0;
}
