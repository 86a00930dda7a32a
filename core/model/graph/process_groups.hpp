#pragma once
// Process groups by name, as functional collectives in a graph name them ('3' in
// `_c10d_functional.all_reduce.default(x, 'sum', '3')`), with their rank sets: from Flight
// Recorder dumps' `pg_config` (every rank's dump lists the groups that rank belongs to) or from
// `NAME=RANK,RANK,...` specs. PyTorch names groups uniquely across the world, so the table is the
// union over all dumps; one name with two different rank sets is bad input.
//
// counterpart() answers what compile-on-one-rank needs: a graph traced on rank s names s's group
// for each mesh dimension; on rank t the same collective must use t's group for that dimension.
// Groups of one mesh dimension are translates of each other in a row-major DeviceMesh (tp:
// {0,1},{2,3}; dp: {0,2},{1,3}), so the counterpart is the group of t with the same size and the
// same rank strides (and the same description, "mesh_tp", when both have one).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::model {

struct FlightRecorderDump;

struct ProcessGroup {
  std::string name;
  std::string desc;                 // "mesh_tp", "default_pg"; empty when unknown
  std::vector<std::int64_t> ranks;  // sorted, distinct
  std::string origin;               // where it was read: a dump path, or "--group"
};

/// The answer of counterpart(): the group, or why there is none.
struct GroupResolution {
  const ProcessGroup* group = nullptr;
  std::string problem;  // set when group is nullptr
};

class ProcessGroupTable {
 public:
  /// Adds a group; the same name again must have the same ranks (else InputError naming both
  /// origins). A description fills in an empty one.
  void add(ProcessGroup g);
  [[nodiscard]] const ProcessGroup* find(std::string_view name) const noexcept;
  [[nodiscard]] const std::vector<ProcessGroup>& groups() const noexcept { return groups_; }
  [[nodiscard]] bool empty() const noexcept { return groups_.empty(); }
  /// The group that plays `name`'s role on `rank` (see the file comment).
  [[nodiscard]] GroupResolution counterpart(std::string_view name, std::int64_t rank) const;

 private:
  std::vector<ProcessGroup> groups_;
};

/// "NAME=0,1,2" (ranks may also be written as ranges: "0-3"). Throws InputError on malformed text.
ProcessGroup parse_group_spec(std::string_view spec);

/// Adds every pg_config group of a dump.
void add_flight_recorder_groups(ProcessGroupTable& table, const FlightRecorderDump& dump);

/// The Flight Recorder dumps (rank<r>_flight_recorder.json) beside `path`: in it when it is a
/// directory, else in its folder, and in the parent of that folder (a run folder holds the dumps
/// and trace/ the logs). Sorted; empty when there are none.
std::vector<std::string> flight_recorder_dumps_near(const std::string& path);

/// The table for `paths` (Flight Recorder dumps, or folders searched with
/// flight_recorder_dumps_near) and `specs` (NAME=RANKS). Throws InputError for unreadable dumps,
/// malformed specs and conflicting rank sets.
ProcessGroupTable load_group_table(const std::vector<std::string>& paths,
                                   const std::vector<std::string>& specs);

/// "[0, 1]".
std::string ranks_text(const std::vector<std::int64_t>& ranks);

}  // namespace gparity::model
