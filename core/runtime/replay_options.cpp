// What `gparity replay` settles before and between its runs (replay_options.hpp), and its
// options' checks (replay.hpp).

#include "core/runtime/replay_options.hpp"

#include <charconv>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "core/model/base/input_error.hpp"
#include "hash/shard_hash.hpp"

namespace gparity::runtime {

const model::GraphEntry& select_replay_graph(const model::GraphCollection& c, const std::string& path,
                                             int rank, const std::string& kind, const std::string& compile_id,
                                             std::optional<std::size_t> index) {
  model::GraphSelector s;
  if (!c.ranks.empty()) s.rank = rank == kSourceFirstRank ? c.ranks.front() : rank;
  s.kind = kind;
  s.occurrence = index;
  if (!compile_id.empty()) {
    s.compile = model::CompileId::parse(compile_id);
    if (!s.compile) throw model::InputError(compile_id, "not a compile id (expected e.g. 0/0 or 0/0_1)");
  }
  const auto found = model::select_graphs(c, s);
  if (found.empty())
    throw model::InputError(path, "no graph matches the selection" +
                                      (s.rank ? " for rank " + std::to_string(*s.rank) : std::string()) +
                                      " (see `gparity graph list " + path + "`)");
  if (found.size() > 1) {
    std::string which;
    for (const auto* e : found)
      which += "\n  --compile-id " + e->compile.text() + " --graph " + e->kind + " --index " +
               std::to_string(e->occurrence);
    throw model::InputError(path,
                            std::to_string(found.size()) + " graphs match; narrow the selection:" + which);
  }
  const model::GraphEntry& e = *found.front();
  // Statements the reader could not parse stay in the graph as opaque text, which cannot run:
  // refuse the graph here, naming the damage by file and line (the failing node would quote the
  // whole statement, megabytes of it for a hostile one).
  if (e.graph->total_opaque() > 0) {
    // The graph's own problem: in its file, at or after its envelope's line (a trace "log:line").
    const model::TraceProblem* first = nullptr;
    for (const auto& p : c.problems) {
      std::int64_t from = 0;
      if (e.source.starts_with(p.source + ":")) {
        const auto line = std::string_view(e.source).substr(p.source.size() + 1);
        std::from_chars(line.data(), line.data() + line.size(), from);
      } else if (e.source != p.source && !e.source.starts_with(p.source + "!")) {
        continue;
      }
      if (p.line >= from && (first == nullptr || p.line < first->line)) first = &p;
    }
    if (first != nullptr)
      throw model::InputError(
          first->source, first->line,
          first->problem + " (the graph keeps that statement as text: it cannot be replayed)");
  }
  return e;
}

GroupRanks replay_group_ranks(const model::ProcessGroupTable& table) {
  GroupRanks groups;
  for (const auto& g : table.groups()) groups[g.name] = std::vector<int>(g.ranks.begin(), g.ranks.end());
  return groups;
}

std::map<std::string, std::int64_t> parse_replay_syms(const std::vector<std::string>& syms) {
  std::map<std::string, std::int64_t> out;
  for (const auto& s : syms) {
    const auto eq = s.find('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument("");
      std::size_t used = 0;
      out[s.substr(0, eq)] = std::stoll(s.substr(eq + 1), &used);
      if (used != s.size() - eq - 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("--sym takes NAME=INTEGER, got \"" + s + "\"");
    }
  }
  return out;
}

InputOptions replay_input_options(const ReplayOptions& o, int rank) {
  InputOptions io;
  io.safetensors = o.inputs;
  io.seed = o.seed;
  io.per_rank = o.per_rank_inputs;
  io.rank = rank;
  if (!o.int_range.empty()) {
    const auto colon = o.int_range.find(':', 1);
    try {
      if (colon == std::string::npos) throw std::invalid_argument("");
      io.int_range =
          std::pair{std::stoll(o.int_range.substr(0, colon)), std::stoll(o.int_range.substr(colon + 1))};
    } catch (const std::exception&) {
      throw std::invalid_argument("--int-range takes LO:HI, got \"" + o.int_range + "\"");
    }
  }
  return io;
}

/// "graph a, node mm output 0: ..." for each record of `first` that `second` lacks or writes
/// otherwise (by graph, node and output).
std::vector<std::string> records_not_alike(const std::vector<model::NodeRecord>& first,
                                           const std::vector<model::NodeRecord>& second) {
  std::map<std::tuple<std::string_view, std::string_view, std::int64_t>, const model::NodeRecord*> by_key;
  for (const auto& r : second)
    by_key.emplace(std::tuple{std::string_view(r.graph), std::string_view(r.node), r.output}, &r);
  std::vector<std::string> out;
  for (const auto& r : first) {
    const auto it = by_key.find({r.graph, r.node, r.output});
    const std::string what = "graph " + r.graph + ", node " + r.node + " output " + std::to_string(r.output);
    if (it == by_key.end()) {
      out.push_back(what + ": not recorded when every node was hashed");
    } else if (model::to_json(r) != model::to_json(*it->second)) {
      out.push_back(what + ": " + model::to_json(r).dump() + " then " + model::to_json(*it->second).dump());
    }
  }
  return out;
}

std::string node_hash_mode(const ReplayOptions& o) {
  if (!o.node_hash.empty()) return o.node_hash;
  return (!o.against.empty() || o.coor || o.repeat > 0) && !o.cuda_graph ? "lazy" : "shard";
}

void check_replay_options(const ReplayOptions& o) {
  if (!o.against.empty() && o.coor) throw std::invalid_argument("--against and --coor exclude each other");
  if (!o.node_hash.empty() && o.node_hash != "shard" && o.node_hash != "both" && o.node_hash != "lazy")
    throw std::invalid_argument("--node-hash " + o.node_hash + " is not shard, both or lazy");
  if (o.cuda_graph && o.node_hash == "lazy")
    throw std::invalid_argument("--cuda-graph compares every node: --node-hash lazy does not apply");
  if (o.cuda_graph && (!o.against.empty() || o.coor || o.device != "cuda" || o.no_hash))
    throw std::invalid_argument(
        "--cuda-graph runs one graph on --device cuda and compares hashes (no --against, --coor or "
        "--no-hash)");
  if ((!o.against.empty() || o.coor) && o.no_hash)
    throw std::invalid_argument("--against and --coor compare hashes: drop --no-hash");
  if (o.node_hash_stream != "same" && o.node_hash_stream != "side")
    throw std::invalid_argument("--node-hash-stream " + o.node_hash_stream + " is neither same nor side");
  if (!(o.node_hash_side_share > 0 && o.node_hash_side_share <= 1))
    throw std::invalid_argument("--node-hash-side-share must be in (0, 1]");
  if (o.node_hash_side_batch_mib < 1)
    throw std::invalid_argument("--node-hash-side-batch must be at least 1 MiB");
  if (o.node_hash_batch_mib < 1) throw std::invalid_argument("--node-hash-batch must be at least 1 MiB");
  if (o.node_hash_xxh3_chains != "host" && o.node_hash_xxh3_chains != "device")
    throw std::invalid_argument("--node-hash-xxh3-chains " + o.node_hash_xxh3_chains +
                                " is neither host nor device");
  if (!hash::parse_shard_spec(o.node_hash_spec))
    throw std::invalid_argument("--node-hash-spec " + o.node_hash_spec +
                                " is not a shard hash spec (v1 or v2)");
}

}  // namespace gparity::runtime
