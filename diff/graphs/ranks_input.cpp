#include "diff/graphs/ranks_input.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "core/model/formats/torch_trace_dir.hpp"
#include "core/model/graph/fx_text.hpp"

namespace gparity::diff {

RanksInput read_ranks_input(const std::string& path, const GraphNormalization& norm,
                            std::int32_t ranks_per_node, unsigned threads, const RanksProgress& progress) {
  RanksInput in;
  in.norm = norm;
  model::TraceOptions options;
  options.parse_graphs = false;  // graphs go into the sets one at a time, below
  // As read_torch_trace_dir reads, but a log's pages go as soon as it is read, before the next
  // logs are: memory holds the logs in flight, not all of them.
  const auto files = model::torch_trace_files(path);
  in.trace.path = path;
  in.trace.ranks.resize(files.size());
  using Key = std::tuple<model::CompileId, std::string, std::int32_t>;
  std::map<Key, std::unique_ptr<RankGraphSet>> sets;
  std::mutex sets_mutex;
  const auto set_for = [&](const Key& key) {
    std::lock_guard lock(sets_mutex);
    auto& s = sets[key];
    if (!s) s = std::make_unique<RankGraphSet>(norm, ranks_per_node);
    return s.get();
  };
  std::vector<std::vector<MeshSpec>> specs(in.trace.ranks.size());
  std::vector<std::exception_ptr> errors(in.trace.ranks.size());
  // As read_torch_trace parses graphs, but each graph goes into its set and is dropped.
  const auto read_graphs = [&](std::size_t i) {
    auto& rt = in.trace.ranks[i];
    rt = model::read_torch_trace(files[i], options);
    std::map<std::pair<model::CompileId, std::string>, std::int32_t> seen;
    for (std::size_t ri = 0; ri < rt.records.size(); ++ri) {
      const auto& r = rt.records[ri];
      if (r.payload_lines == 0 || !model::is_graph_record_name(r.kind, r.name)) continue;
      const std::string text = rt.payload(r);
      if (!model::looks_like_fx_text(text) && (r.kind == "artifact" || r.kind == "graph_dump")) continue;
      std::int32_t& occ = seen[{r.compile, r.name}];
      RankGraphSet* set = set_for({r.compile, r.name, occ});
      const RankGraphSet::PayloadText payload{text, r.line + 1};
      // Compared with the first rank's payload as text: only what differs is parsed.
      if (set->add_text(rt.rank, payload)) {
        ++occ;
        continue;
      }
      model::FxParse p = model::read_fx_text(text, rt.path, r.line + 1);
      for (auto& pr : p.problems)
        rt.problems.push_back({rt.path, pr.line, r.name + " payload: " + pr.problem});
      if (!p.graph) {
        rt.unparsed.push_back(ri);
        continue;
      }
      ++occ;
      set->add(rt.rank, *p.graph, p.problems.empty() ? &payload : nullptr);
    }
    std::stable_sort(
        rt.problems.begin(), rt.problems.end(),
        [](const model::TraceProblem& a, const model::TraceProblem& b) { return a.line < b.line; });
    specs[i] = mesh_specs_in_rank(rt);
    // read_torch_trace maps each log read-only and private (MappedFile): the pages read so far
    // may go, and what is read later (records' small payloads) comes back from the file.
    if (!rt.text.empty()) ::madvise(const_cast<char*>(rt.text.data()), rt.text.size(), MADV_DONTNEED);
  };
  std::atomic<std::size_t> done{0};
  std::mutex progress_mutex;
  const auto guarded = [&](std::size_t i) {
    try {
      read_graphs(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
    const std::size_t k = ++done;
    if (progress) {
      std::lock_guard lock(progress_mutex);
      progress(k, files.size());
    }
  };
  // The first log alone: its graphs become the bases the other ranks are stored against.
  if (!in.trace.ranks.empty()) guarded(0);
  std::atomic<std::size_t> next{1};
  const auto worker = [&] {
    for (std::size_t i = next++; i < in.trace.ranks.size(); i = next++) guarded(i);
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  // By rank, as read_torch_trace_dir sorts them; a rank in two logs is refused as it refuses it.
  std::vector<std::size_t> order(in.trace.ranks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return in.trace.ranks[a].rank < in.trace.ranks[b].rank;
  });
  std::vector<model::TorchTraceRank> ranks;
  std::vector<std::vector<MeshSpec>> sorted_specs;
  for (const std::size_t i : order) {
    ranks.push_back(std::move(in.trace.ranks[i]));
    sorted_specs.push_back(std::move(specs[i]));
  }
  in.trace.ranks = std::move(ranks);
  model::refuse_rank_in_two_logs(in.trace.ranks, path);
  in.mesh_specs = merge_mesh_specs(sorted_specs);
  for (auto& [key, set] : sets) {
    TraceGraphSet ts;
    ts.compile = std::get<0>(key);
    ts.kind = std::get<1>(key);
    ts.occurrence = std::get<2>(key);
    ts.set = std::move(set);
    in.graphs.push_back(std::move(ts));
  }
  return in;
}

}  // namespace gparity::diff
