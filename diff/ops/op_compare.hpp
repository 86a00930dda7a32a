#pragma once
// `gparity compare EAGER COMPILED` on op logs (docs/ops.md): where did compiled training first
// leave eager, on every rank? Each rank's eager and compiled logs are aligned step by step
// (op_align.hpp) and judged:
//  - parity: every eager op's value was found in the compiled run (by a strong hash);
//  - otherwise the first divergent eager op (in eager order; the innermost call when calls
//    nest): op, nn.Module, source line, step, phase, its compiled counterpart(s), and its cause:
//      origin      its inputs' values are in the compiled run: the divergence starts here;
//      propagated  an input already differed (the op that made it is named);
//      received    a collective whose local inputs are equal but whose output is not: the
//                  ranks whose inputs to that collective differ are named;
//      follows step N  an input that no op of this step made (a parameter, an optimizer state)
//                  differs, and step N already diverged on this rank;
//      input       such an input differs with no earlier divergence seen: the step was fed
//                  other values;
//    with the ops that carry it on (its divergent consumers, transitively), the step's other
//    collectives received from other ranks (never origins: neither they nor the ops that only
//    consume their values), and other origins that do not follow from either;
//  - later steps of a diverged rank are reported as following from the first when their first
//    divergent op's differing inputs were made before the step;
//  - a step whose records stop short on one side (StepCut: a rank killed mid-step, a cut log) is
//    INCOMPLETE from where they stop: what lies past it is not recorded, never divergent.
// The cross-rank part (received) is judged in diff/causality's causal order over the step of
// every rank: each eager op a record reading the records that made its arguments, each
// collective a member of its group's k-th instance. The group is the one the record names (op
// records: `group` and its members `group_ranks`; DebugMode: a functional collective's
// group_name); records without a group, c10d::* lines of DebugMode, are in one group "default":
// every rank either side has logs of. A collective whose local inputs are equal while other
// members' differ is received from them (ranks outside its group are neither senders nor
// receivers through it), and the origin on the rank where the damage started is named; a
// collective not seen on every member is unknown.
// Reports name the deciding hash functions; DebugMode's hash_tensor is order-blind and 0 for
// any constant tensor (weak: never evidence), norm is closeness, not identity (a warning).
// Exit: 0 parity, 1 divergence or incomplete evidence (damaged lines, a rank or step on one side
// only), 2 unusable input (no hashes, no common hash function) or nothing compared.
// Sources: op_verdicts.cpp (judge_op_logs), op_findings.cpp (what the report says of them),
// op_compare.cpp (compare_op_logs, compare_op_runs; and a step recorded in part, op_cut.hpp).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/model/ops/op_log.hpp"
#include "core/model/ops/op_run.hpp"
#include "diff/ops/op_align.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff::ops {

enum class OpCause : std::uint8_t { Origin, Propagated, Received, FollowsStep, Input, Unknown };
/// "origin", "propagated", "received", "follows step", "input", "unknown".
std::string_view op_cause_name(OpCause c) noexcept;

enum class InputState : std::uint8_t { Equal, Differs, Unknown };

struct InputCheck {
  std::uint32_t arg = 0;
  InputState state = InputState::Unknown;
  std::int32_t producer = -1;  // eager position of the record that made it in this step
  bool by_hash = false;        // decided by the argument's own hash (else by its producer)
};

/// Whether a record is a collective (c10d::*, functional collectives; not a wait).
bool is_collective(std::string_view op) noexcept;

/// The group of a collective whose record names none: all ranks (records before groups were
/// written, DebugMode's c10d:: lines).
inline constexpr std::string_view kAllRanksGroup = "default";
/// The name of the process group a collective record ran on (kAllRanksGroup when it names none).
std::string_view collective_group(const model::ops::OpLog& log, const model::ops::OpRecord& r) noexcept;

/// The collectives of every rank, by (step, group, op name, per-group sequence number), and
/// whether each member's inputs to it differed between eager and compiled. Only the ranks that
/// recorded that instance on that group are its members: a rank outside the group never sends
/// through it.
class CollectiveInputs {
 public:
  void record(int rank, std::int64_t step, std::string_view group, std::string_view op, std::size_t sequence,
              bool inputs_differ);
  /// The members other than `rank` whose inputs to that collective differed, ascending.
  [[nodiscard]] std::vector<int> ranks_with_differing_inputs(std::int64_t step, std::string_view group,
                                                             std::string_view op, std::size_t sequence,
                                                             int rank) const;
  /// A member whose compiled records of the step stop before that collective (StepCut): what its
  /// inputs were is not known, so no other member can call the collective an origin.
  void record_unrecorded(int rank, std::int64_t step, std::string_view group, std::string_view op,
                         std::size_t sequence);
  [[nodiscard]] bool has_unrecorded_member(std::int64_t step, std::string_view group, std::string_view op,
                                           std::size_t sequence) const;

 private:
  using Key = std::tuple<std::int64_t, std::string, std::string, std::size_t>;
  std::map<Key, std::vector<std::pair<int, bool>>> members_;
  std::map<Key, std::vector<int>> unrecorded_;
};

