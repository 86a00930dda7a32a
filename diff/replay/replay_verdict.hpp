#pragma once
// The verdict of `gparity replay --against`, `--coor` and `--cuda-graph` (docs/replay.md): on
// every rank two executions (a and b; own and coor; the uncaptured and the captured run) are
// compared node by node (node_compare: aligned through the graphs, walked in topological order),
// and, across ranks, every divergence is classified by the one causal order of diff/causality:
// the ranks exchange their records' compact causal form (`exchange`, done by the runtime over
// its rendezvous store), and every rank classifies all of them the same way. A rank whose
// collective's inputs were equal while a partner's were not *received* its divergence: it is
// named with the partner, the group, the collective and the origin, and the origin ranks are
// named first.
//
// --coor on a rank whose divergences all came from other ranks: `run_alone` runs its coor graph
// again with every collective taking the result the own graph's collective had (the group
// partners' correct inputs), and that run against its own graph says whether the rank is safe by
// itself ("safe by itself, affected by rank 1"). The overall verdict stays unsafe while any rank
// has an origin. (--cuda-graph compares two runs of one rank: no exchange.)
//
// No LibTorch here: the runtime runs the graphs, the CLI hands the results over.

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/model/run/trace_schema.hpp"
#include "diff/causality/causality.hpp"
#include "diff/replay/node_compare.hpp"

namespace gparity::diff {

enum class ReplayMode : std::uint8_t { Against, Coor, CudaGraph };

/// One rank's two executions: top-level node records and graphs as they ran, and the outputs.
struct ReplayRankRun {
  int rank = 0;
  std::string label_a, label_b;
  NodeSide a, b;
  std::span<const model::NodeRecord> outputs_a, outputs_b;
};

/// Sends this rank's text to every rank and returns every rank's text, by rank (one entry on a
/// single rank). Every rank calls it the same number of times, with the same keys.
using ReplayExchange =
    std::function<std::vector<std::string>(const std::string& key, const std::string& text)>;
/// --coor: the coor graph run again alone, each collective taking the own graph's result; its
/// top-level records, or `problem` set when it could not run that way.
using ReplayRunAlone = std::function<std::vector<model::NodeRecord>(std::string& problem)>;

struct ReplayVerdict {
  bool equal = true;      // this rank's two executions are bitwise equal
  bool all_equal = true;  // every rank's are
  std::string text;       // this rank's verdict: "safe: ...", "unsafe: ...; first divergent node: ..."
  /// Every rank's, origin ranks first: "all ranks: unsafe: origin on rank 1: slice_1
  /// (aten.slice.Tensor) at coor.py:20; rank 0 received it at all_reduce (group tp '3')".
  std::string overall;
  nlohmann::json json;  // outputs_equal, first_divergent, cause, origin, group, ..., text, overall
  int exit_code = 0;    // 0 all equal, 1 a divergence on some rank (--cuda-graph: on this rank)
};

/// This rank's two executions compared here alone: equal outputs, no divergent node, and records
/// compared on both sides. A lazy replay (--node-hash lazy) hashes every node again where not.
bool replay_rank_equal(const ReplayRankRun& run);

/// The whole verdict of one rank: compares its two executions, exchanges and classifies across
/// ranks, and for --coor runs the rank alone when its divergences all came from other ranks.
ReplayVerdict judge_replay(ReplayMode mode, const ReplayRankRun& run, const causality::GroupTable& groups,
                           const ReplayExchange& exchange, const ReplayRunAlone& run_alone = {});

/// Every rank's verdict of a `gparity replay --against` / `--coor` run directory, judged again from
/// what it recorded (both executions' node records and graphs, the "coor-alone" records of ranks
/// that ran alone, the manifest's group table) through the same calls: what a viewer shows.
/// Throws model::InputError for a run that is not such a replay.
struct RankReplayVerdict {
  int rank = 0;
  ReplayVerdict verdict;
};
std::vector<RankReplayVerdict> judge_replay_run(const std::string& run_dir);

}  // namespace gparity::diff
