#pragma once
// Collective schedules across process groups (issue 34): the order in which a rank issues the
// collectives of all its groups, not one group at a time.
//  - Order inversions: two participants (two ranks of a run, or one rank of a baseline and of a
//    candidate) that both issue collective a of group A and b of group B, in opposite orders. Across
//    ranks that is the order that deadlocks NCCL (each rank blocks in the collective the other has
//    not reached); against a baseline it is a collective a pass moved across another group's.
//  - Hangs: from Flight Recorder dumps with collectives not completed, per group the collective it
//    is stuck in and each member's state there, who waits for whom, and the wait-for cycles, each
//    with its root cause told apart (an order inversion: every rank of the cycle issued every
//    collective of it; a skipped collective: one rank went on without issuing one).
// Pure analysis over a CollectiveRun; schedule_checks.cpp turns the results into findings.

#include <cstdint>
#include <string>
#include <vector>

#include "diff/collectives/collectives.hpp"

namespace gparity::diff {

/// One collective as one participant issued it.
struct ScheduledCollective {
  std::string stream;    // "pg 3 (mesh_tp)", or the graph stream for graph collectives
  std::string group;     // the process group's name
  std::int64_t seq = 0;  // collective_seq_id; in a graph, its 1-based place among the group's
  CollectiveOp op;
  /// "pg 3 (mesh_tp) #14 all_reduce" or "group '3' #2 all_reduce (node all_reduce_1)".
  [[nodiscard]] std::string text() const;
};

/// `first` issues a, then b; `second` issues b, then a (a of one group, b of another).
struct OrderInversion {
  std::string source;  // "Flight Recorder", or the graph stream both participants hold
  std::int32_t first_rank = 0, second_rank = 0;
  ScheduledCollective a_first, b_first;    // as `first` recorded them
  ScheduledCollective a_second, b_second;  // as `second` recorded them
  std::size_t count = 1;                   // collectives of a's group inverted against b's group
  bool candidate_first = false;            // order_moves: `first` is the candidate's side
};

/// Between the ranks of one run: for every two groups that two or more ranks share, the first
/// inversion (Flight Recorder: each rank's entries in record order; graphs: each graph stream
/// the ranks hold, in graph order). Collectives outside either rank's ring are not compared.
std::vector<OrderInversion> order_inversions(const CollectiveRun& run);

/// Each rank of the baseline against the same rank of the candidate (`first_rank` and
/// `second_rank` are that rank; `first` is the baseline). Only collectives that the per-group
/// alignment pairs in place take part, so a collective added, removed or reordered within its own
/// group is left to the per-group findings. `seq` is then the baseline's, on both sides.
std::vector<OrderInversion> order_moves(const CollectiveRun& baseline, const CollectiveRun& candidate);

/// One member of a stuck group, at the collective the group is stuck in.
struct MemberState {
  std::int32_t rank = 0;
  /// "completed", "started", "scheduled" (issued, not seen to start), "not issued", "no dump",
  /// "not in its ring" (issued, per pg_status, but the ring no longer holds it).
  std::string state;
  std::int64_t last_completed = -1;  // the group's last collective_seq_id completed on it
  std::int64_t last_issued = -1;     // the last it issued (entries or pg_status)
};

/// A process group some member has not completed a collective of: the lowest collective_seq_id
/// not completed on every member, and each member's state there.
struct GroupWait {
  std::string stream;
  std::string group;
  std::int64_t seq = 0;
  CollectiveOp op;  // as a member that issued it recorded it
  std::vector<MemberState> members;
};

/// `from` is blocked in `waits_in` (its oldest collective not completed) and cannot finish it
/// without `to`: `to` never issued it, or issued it behind a collective it is blocked in
/// (`to_blocked_in`). Members that left no dump are in GroupWait and missing_dumps, not here:
/// what they did is unknown.
struct WaitEdge {
  std::int32_t from = 0, to = 0;
  ScheduledCollective waits_in;
  bool issued = false;      // `to` issued waits_in (queued behind to_blocked_in)
  bool to_blocked = false;  // `to` is blocked itself (to_blocked_in is set)
  ScheduledCollective to_blocked_in;
  ScheduledCollective to_record;  // issued: `to`'s own record of waits_in (its frames, state)
};

/// A wait-for cycle. Its cause: every rank of it issued every collective of it, in different
/// orders, or each stopped at a collective the next never reached (OrderInversion); or some ranks
/// issued all of them while one went on without issuing one (SkippedCollective: from the dumps
/// alone, a rank that would have issued it later, after the one it blocks in, reads the same).
struct Deadlock {
  enum class Cause { OrderInversion, SkippedCollective };
  Cause cause = Cause::OrderInversion;
  std::vector<WaitEdge> cycle;  // from -> to -> ... back to the first edge's from
  /// SkippedCollective: the edge whose `to` went on without issuing its `waits_in`.
  std::size_t skipped_edge = 0;
  std::vector<std::int32_t> behind;  // ranks outside the deadlock that wait on it
  /// Every rank of the deadlock (the strongly connected component of the waits this cycle is in):
  /// one cycle is reported through each rank no earlier cycle of the component ran through.
  std::vector<std::int32_t> component;
};

struct HangAnalysis {
  std::vector<GroupWait> groups;
  std::vector<WaitEdge> waits;
  std::vector<Deadlock> deadlocks;
  /// Waits with no cycle behind them whose `to` has nothing pending: it never arrived.
  std::vector<WaitEdge> never_arrived;
  /// Ranks a process group of some dump holds that no dump was given for.
  std::vector<std::int32_t> missing_dumps;
  [[nodiscard]] bool hung() const noexcept { return !waits.empty(); }
};

/// From the Flight Recorder streams of a run; empty (no groups, no waits) when every entry of
/// every dump completed. Missing dumps are listed either way.
HangAnalysis analyze_hang(const CollectiveRun& run);

}  // namespace gparity::diff
