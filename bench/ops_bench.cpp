// Op-level comparison (core/model/ops, diff/ops; issue goals: reading DebugMode text >= 150 MB/s
// on one core; aligning two 1M-op logs <= 2 s and <= 1 GiB):
//  - BM_ReadDebugMode: debug_string text of the torch 2.11 samples (tests/data/ops), repeated to
//    GPARITY_BENCH_OPS_MB MiB (default 256) in memory, parsed into op records; side by side with
//    BM_ScanLines, a memchr pass over the same buffer that finds every line and does nothing
//    else (the floor of any line reader). bytes_per_second is the rate; the ratio of the two is
//    what carries across machines.
//  - BM_Align1M: the sample's eager and compiled steps (271 and 316 ops) repeated to 1M eager
//    ops (1.17M compiled), each copy's hashes and tensor ids made its own, then aligned and
//    judged as one step (diff::ops::judge_op_logs: statuses, dataflow, anchors, hunks, causes).
//    `_gelu` does the same with the compile_gelu sample (every copy diverges). peak_rss_MiB is
//    the process's peak (inputs included; run with --benchmark_filter=Align for its figure),
//    inputs_rss_MiB the resident size with both logs built, before aligning.

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/model/ops/debugmode.hpp"
#include "diff/ops/op_compare.hpp"

namespace {

using namespace gparity;
using model::ops::OpLog;

const std::string kData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

/// The samples' logs (one and two hash functions, eager and compiled), repeated to `mib` MiB.
const std::string& text() {
  static const std::string t = [] {
    std::string unit;
    for (const char* f :
         {"debugmode/eager/rank0_step1.debug.txt", "debugmode/compile/rank0_step1.debug.txt",
          "debugmode_nnmod/eager/rank0_step1.debug.txt", "debugmode_nnmod/compile/rank1_step2.debug.txt"})
      unit += slurp(kData + f) + "\n\n";
    const std::size_t want = env_size("GPARITY_BENCH_OPS_MB", 256) << 20;
    std::string out;
    out.reserve(want + unit.size());
    while (out.size() < want) out += unit;
    return out;
  }();
  return t;
}

void BM_ScanLines(benchmark::State& state) {
  const std::string& t = text();
  for (auto _ : state) {
    std::size_t lines = 0;
    for (const char* p = t.data();
         (p = static_cast<const char*>(std::memchr(p, '\n', t.data() + t.size() - p))); ++p)
      ++lines;
    benchmark::DoNotOptimize(lines);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * t.size()));
}

void BM_ReadDebugMode(benchmark::State& state) {
  const std::string& t = text();
  std::size_t records = 0;
  for (auto _ : state) {
    const OpLog log = model::ops::parse_debugmode_text(t, "bench.debug.txt", 0, 1);
    records = log.records.size();
    benchmark::DoNotOptimize(log.records.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * t.size()));
  state.counters["records"] = static_cast<double>(records);
}

std::uint64_t salt(std::uint64_t copy) {
  std::uint64_t x = copy * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

/// `base` repeated `copies` times as one step: ids and hashes differ from copy to copy (hash 0,
/// a constant tensor's, stays 0), so equal values still meet only within a copy.
OpLog replicate(const OpLog& base, std::size_t copies) {
  OpLog out;
  out.path = base.path;
  out.format = base.format;
  out.hash_spec = base.hash_spec;
  out.steps = {1};
  for (std::uint32_t id = 1; id < base.strings.size(); ++id) out.strings.intern(base.strings.view(id));
  out.sources = base.sources;
  std::int64_t max_id = 0;
  for (const auto& t : base.tensors) max_id = std::max(max_id, t.id);
  out.records.reserve(base.records.size() * copies);
  out.tensors.reserve(base.tensors.size() * copies);
  out.hashes.reserve(base.hashes.size() * copies);
  const std::int64_t lines = base.records.empty() ? 0 : base.records.back().line;
  for (std::size_t k = 0; k < copies; ++k) {
    const auto tensor0 = static_cast<std::uint32_t>(out.tensors.size());
    const auto hash0 = static_cast<std::uint32_t>(out.hashes.size());
    for (auto h : base.hashes) {
      if (h.kind != model::ops::HashValue::Kind::Text && h.bits != 0) h.bits ^= salt(k);
      out.hashes.push_back(h);
    }
    for (auto t : base.tensors) {
      if (t.id >= 0) t.id += static_cast<std::int64_t>(k) * (max_id + 1);
      t.first_hash += hash0;
      out.tensors.push_back(t);
    }
    for (auto r : base.records) {
      r.first_arg += tensor0;
      r.first_out += tensor0;
      r.index = static_cast<std::uint32_t>(out.records.size());
      r.line += static_cast<std::int64_t>(k) * lines;
      r.step = 1;
      out.records.push_back(r);
    }
  }
  return out;
}

struct AlignFixture {
  std::vector<diff::ops::RankLogs> eager, compiled;
  explicit AlignFixture(const char* compiled_mode) {
    const OpLog e = model::ops::read_debugmode_log(kData + "debugmode/eager/rank0_step1.debug.txt", 0, 1);
    const OpLog c =
        model::ops::read_debugmode_log(kData + "debugmode/" + compiled_mode + "/rank0_step1.debug.txt", 0, 1);
    const std::size_t copies =
        (env_size("GPARITY_BENCH_OPS", 1000000) + e.records.size() - 1) / e.records.size();
    eager.push_back({0, {}});
    eager[0].logs.push_back(replicate(e, copies));
    compiled.push_back({0, {}});
    compiled[0].logs.push_back(replicate(c, copies));
  }
};

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

void align(benchmark::State& state, const char* mode) {
  const AlignFixture f(mode);
  state.counters["inputs_rss_MiB"] = rss_mib();
  const auto choice = diff::ops::choose_hashes(f.eager[0].logs[0], f.compiled[0].logs[0]);
  std::size_t divergent = 0;
  for (auto _ : state) {
    const auto v = diff::ops::judge_op_logs(f.eager, f.compiled, choice);
    divergent = v[0].steps[0].divergent;
    benchmark::DoNotOptimize(v.data());
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["eager_ops"] = static_cast<double>(f.eager[0].logs[0].records.size());
  state.counters["compiled_ops"] = static_cast<double>(f.compiled[0].logs[0].records.size());
  state.counters["divergent_ops"] = static_cast<double>(divergent);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void BM_Align1M(benchmark::State& state) {
  align(state, "compile");
}
void BM_Align1M_gelu(benchmark::State& state) {
  align(state, "compile_gelu");
}

BENCHMARK(BM_ScanLines)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReadDebugMode)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_Align1M)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_Align1M_gelu)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
