// `gparity compare`, `gparity collectives` and `gparity gate` at 64, 128 and 256 ranks, end to end
// through the CLI under /usr/bin/time -v (wall time and peak RSS), side by side in one run
// (docs/scale.md, issue 25). Goals at 256 ranks: compare of two runs x 1,000 steps x 300
// parameters <= 10 s and <= 1 GiB; collectives over 256 Flight Recorder dumps of 2,000 entries
// <= 3 s, of which the analyses across process groups (order inversions, hangs; issue 34) add
// <= 1 s against `--no-schedules`, side by side; the gate on the run pair <= 15 s. `cat >
// /dev/null` of the same files is the floor.
//
// The inputs are synthetic and generated here: per rank, a trace v1 file (param.xxh3 and
// param.shard per step, loss, grad norm) and a Flight Recorder JSON dump (a default group of
// every rank and a tensor-parallel group of 8, 4 stack frames per entry). The candidate run
// shares the baseline's rank files (hard links) except one rank, whose one parameter diverges
// from the middle step on: a real DIVERGENCE verdict, exit 1. GPARITY_SCALE_DIR keeps the
// inputs between runs (default: a temporary folder, deleted); GPARITY_SCALE_RANKS ("64,128,256"),
// _STEPS (1000), _PARAMS (300), _ENTRIES (2000) change the sizes.

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/synthetic_trace.hpp"
#include "core/model/run/trace_writer.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity;

using bench::env_int;

std::vector<int> env_list(const char* name, std::vector<int> fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  std::vector<int> out;
  std::stringstream s(v);
  for (std::string item; std::getline(s, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

const int kSteps = env_int("GPARITY_SCALE_STEPS", 1000);
const int kParams = env_int("GPARITY_SCALE_PARAMS", 300);
const int kEntries = env_int("GPARITY_SCALE_ENTRIES", 2000);

/// One rank's trace; `diverge_from` > 0 plants a different hash of parameter 7 from that step on.
void write_rank(const fs::path& dir, int rank, int diverge_from) {
  model::TraceWriter w(dir, rank);
  model::ParamsRecord p;
  for (int i = 0; i < kParams; ++i) {
    p.params.push_back(
        {"model.layers." + std::to_string(i / 10) + ".block" + std::to_string(i % 10) + ".weight",
         model::DType::BF16,
         {4096, 1024},
         {0, 0},
         {4096, 1024},
         {},
         rank == 0});
  }
  w.write_params(p);
  bench::write_random_steps(w, static_cast<std::uint64_t>(rank) * 7919U + 1, kSteps, kParams, 8.0F,
                            [&](int step, model::StepRecord& s) {
                              if (diverge_from > 0 && step >= diverge_from) s.hashes[0].values[7] ^= 1;
                            });
}

void write_manifest(const fs::path& dir, int ranks) {
  model::RunManifest m;
  m.world_size = ranks;
  m.steps = kSteps;
  model::write_manifest(dir, m);
}

/// Baseline and candidate trace runs of `ranks` ranks under `root`.
void write_runs(const fs::path& root, int ranks) {
  const fs::path a = root / "a";
  const fs::path b = root / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  write_manifest(a, ranks);
  write_manifest(b, ranks);
  const int planted = ranks / 2 + 1;
  for (int r = 0; r < ranks; ++r) {
    write_rank(a, r, 0);
    const std::string name = "rank-" + std::to_string(r) + ".jsonl";
    if (r == planted) {
      write_rank(b, r, kSteps / 2);
    } else {
      fs::create_hard_link(a / name, b / name);
    }
  }
}

/// A Flight Recorder JSON dump as torch writes it (_dump_nccl_trace_json).
std::string flight_recorder_json(int rank, int ranks) {
  std::string all = "[";
  for (int r = 0; r < ranks; ++r) all += (r ? ", " : "") + std::to_string(r);
  all += "]";
  const int tp0 = rank / 8 * 8;
  std::string tp = "[";
  for (int r = tp0; r < tp0 + 8 && r < ranks; ++r) tp += (r > tp0 ? ", " : "") + std::to_string(r);
  tp += "]";
  const std::string tp_name = std::to_string(1 + rank / 8);
  std::string out =
      R"({"version": "2.7", "comm_lib_version": "2.21.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ")" +
      all + R"("}, ")" + tp_name + R"(": {"name": ")" + tp_name + R"(", "desc": "tp", "ranks": ")" + tp +
      R"("}}, "pg_status": {}, "entries": [)";
  static const char* const kOps[] = {"nccl:all_gather_into_tensor_coalesced",
                                     "nccl:reduce_scatter_tensor_coalesced", "nccl:all_reduce"};
  std::int64_t seq_default = 0;
  std::int64_t seq_tp = 0;
  for (int e = 0; e < kEntries; ++e) {
    const bool on_tp = e % 2 == 1;
    const std::int64_t seq = on_tp ? ++seq_tp : ++seq_default;
    const int size = 1024 * (1 + e % 16);
    out += e ? ", " : "";
    out +=
        R"({"record_id": )" + std::to_string(e) + R"(, "pg_id": )" + (on_tp ? "1" : "0") +
        R"(, "process_group": [")" + (on_tp ? tp_name : "0") + R"(", ")" + (on_tp ? "tp" : "default_pg") +
        R"("], "collective_seq_id": )" + std::to_string(seq) + R"(, "p2p_seq_id": 0, "op_id": )" +
        std::to_string(seq) + R"(, "profiling_name": ")" + kOps[e % 3] + R"(", "time_created_ns": )" +
        std::to_string(1'700'000'000'000'000'000LL + e * 1000LL) +
        R"(, "duration_ms": 0.25, "input_sizes": [[)" + std::to_string(size) +
        R"(]], "input_dtypes": ["BFloat16"], "output_sizes": [[)" + std::to_string(size) +
        R"(]], "output_dtypes": ["BFloat16"], "state": "completed", "time_discovered_started_ns": null, )"
        R"("time_discovered_completed_ns": null, "retired": true, "timeout_ms": 600000, "is_p2p": false, "frames": [)";
    for (int f = 0; f < 4; ++f) {
      out += f ? ", " : "";
      out +=
          R"({"name": "forward", "filename": "/opt/venv/lib/python3.12/site-packages/torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", "line": )" +
          std::to_string(100 + f) + "}";
    }
    out += "]}";
  }
  return out + "]}";
}

