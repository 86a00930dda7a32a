#pragma once
// What `gparity replay` settles before and between its runs (docs/replay.md), apart from the
// orchestration that uses it (replay.hpp): the graph a rank runs, picked from a loaded source;
// the process groups, symbols and input options from the command line; and, for --node-hash lazy
// (issue 33), the check that a second pass recorded every tensor of the first alike (the replay
// is deterministic). check_replay_options and node_hash_mode (replay.hpp) live in its .cpp.
// Bad input throws model::InputError (a source, a selection) or std::invalid_argument (an option).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/graph/graph_load.hpp"
#include "core/model/graph/process_groups.hpp"
#include "core/model/run/trace_schema.hpp"
#include "core/runtime/interpreter/collectives.hpp"
#include "core/runtime/interpreter/inputs.hpp"
#include "core/runtime/replay.hpp"

namespace gparity::runtime {

/// select_replay_graph's rank when the caller names none: the source's first rank. (An int, not
/// an optional: GCC 12 cannot follow an optional through its inlining, -Wmaybe-uninitialized.)
constexpr int kSourceFirstRank = -1;

/// The one graph of `c` (loaded from `path`) that rank, kind, compile id and index select; none or
/// several, or one holding statements the reader kept as text, is an InputError naming why.
const model::GraphEntry& select_replay_graph(const model::GraphCollection& c, const std::string& path,
                                             int rank, const std::string& kind, const std::string& compile_id,
                                             std::optional<std::size_t> index);

/// Group name -> ranks of the table (--group, Flight Recorder pg_config).
GroupRanks replay_group_ranks(const model::ProcessGroupTable& table);
/// --sym NAME=INTEGER values, by name.
std::map<std::string, std::int64_t> parse_replay_syms(const std::vector<std::string>& syms);
/// The input generation of `o` (--inputs, --seed, --int-range, --per-rank-inputs) on `rank`.
InputOptions replay_input_options(const ReplayOptions& o, int rank);

/// "graph a, node mm output 0: ..." for each record of `first` that `second` lacks or writes
/// otherwise (matched by graph, node and output; every field compared).
std::vector<std::string> records_not_alike(const std::vector<model::NodeRecord>& first,
                                           const std::vector<model::NodeRecord>& second);

}  // namespace gparity::runtime
