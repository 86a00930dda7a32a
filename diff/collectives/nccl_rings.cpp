#include "diff/collectives/nccl_rings.hpp"

#include <set>
#include <string>

#include "core/model/formats/nccl_graph.hpp"

namespace gparity::diff {
namespace {

using nlohmann::json;

std::string describe(const std::optional<model::NcclGraphInfo>& n) {
  if (!n) return "not recorded";
  std::string s;
  if (n->graph_file.empty()) {
    s = "NCCL's own graph";
  } else {
    s = "NCCL_GRAPH_FILE=" + n->graph_file;
    if (!n->ring_pattern.empty()) s += " (--ring-orders " + n->ring_pattern + ")";
    if (!n->rings.empty()) {
      std::set<std::vector<std::int64_t>> distinct;
      for (const auto& r : n->rings) distinct.insert(model::canonical_ring(r));
      s += ", " + std::to_string(distinct.size()) + " distinct ring" + (distinct.size() == 1 ? "" : "s") +
           " over " + std::to_string(n->rings.size()) + " channels";
    }
  }
  s += n->algo.empty() ? ", NCCL_ALGO unset" : ", NCCL_ALGO=" + n->algo;
  return s;
}

json to_values(const std::optional<model::NcclGraphInfo>& n) {
  if (!n) return nullptr;
  json j = {{"algo", n->algo}, {"graph_file", n->graph_file}, {"rings", n->rings}};
  if (!n->ring_pattern.empty()) j["ring_pattern"] = n->ring_pattern;
  return j;
}

bool uses_graph_file(const std::optional<model::NcclGraphInfo>& n) {
  return n && !n->graph_file.empty();
}

bool same_orders(const model::NcclGraphInfo& a, const model::NcclGraphInfo& b) {
  if (a.algo != b.algo) return false;
  if (a.graph_file.empty() != b.graph_file.empty()) return false;
  if (a.graph_file.empty()) return true;
  // Two files with the same rings reduce in the same order wherever they live; unreadable ones
  // can only be told apart by name.
  if (!a.rings.empty() || !b.rings.empty()) return a.rings == b.rings;
  return a.graph_file == b.graph_file;
}

}  // namespace

std::optional<Finding> nccl_graph_finding(const model::RunManifest& baseline,
                                          const model::RunManifest& candidate) {
  const auto& a = baseline.nccl;
  const auto& b = candidate.nccl;
  if (!a && !b) return std::nullopt;
  if (a && b && same_orders(*a, *b)) return std::nullopt;
  // One side silent (an older trace, an import): worth saying only when the other changed NCCL's
  // orders.
  if ((!a || !b) && !uses_graph_file(a) && !uses_graph_file(b)) return std::nullopt;
  Finding f;
  f.severity = Severity::Warning;
  f.kind = "nccl_graph_differs";
  f.message = "the runs used different NCCL graphs or ring orders (baseline: " + describe(a) +
              "; candidate: " + describe(b) +
              "): that alone changes the order of sums inside reduce-scatter and all-reduce, so bf16 results "
              "can differ without any other change";
  f.values = {{"baseline", to_values(a)}, {"candidate", to_values(b)}};
  return f;
}

}  // namespace gparity::diff