void write_dumps(const fs::path& dir, int ranks) {
  fs::create_directories(dir);
  for (int r = 0; r < ranks; ++r) {
    std::ofstream f(dir / ("rank" + std::to_string(r) + "_flight_recorder.json"), std::ios::binary);
    f << flight_recorder_json(r, ranks);
  }
}

std::uintmax_t folder_bytes(const fs::path& dir, const std::string& suffix) {
  std::uintmax_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().string().ends_with(suffix)) n += e.file_size();
  return n;
}

struct Measured {
  double wall_s = 0;
  double peak_mib = 0;
  double cpu_s = 0;  // user + system: what the command costs whatever else the machine runs
  int exit_code = -1;
};

/// Runs `command` under /usr/bin/time -v, its output discarded.
Measured measure(const std::string& command) {
  const std::string times =
      (fs::temp_directory_path() / ("gparity-scale-time-" + std::to_string(::getpid()))).string();
  const std::string line = "/usr/bin/time -v -o " + times + " " + command + " > /dev/null 2>&1";
  const int status = std::system(line.c_str());
  Measured m;
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(times);
  for (std::string l; std::getline(in, l);) {
    if (const auto p = l.find("Maximum resident set size (kbytes): "); p != std::string::npos) {
      m.peak_mib = std::stod(l.substr(p + 36)) / 1024.0;
    } else if (const auto q = l.find("Elapsed (wall clock) time (h:mm:ss or m:ss): ");
               q != std::string::npos) {
      // "m:ss.cc" or "h:mm:ss"
      std::stringstream s(l.substr(q + 45));
      double total = 0;
      for (std::string part; std::getline(s, part, ':');) total = total * 60 + std::stod(part);
      m.wall_s = total;
    } else if (const auto u = l.find("User time (seconds): "); u != std::string::npos) {
      m.cpu_s += std::stod(l.substr(u + 21));
    } else if (const auto s = l.find("System time (seconds): "); s != std::string::npos) {
      m.cpu_s += std::stod(l.substr(s + 23));
    } else if (const auto e = l.find("Exit status: "); e != std::string::npos) {
      m.exit_code = std::atoi(l.c_str() + e + 13);
    }
  }
  fs::remove(times);
  return m;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

void row(const char* what, int ranks, const Measured& m, double goal_s, double goal_mib) {
  std::printf(
      "%-38s %5d %8.2f %8.2f %9.0f %5d   %s\n", what, ranks, m.wall_s, m.cpu_s, m.peak_mib, m.exit_code,
      goal_s > 0
          ? ((m.wall_s <= goal_s && (goal_mib <= 0 || m.peak_mib <= goal_mib)) ? "goal met" : "GOAL MISSED")
          : "");
  std::fflush(stdout);
}

}  // namespace

