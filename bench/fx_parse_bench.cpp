// The FX payload parse alone (issue 35): every graph payload of every TORCH_TRACE log under the
// shared samples (../shared/samples, GPARITY_SAMPLES) and the tlparse corpus
// (../shared/external/tlparse, GPARITY_TLPARSE_CORPUS), as read_torch_trace finds them, parsed
// with model::read_fx_text again and again for at least GPARITY_FX_SECONDS (2) of CPU time.
// Reports MB of payload text per CPU-second, one thread (goal: >= 150 MB/s a core), beside the
// TORCH_TRACE envelope read of the same logs. Prints an XXH3 digest of every parsed graph's JSON
// form (graph_json.hpp) and of the problems: two builds that print the same digest read the same
// IR from the same text. A plain timed main.
//
// Usage: bench_fx_parse [extra log, FX .txt file or folder...]

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"
#include "xxhash.h"

namespace {

namespace fs = std::filesystem;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

fs::path corpus_dir(const char* env, const char* below_shared) {
  const char* v = std::getenv(env);
  return v != nullptr ? fs::path(v) : fs::path(GPARITY_SOURCE_DIR) / "../shared" / below_shared;
}

struct Payload {
  std::string source;
  std::string text;
  std::int64_t first_line = 1;
};

/// Every graph payload of the TORCH_TRACE logs under `root` (a log or a folder, recursively).
void collect(const fs::path& root, std::vector<Payload>& out, std::uint64_t& log_bytes,
             double& envelope_cpu) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    files.push_back(root);
  } else {
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  gparity::model::TraceOptions opt;
  opt.parse_graphs = false;
  for (const auto& f : files) {
    std::string head(256, '\0');
    if (FILE* fp = std::fopen(f.c_str(), "rb")) {
      head.resize(std::fread(head.data(), 1, head.size(), fp));
      std::fclose(fp);
    }
    if (!gparity::model::looks_like_torch_trace(head)) {
      // A print_readable text file (tests' FX syntax samples, fuzz seeds): one payload.
      if (!f.string().ends_with(".txt") || !gparity::model::looks_like_fx_text(head)) continue;
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back({f.string(), ss.str(), 1});
      continue;
    }
    const double t0 = cpu_seconds();
    const auto rt = gparity::model::read_torch_trace(f.string(), opt);
    envelope_cpu += cpu_seconds() - t0;
    log_bytes += rt.text.size();
    for (const auto& r : rt.records) {
      if (r.payload_lines == 0 || !gparity::model::is_graph_record_name(r.kind, r.name)) continue;
      std::string text = rt.payload(r);
      if (!gparity::model::looks_like_fx_text(text) && (r.kind == "artifact" || r.kind == "graph_dump"))
        continue;
      out.push_back({f.string(), std::move(text), r.line + 1});
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> roots{corpus_dir("GPARITY_SAMPLES", "samples"),
                              corpus_dir("GPARITY_TLPARSE_CORPUS", "external/tlparse")};
  for (int i = 1; i < argc; ++i) roots.emplace_back(argv[i]);
  std::vector<Payload> payloads;
  std::uint64_t log_bytes = 0;
  double envelope_cpu = 0;
  for (const auto& r : roots) collect(r, payloads, log_bytes, envelope_cpu);
  std::uint64_t bytes = 0;
  for (const auto& p : payloads) bytes += p.text.size();
  if (payloads.empty()) {
    std::fprintf(stderr, "no graph payloads found (set GPARITY_SAMPLES / GPARITY_TLPARSE_CORPUS)\n");
    return 2;
  }
  // One pass for the digest (not timed), then timed passes.
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  std::size_t nodes = 0, problems = 0;
  for (const auto& p : payloads) {
    const auto parse = gparity::model::read_fx_text(p.text, p.source, p.first_line);
    std::string text = parse.graph ? gparity::model::graph_to_json(*parse.graph).dump() : "none";
    for (const auto& pr : parse.problems) text += "\n" + std::to_string(pr.line) + ": " + pr.problem;
    XXH3_64bits_update(h, text.data(), text.size());
    if (parse.graph) nodes += parse.graph->total_nodes();
    problems += parse.problems.size();
  }
  const auto digest = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  const double budget =
      std::getenv("GPARITY_FX_SECONDS") != nullptr ? std::atof(std::getenv("GPARITY_FX_SECONDS")) : 2.0;
  std::size_t passes = 0;
  const double t0 = cpu_seconds();
  double cpu = 0;
  while (cpu < budget) {
    for (const auto& p : payloads) {
      const auto parse = gparity::model::read_fx_text(p.text, p.source, p.first_line);
      if (!parse.graph && parse.problems.empty()) std::abort();
    }
    ++passes;
    cpu = cpu_seconds() - t0;
  }
  std::printf("FX payloads: %zu payloads, %.2f MB, %zu nodes, %zu problems, IR digest %016llx\n",
              payloads.size(), static_cast<double>(bytes) / 1e6, nodes, problems,
              static_cast<unsigned long long>(digest));
  std::printf("parse: %zu passes, %.2f CPU s, %.1f MB/s a core (goal >= 150)\n", passes, cpu,
              static_cast<double>(bytes) * static_cast<double>(passes) / 1e6 / cpu);
  std::printf("TORCH_TRACE envelope read of the %.1f MB of logs: %.1f MB/s a core (one pass)\n",
              static_cast<double>(log_bytes) / 1e6, static_cast<double>(log_bytes) / 1e6 / envelope_cpu);
  return 0;
}