struct OpDivergence {
  std::uint32_t record = 0;  // position in the eager slice
  OpCause cause = OpCause::Origin;
  std::vector<InputCheck> inputs;  // of the record (of its collective, for a wait)
  std::int32_t collective = -1;    // a wait's collective (eager position), when the cause was judged there
  std::vector<int> from_ranks;     // received: members whose inputs differed
  std::int64_t follows_step = 0;   // follows step: the earlier divergent step of the rank
  /// A collective judged across ranks (diff/causality): its clause ("received at ... from rank
  /// 1, origin aten::gelu #12 at train.py:37 on rank 1"), the classification as JSON, and the
  /// origin whose damage it carries (rank -1: none named).
  std::string causal_text;
  nlohmann::json causal;
  int origin_rank = -1;
  std::string origin_op, origin_source;
  std::int64_t origin_index = -1;
  /// Received: the origin on the sending rank whose damage fed the collective, when that rank has
  /// several and it is not the first (the one named above): causality::Classification::through.
  std::string through_op, through_source;
  std::vector<std::uint32_t> carriers;  // divergent consumers, transitively, first few by position
  std::size_t carried_total = 0;
  std::vector<std::uint32_t> other_origins;  // divergent ops not downstream of it whose inputs agree
  std::size_t other_origin_total = 0;
  /// Other collectives of the step whose local inputs are equal and whose output differs while
  /// another member's inputs differ: received, like the first (never other origins).
  std::vector<std::uint32_t> other_received;
  std::size_t other_received_total = 0;
};

/// Where one side's records of a step stop short of the other's (a rank killed mid-step, a log
/// cut inside the step): from there on nothing is compared. Only a step that ends its side's log
/// can be cut, and something must say it was: its last line is cut (certain); or, compiled side,
/// its records end within a few new records (kCutSlack, op_verdicts.cpp) of the last one paired
/// with an eager op while eager ops go on; or, eager side, the rank recorded no later eager step
/// while the run has one and the compiled records go on with values the eager step never showed
/// (an Inductor step also goes on so: no sign, no cut). Where the compiled records stop, in eager
/// order: after the last eager op matched by a value of its own (an output unlike what it reads:
/// a view or copy matches wherever its input's value was, past the cut too) and the eager ops
/// the compiled records after it were paired with, up to the first divergent op none was. Every
/// eager op past it whose value was not found (and a collective only its readers there show) is
/// `NotRecorded`: never divergent, an origin, a carrier or an input that differs. Eager side: the
/// compiled records after the last one paired with an eager op are not compared. Either way the
/// step is INCOMPLETE (finding `op_step_cut`) and its rank is not parity.
struct StepCut {
  bool compiled = true;    // the side whose records stop: compiled, else eager
  std::string why;         // what says they stopped ("the log's last line is cut", ...)
  std::uint32_t last = 0;  // that side's last record of the step (position in its slice)
  /// Compiled side: the first eager position not compared, the eager ops from there on, and
  /// those among them whose value is not in the compiled records (now NotRecorded).
  std::uint32_t eager_from = 0;
  std::uint32_t eager_after = 0;
  std::uint32_t not_recorded = 0;
  /// Eager side: the first compiled position not compared, and the compiled records from there
  /// on holding values the eager step never showed.
  std::uint32_t compiled_from = 0;
  std::uint32_t compiled_after = 0;
};

struct StepVerdict {
  std::int64_t step = 0;
  OpSlice eager, compiled;
  SliceAlignment alignment;
  std::size_t divergent = 0, unobserved = 0, weak_only = 0, unhashed = 0, not_recorded = 0;
  std::optional<OpDivergence> first;
  std::vector<StepCut> cuts;  // a side whose records of the step stop short (at most one per side)
};

struct RankVerdict {
  int rank = 0;
  std::vector<StepVerdict> steps;  // steps both sides have, ascending
  [[nodiscard]] const StepVerdict* first_divergent() const;
  /// The first step whose records stop short on a side (StepCut), or nullptr.
  [[nodiscard]] const StepVerdict* first_cut() const;
};

/// One rank's logs of one side (a file per step, or one file of every step).
struct RankLogs {
  int rank = 0;
  std::vector<model::ops::OpLog> logs;
};

struct OpCompareOptions {
  std::string title = "gparity compare";
  std::string eager_name = "eager";  // paths or labels, for the report header
  std::string compiled_name = "compiled";
  bool allow_incomplete = false;
  std::size_t max_listed = 5;  // carriers, counterparts, other origins listed per finding
  /// Kernel-level parity required (the gate's "ops": {"kernels": true}): compare_op_runs throws
  /// InputError naming the run and rank whose records show no kernel launch.
  bool require_kernels = false;
};

/// Compares logs already read. Returns the exit code; the report goes to `out`.
/// Every rank's op logs of one run (its files read in step order), ranks ascending.
std::vector<RankLogs> read_rank_logs(const model::ops::OpRun& run);

int compare_op_logs(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                    const OpCompareOptions& options, FindingConsumer& out);

/// Reads both runs (model::ops::open_op_run) and compares them. Throws InputError when a
/// file cannot be read at all.
int compare_op_runs(const model::ops::OpRun& eager, const model::ops::OpRun& compiled,
                    OpCompareOptions options, FindingConsumer& out);

/// The verdicts behind a comparison, for tests and the viewer (no report): ranks and steps that
/// both sides have. `choice` must be usable.
std::vector<RankVerdict> judge_op_logs(const std::vector<RankLogs>& eager,
                                       const std::vector<RankLogs>& compiled, const HashChoice& choice,
                                       std::size_t max_listed = 5);

}  // namespace gparity::diff::ops