int main() {
  const std::string exe = GPARITY_EXE;
  const char* keep = std::getenv("GPARITY_SCALE_DIR");
  const fs::path root =
      keep ? fs::path(keep) : fs::temp_directory_path() / ("gparity-scale-" + std::to_string(::getpid()));
  const auto ranks_list = env_list("GPARITY_SCALE_RANKS", {64, 128, 256});
  std::printf(
      "gparity scale bench: %d steps x %d parameters per rank (param.xxh3 + param.shard), %d Flight "
      "Recorder entries per rank; load average at start %s; inputs in %s\n\n",
      kSteps, kParams, kEntries, load_average().c_str(), root.string().c_str());
  for (const int ranks : ranks_list) {
    const fs::path dir = root / ("r" + std::to_string(ranks) + "-s" + std::to_string(kSteps) + "-p" +
                                 std::to_string(kParams) + "-e" + std::to_string(kEntries));
    if (!fs::exists(dir / "done")) {
      fs::remove_all(dir);
      const auto t0 = std::chrono::steady_clock::now();
      write_runs(dir, ranks);
      write_dumps(dir / "fr", ranks);
      std::ofstream(dir / "done") << "inputs complete\n";
      std::printf("[%d ranks: inputs written in %.1f s]\n", ranks,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double trace_mib = static_cast<double>(folder_bytes(dir / "a", ".jsonl")) / (1024.0 * 1024.0);
    const double fr_mib = static_cast<double>(folder_bytes(dir / "fr", ".json")) / (1024.0 * 1024.0);
    std::printf(
        "%d ranks: baseline trace %.0f MiB (%.0f bytes per rank and step), dumps %.0f MiB; load average %s\n",
        ranks, trace_mib, trace_mib * 1024 * 1024 / (static_cast<double>(ranks) * kSteps), fr_mib,
        load_average().c_str());
    std::printf("%-38s %5s %8s %8s %9s %5s\n", "command", "ranks", "wall s", "cpu s", "peak MiB", "exit");
    const bool at_goal_size = ranks == 256 && kSteps == 1000 && kParams == 300 && kEntries == 2000;
    row("cat runs > /dev/null (floor)", ranks,
        measure("sh -c 'cat " + (dir / "a").string() + "/*.jsonl " + (dir / "b").string() + "/*.jsonl'"), 0,
        0);
    row("gparity compare a b", ranks,
        measure(exe + " compare " + (dir / "a").string() + " " + (dir / "b").string()), at_goal_size ? 10 : 0,
        1024);
    row("gparity gate (4 reports)", ranks,
        measure(exe + " gate --baseline " + (dir / "a").string() + " --candidate " + (dir / "b").string() +
                " --out " + (dir / "gate").string()),
        at_goal_size ? 15 : 0, 0);
    row("cat dumps > /dev/null (floor)", ranks, measure("sh -c 'cat " + (dir / "fr").string() + "/*.json'"),
        0, 0);
    row("gparity collectives fr", ranks, measure(exe + " collectives " + (dir / "fr").string()),
        at_goal_size ? 3 : 0, 0);
    // The analyses across process groups (issue 34), side by side with the per-group checks
    // alone: best of three each, alternating, so load on the machine hits both alike.
    Measured with, without;
    for (int k = 0; k < 3; ++k) {
      const auto a = measure(exe + " collectives --no-schedules " + (dir / "fr").string());
      const auto b = measure(exe + " collectives " + (dir / "fr").string());
      if (k == 0 || a.wall_s < without.wall_s) without = a;
      if (k == 0 || b.wall_s < with.wall_s) with = b;
    }
    row("gparity collectives fr --no-schedules", ranks, without, 0, 0);
    row("gparity collectives fr (best of 3)", ranks, with, 0, 0);
    const double added = with.wall_s - without.wall_s;
    std::printf("%-38s %5d %8.2f %8.2f %9s %5s   %s\n", "cross-group analysis adds", ranks, added,
                with.cpu_s - without.cpu_s, "", "",
                ranks == 256 && kEntries == 2000
                    ? (added <= 1.0 ? "goal met (<= 1 s)" : "GOAL MISSED (<= 1 s)")
                    : "");
    row("gparity collectives fr --baseline fr", ranks,
        measure(exe + " collectives " + (dir / "fr").string() + " --baseline " + (dir / "fr").string()), 0,
        0);
    std::printf("\n");
  }
  if (!keep) fs::remove_all(root);
  std::printf("load average at end %s\n", load_average().c_str());
  return 0;
}
