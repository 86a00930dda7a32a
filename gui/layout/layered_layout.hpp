#pragma once
// Layered top-down layout of a dataflow graph, with no Qt dependency so it can be unit-tested and
// benchmarked on its own. Contract: the caller gives node widths and directed edges; nodes are
// expected in a topological order (FX order is one), and edges that point backwards in that order
// (possible once groups are collapsed into boxes) are kept for drawing but ignored for layering.
// Layering is longest path from the sources, with source nodes pulled down to just above their
// first user; crossings are reduced by barycentric sweeps; x positions are then pulled toward the
// neighbours' mean while keeping the order and a minimum gap. Linear-ish: O((V + E) * sweeps) plus
// a sort per layer per sweep. Cancellation is polled between phases and sweeps.

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

namespace gparity::gui {

struct LayoutEdge {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
};

struct LayoutInput {
  std::vector<float> widths;  // one per node, in layout units
  std::vector<LayoutEdge> edges;
};

struct LayoutOptions {
  float node_height = 28.0f;
  float layer_gap = 36.0f;  // vertical space between two layers
  float node_gap = 16.0f;   // minimum horizontal space between neighbours in a layer
  int ordering_sweeps = 4;  // barycentric down+up sweeps
  int placement_passes = 4;
};

/// Node i's box is centred at (x[i], y[i]) with size widths[i] x node_height.
struct LayoutResult {
  std::vector<float> x, y;
  std::vector<std::uint32_t> layer;               // layer of each node
  std::vector<std::vector<std::uint32_t>> order;  // nodes of each layer, left to right
  float min_x = 0, max_x = 0, height = 0;         // bounds (y runs from 0 to height)
  bool cancelled = false;
};

/// The interface the canvas uses, so the algorithm can be swapped (or tested) alone.
class LayoutEngine {
 public:
  virtual ~LayoutEngine() = default;
  /// Never throws for a well-formed input (edge ends < widths.size()); `cancel` may be null.
  virtual LayoutResult layout(const LayoutInput& in, const LayoutOptions& options,
                              const std::atomic<bool>* cancel) const = 0;
};

class LayeredLayout final : public LayoutEngine {
 public:
  LayoutResult layout(const LayoutInput& in, const LayoutOptions& options,
                      const std::atomic<bool>* cancel) const override;
};

/// Number of pairwise crossings between consecutive layers among edges joining adjacent layers
/// (how tests and the bench judge ordering quality).
std::uint64_t count_adjacent_crossings(const LayoutInput& in, const LayoutResult& r);

}  // namespace gparity::gui
