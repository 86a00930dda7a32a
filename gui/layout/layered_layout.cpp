#include "gui/layout/layered_layout.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace gparity::gui {
namespace {

// Forward edges only (from < to), in compressed form both ways.
struct Adjacency {
  std::vector<std::uint32_t> in_off, in, out_off, out;
};

Adjacency build_adjacency(std::size_t n, std::span<const LayoutEdge> edges) {
  Adjacency a;
  a.in_off.assign(n + 1, 0);
  a.out_off.assign(n + 1, 0);
  for (const auto& e : edges) {
    if (e.from >= e.to) continue;
    ++a.in_off[e.to + 1];
    ++a.out_off[e.from + 1];
  }
  std::partial_sum(a.in_off.begin(), a.in_off.end(), a.in_off.begin());
  std::partial_sum(a.out_off.begin(), a.out_off.end(), a.out_off.begin());
  a.in.resize(a.in_off.back());
  a.out.resize(a.out_off.back());
  auto in_fill = a.in_off;
  auto out_fill = a.out_off;
  for (const auto& e : edges) {
    if (e.from >= e.to) continue;
    a.in[in_fill[e.to]++] = e.from;
    a.out[out_fill[e.from]++] = e.to;
  }
  return a;
}

std::span<const std::uint32_t> slice(const std::vector<std::uint32_t>& off,
                                     const std::vector<std::uint32_t>& v, std::uint32_t i) {
  return {v.data() + off[i], v.data() + off[i + 1]};
}

std::vector<std::uint32_t> assign_layers(std::size_t n, const Adjacency& a) {
  std::vector<std::uint32_t> layer(n, 0);
  for (std::uint32_t v = 0; v < n; ++v)
    for (auto u : slice(a.in_off, a.in, v)) layer[v] = std::max(layer[v], layer[u] + 1);
  // Sources (parameters, inputs) sit just above their first user instead of all on top.
  for (std::uint32_t v = 0; v < n; ++v) {
    if (a.in_off[v] != a.in_off[v + 1]) continue;
    auto users = slice(a.out_off, a.out, v);
    if (users.empty()) continue;
    std::uint32_t lowest = layer[users.front()];
    for (auto w : users) lowest = std::min(lowest, layer[w]);
    layer[v] = lowest - 1;
  }
  return layer;
}

bool cancelled(const std::atomic<bool>* c) {
  return c && c->load(std::memory_order_relaxed);
}

// One barycentric pass over every layer in `dir`: nodes are sorted by the mean relative position
// of their neighbours on the side they were reached from.
void order_pass(std::vector<std::vector<std::uint32_t>>& order, std::vector<float>& rel, bool down,
                const Adjacency& a) {
  const std::size_t layers = order.size();
  std::vector<std::pair<float, std::uint32_t>> keyed;
  for (std::size_t k = 0; k < layers; ++k) {
    auto& row = order[down ? k : layers - 1 - k];
    keyed.clear();
    for (auto v : row) {
      auto nb = down ? slice(a.in_off, a.in, v) : slice(a.out_off, a.out, v);
      float key = rel[v];
      if (!nb.empty()) {
        float sum = 0;
        for (auto u : nb) sum += rel[u];
        key = sum / static_cast<float>(nb.size());
      }
      keyed.emplace_back(key, v);
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& l, const auto& r) { return l.first < r.first; });
    const float size = static_cast<float>(row.size());
    for (std::size_t i = 0; i < keyed.size(); ++i) {
      row[i] = keyed[i].second;
      rel[row[i]] = (static_cast<float>(i) + 0.5f) / size;
    }
  }
}

// Moves each node of `row` toward `desired` while keeping the order and the minimum gaps: the
// mean of the leftmost-feasible and rightmost-feasible solutions is itself feasible.
void place_row(std::span<const std::uint32_t> row, std::span<const float> widths, float gap,
               std::vector<float>& desired, std::vector<float>& x) {
  const std::size_t m = row.size();
  if (m == 0) return;
  std::vector<float> left(m), right(m);
  auto sep = [&](std::size_t i) { return (widths[row[i - 1]] + widths[row[i]]) / 2 + gap; };
  left[0] = desired[0];
  for (std::size_t i = 1; i < m; ++i) left[i] = std::max(desired[i], left[i - 1] + sep(i));
  right[m - 1] = desired[m - 1];
  for (std::size_t i = m - 1; i-- > 0;) right[i] = std::min(desired[i], right[i + 1] - sep(i + 1));
  for (std::size_t i = 0; i < m; ++i) x[row[i]] = (left[i] + right[i]) / 2;
}

}  // namespace

