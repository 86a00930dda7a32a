#pragma once
// The device mesh of a run, read from what its artifacts already hold, in this order of trust:
//   - `--mesh` (an override, given by the user);
//   - DTensor specs in TORCH_TRACE payloads: `DeviceMesh((dp=2, tp=2), 'cuda', stride=(2, 1))`,
//     or one-dimensional sub-meshes `DeviceMesh((tp=2), 'cuda', stride=(1,))` whose strides
//     order the dimensions (row-major: the larger stride is the outer dimension);
//   - Flight Recorder pg_config: groups described `mesh_<dim>` with their rank lists;
//   - the run's manifest (manifest.json, rank<r>_meta.json) when it declares a mesh;
//   - nothing: the factorizations of the world size are candidates (RankLayout::infer_world),
//     and every finding that uses one says the mesh was inferred.
// The result is a RankLayout's mesh, names and source.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/formats/flight_recorder.hpp"
#include "core/model/formats/torch_trace.hpp"

namespace gparity::diff {

struct MeshInfo {
  std::vector<std::int32_t> shape;  // row-major over ranks
  std::vector<std::string> names;   // one per dimension ("dp", "tp"); "" when unnamed
  std::string source;               // "DeviceMesh in graph payloads", "Flight Recorder pg_config", ...
  [[nodiscard]] std::int64_t size() const noexcept;
  [[nodiscard]] std::string text() const;  // "2x2 (dp, tp)"
};

/// A `--mesh` override as users write it: sizes "2x4", or named "dp=2,tp=4" (names make
/// functions read 48*dp instead of 48*mesh[0]). Source "--mesh". Throws model::InputError naming
/// "--mesh" when a size is not a positive integer.
MeshInfo parse_mesh_override(std::string_view text);

/// One DeviceMesh spec as printed by DTensor: dims, sizes and strides. nullopt when `text` at
/// its start is not one.
struct MeshSpec {
  std::vector<std::string> names;
  std::vector<std::int32_t> sizes;
  std::vector<std::int64_t> strides;
};
std::optional<MeshSpec> parse_device_mesh(std::string_view text);

/// Combines the distinct specs seen (full meshes and sub-meshes) into one mesh over `world`
/// ranks; nullopt when they do not cover it.
std::optional<MeshInfo> mesh_from_specs(std::span<const MeshSpec> specs, std::int32_t world);

/// Every DeviceMesh spec in the trace's payloads (each distinct text once).
std::vector<MeshSpec> mesh_specs_in_trace(const model::MultiRankTrace& trace);
/// The same for one rank's log, each spec once; mesh_specs_in_trace is these lists, rank by
/// rank, each spec once.
std::vector<MeshSpec> mesh_specs_in_rank(const model::TorchTraceRank& rank);
/// Merges per-rank lists as mesh_specs_in_trace does.
std::vector<MeshSpec> merge_mesh_specs(const std::vector<std::vector<MeshSpec>>& per_rank);

/// The mesh described by process groups named `mesh_<dim>` (ranks lists), nullopt when the
/// groups do not form a mesh over `world` ranks.
std::optional<MeshInfo> mesh_from_groups(std::span<const model::ProcessGroupConfig> groups,
                                         std::int32_t world);

/// The mesh a run's manifest declares: gparity's trace manifest.json (`mesh_shape`,
/// `mesh_dim_names`) or a sample's rank<r>_meta.json (`mesh: {shape, names}`), looked for beside
/// the trace (in its folder, or the parent of a trace/ folder). nullopt when none declares a mesh
/// over `world` ranks; unreadable files are reported in `problems` and skipped.
std::optional<MeshInfo> mesh_from_manifest(const std::string& trace_path, std::int32_t world,
                                           std::vector<std::string>& problems);

/// Factorizations of `world` into 2 and 3 dimensions, each > 1, outer dimensions first
/// ({2, 2}, {4, 2}, {2, 4}, {2, 2, 2}, ...).
std::vector<std::vector<std::int32_t>> mesh_factorizations(std::int32_t world);

/// The Flight Recorder dumps beside a TORCH_TRACE directory (the run folder: the trace's
/// parent when it is called trace/, or the folder itself): their pg_config groups.
std::vector<model::ProcessGroupConfig> groups_beside_trace(const std::string& trace_path,
                                                           std::vector<std::string>& problems);

}  // namespace gparity::diff
