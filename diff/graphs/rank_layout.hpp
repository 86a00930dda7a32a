#pragma once
// How `gparity graph ranks` relates a value to the rank that holds it: the layout of ranks over
// nodes (local device) and over a device mesh (coordinates, dimension names, the process groups
// a Flight Recorder dump names), and the affine functions value = a·x + b fitted over one of its
// variables (rank, local rank, a mesh coordinate, or several coordinates of a 2-D/3-D mesh).
// Value types and pure functions; the classifiers (rank_classify.hpp) use them.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diff/graphs/mesh.hpp"

namespace gparity::diff {

/// How ranks map to local devices and mesh coordinates.
struct RankLayout {
  /// Local device = rank % ranks_per_node; 0: local device = rank.
  std::int32_t ranks_per_node = 0;
  /// Device-mesh shape, row-major over ranks ({2, 4}: rank 5 is at (1, 1)); empty: no mesh.
  std::vector<std::int32_t> mesh;
  /// Dimension names ("dp", "tp"); empty or shorter than mesh: "mesh[d]".
  std::vector<std::string> mesh_names;
  /// Where the mesh came from: "--mesh", "DeviceMesh in graph payloads", "Flight Recorder
  /// pg_config", "inferred from world size 4" (then several shapes may have been tried).
  std::string mesh_source;
  /// Process-group name -> its ranks, from the Flight Recorder pg_config beside the trace;
  /// process-group-parametric findings are checked against it when it names the group.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> group_ranks;
  /// No mesh known: fit_affine tries the factorizations of this world size (0: do not).
  std::int32_t infer_world = 0;
  [[nodiscard]] std::string dim_name(std::size_t d) const;
  [[nodiscard]] std::int32_t local_device(std::int32_t rank) const noexcept;
  [[nodiscard]] std::vector<std::int32_t> coordinates(std::int32_t rank) const;
};

/// value = a·x + b, x named by `variable` ("rank", "local_rank", "mesh[0]", ...).
struct AffineFunction {
  std::string variable;
  std::int64_t a = 0, b = 0;
  /// Further terms over other mesh coordinates (value = a·x + Σ a_i·x_i + b), 2-D/3-D meshes.
  std::vector<std::pair<std::string, std::int64_t>> more;
  /// The mesh shape was not given nor read but inferred ("2x2 inferred from world size 4").
  std::string inferred_mesh;
  [[nodiscard]] std::string text() const;  // "32*rank+32", "rank", "-mesh[1]+4", "48*dp"
};

/// Fits value = a·x + b with integer a, b over one of the layout's variables (rank first, then
/// local rank, then mesh coordinates). nullopt when none fits.
std::optional<AffineFunction> fit_affine(std::span<const std::int32_t> ranks,
                                         std::span<const std::int64_t> values, const RankLayout& layout);

/// A mesh shape as text: "2x4".
std::string mesh_shape_text(std::span<const std::int32_t> shape);

/// "2x2 inferred from world size 4": how a shape tried for a layout with no mesh is named.
std::string inferred_mesh_text(std::span<const std::int32_t> shape, std::int32_t world);

/// `layout` with the shape, dimension names and source of `mesh`.
void adopt_mesh(RankLayout& layout, const MeshInfo& mesh);

/// The layout `--mesh SPEC` gives (`gparity graph ranks`, `gparity-view`): the mesh of `spec`
/// ("2x4" or "dp=2,tp=4", diff::parse_mesh_override; empty: none, resolve_layout finds one).
/// Throws model::InputError naming "--mesh" for a bad spec.
RankLayout mesh_override_layout(std::string_view spec, std::int32_t ranks_per_node = 0);

}  // namespace gparity::diff