LayoutResult LayeredLayout::layout(const LayoutInput& in, const LayoutOptions& options,
                                   const std::atomic<bool>* cancel) const {
  LayoutResult r;
  const std::size_t n = in.widths.size();
  r.x.assign(n, 0);
  r.y.assign(n, 0);
  if (n == 0) return r;
  const Adjacency a = build_adjacency(n, in.edges);
  r.layer = assign_layers(n, a);
  const std::uint32_t layers = *std::max_element(r.layer.begin(), r.layer.end()) + 1;
  r.order.resize(layers);
  for (std::uint32_t v = 0; v < n; ++v) r.order[r.layer[v]].push_back(v);

  std::vector<float> rel(n);
  for (const auto& row : r.order)
    for (std::size_t i = 0; i < row.size(); ++i)
      rel[row[i]] = (static_cast<float>(i) + 0.5f) / static_cast<float>(row.size());
  for (int s = 0; s < options.ordering_sweeps; ++s) {
    if (cancelled(cancel)) return r.cancelled = true, r;
    order_pass(r.order, rel, true, a);
    order_pass(r.order, rel, false, a);
  }

  // Packed start, each layer centred on 0.
  for (const auto& row : r.order) {
    float total = 0;
    for (auto v : row) total += in.widths[v] + options.node_gap;
    float cursor = -total / 2;
    for (auto v : row) {
      r.x[v] = cursor + in.widths[v] / 2;
      cursor += in.widths[v] + options.node_gap;
    }
  }
  std::vector<float> desired;
  for (int p = 0; p < options.placement_passes; ++p) {
    if (cancelled(cancel)) return r.cancelled = true, r;
    const bool down = p % 2 == 0;
    for (std::uint32_t k = 0; k < layers; ++k) {
      const auto& row = r.order[down ? k : layers - 1 - k];
      desired.assign(row.size(), 0);
      for (std::size_t i = 0; i < row.size(); ++i) {
        auto nb = down ? slice(a.in_off, a.in, row[i]) : slice(a.out_off, a.out, row[i]);
        if (nb.empty()) {
          desired[i] = r.x[row[i]];
          continue;
        }
        float sum = 0;
        for (auto u : nb) sum += r.x[u];
        desired[i] = sum / static_cast<float>(nb.size());
      }
      place_row(row, in.widths, options.node_gap, desired, r.x);
    }
  }

  const float pitch = options.node_height + options.layer_gap;
  r.min_x = r.max_x = r.x[0];
  for (std::uint32_t v = 0; v < n; ++v) {
    r.y[v] = options.node_height / 2 + static_cast<float>(r.layer[v]) * pitch;
    r.min_x = std::min(r.min_x, r.x[v] - in.widths[v] / 2);
    r.max_x = std::max(r.max_x, r.x[v] + in.widths[v] / 2);
  }
  r.height = static_cast<float>(layers) * pitch - options.layer_gap;
  return r;
}

std::uint64_t count_adjacent_crossings(const LayoutInput& in, const LayoutResult& r) {
  const std::size_t n = r.layer.size();
  std::vector<std::uint32_t> pos(n);
  for (const auto& row : r.order)
    for (std::uint32_t i = 0; i < row.size(); ++i) pos[row[i]] = i;
  // Edges grouped by the upper layer, as (upper pos, lower pos); crossings are inversions of
  // the lower positions once sorted by upper position (Fenwick tree count).
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> by_layer(r.order.size());
  for (const auto& e : in.edges) {
    if (e.from >= n || e.to >= n || r.layer[e.to] != r.layer[e.from] + 1) continue;
    by_layer[r.layer[e.from]].emplace_back(pos[e.from], pos[e.to]);
  }
  std::uint64_t total = 0;
  for (std::size_t l = 0; l + 1 < by_layer.size(); ++l) {
    auto& es = by_layer[l];
    std::sort(es.begin(), es.end());
    std::vector<std::uint32_t> tree(r.order[l + 1].size() + 1, 0);
    std::uint64_t seen = 0;
    for (const auto& [up, low] : es) {
      // Count earlier edges whose lower end is strictly right of this one.
      std::uint64_t not_greater = 0;
      for (std::size_t i = low + 1; i > 0; i -= i & (~i + 1)) not_greater += tree[i];
      total += seen - not_greater;
      for (std::size_t i = low + 1; i < tree.size(); i += i & (~i + 1)) ++tree[i];
      ++seen;
    }
  }
  return total;
}

}  // namespace gparity::gui
