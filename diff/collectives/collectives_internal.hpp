#pragma once
// The checks of `gparity collectives` (internal to diff/collectives; report_collectives runs them
// in order). Each emits its findings and checks to `out` and counts what it found in a Tally,
// from which the report's verdict and summary are made.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "diff/collectives/collectives.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff::collectives {

inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : std::string(sep)) + p;
  return s;
}

inline std::string rank_name(std::int32_t r) {
  return "rank " + std::to_string(r);
}

struct Tally {
  Severity worst = Severity::Info;
  std::size_t rank_mismatches = 0, reordered = 0, changed = 0, added = 0, removed = 0, streams = 0;
  std::size_t rooted = 0;      // root / non-root record pairs matched by the rooted rule
  std::size_t unfinished = 0;  // Flight Recorder entries not completed
  std::size_t graph_checked = 0, graph_mismatches = 0;
  std::size_t p2p_pairs = 0;
  std::size_t inversions = 0, moved = 0, deadlocks = 0, never_arrived = 0;
  /// The schedule analyses' structures for --json (inversions, moved_across_groups, deadlocks, hang).
  nlohmann::json schedule = nlohmann::json::object();
  void see(Severity s) { worst = std::max(worst, s); }
};

/// Every stream: do all the ranks that hold it (or that its process group names) issue the same
/// sequence? Point-to-point ops are left to check_p2p.
void check_across_ranks(const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Point-to-point sends paired with their receives across ranks.
void check_p2p(const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Flight Recorder entries not completed when the dump was taken.
void check_states(const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Each rank's inductor graphs' collectives against its Flight Recorder streams.
void cross_check_graphs(const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Ranks that share two or more process groups issuing their collectives in different orders
/// (schedule_checks.cpp).
void check_order_inversions(const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Collectives a candidate issues across another group's collective in the other order than the
/// baseline does, per rank.
void check_order_moves(const CollectiveRun& base, const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Missing dumps, stuck groups, waits, deadlock cycles and their causes, ranks that never arrived.
void check_hang(const CollectiveRun& run, FindingConsumer& out, Tally& t);
/// Each rank's streams against the baseline's same rank.
void check_against_baseline(const CollectiveRun& base, const CollectiveRun& run, FindingConsumer& out,
                            Tally& t);

}  // namespace gparity::diff::collectives
