#pragma once
// Normalizations applied before two graphs are compared (graph-diff issue), each a named option
// that reports list, and the per-node views the aligner and classifier share: a content hash of
// a node without its inputs' identities, a rendering of values as FX prints them, and a
// recursive comparison of two values that yields the differing leaves with their paths.
// A NormalizedGraph binds one graph to its local device (the rank's device index), so that
// `cuda:<local>` on rank 3 and `cuda:<local>` on rank 5 compare equal. Release lists
// (`x = None`) never reach the IR, so they are always ignored.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/graph_load.hpp"

namespace gparity::diff {

struct GraphNormalization {
  /// Device indices (annotations and literals) equal to the graph's local device compare as
  /// "local". On by default: it is what makes rank graphs comparable.
  bool map_local_device = true;
  /// Symbols renumbered by first appearance (s77 ~ s0).
  bool renumber_symbols = false;
  /// Process-group names of functional collectives compare equal.
  bool ignore_process_groups = false;
  /// Prefixes removed from source paths (source is reported, never compared).
  std::vector<std::string> strip_path_prefixes;
  /// Node names are not a compared field (they still align nodes first).
  bool ignore_node_names = true;
};

/// The names of the options in effect ("local-device", "symbols", ...), for every report.
std::vector<std::string> normalization_names(const GraphNormalization& n);

/// A device index inside a value: a device literal or a "cuda:k" string. nullopt otherwise.
std::optional<std::int32_t> device_index_of(const model::Graph& g, const model::Value& v);

// Value and annotation texts in findings are model::value_text / model::meta_text
// (core/model/graph/graph_load.hpp), found here by argument-dependent lookup.

/// One graph under a normalization, with its local device (nullopt: unknown, no mapping).
class NormalizedGraph {
 public:
  NormalizedGraph(const model::Graph& g, const GraphNormalization& norm,
                  std::optional<std::int32_t> local_device);

  [[nodiscard]] const model::Graph& graph() const noexcept { return g_; }
  [[nodiscard]] const GraphNormalization& norm() const noexcept { return norm_; }
  [[nodiscard]] std::optional<std::int32_t> local_device() const noexcept { return local_; }
  /// Hash of kind, target, args and kwargs (node references contribute only their presence)
  /// and annotation, under the normalization: equal content means the nodes may correspond.
  [[nodiscard]] std::uint64_t content_hash(model::NodeId n) const { return content_[n]; }
  /// Hash of kind and target only.
  [[nodiscard]] std::uint64_t op_hash(model::NodeId n) const { return op_[n]; }
  /// A symbol's canonical text under the normalization (s77 -> s#0 when renumbering).
  [[nodiscard]] std::string symbolic(std::string_view expr) const;
  /// Verbatim annotation text with every "cuda:<local>" written "cuda:local" (DTensor(...)).
  [[nodiscard]] std::string localized(std::string_view text) const;
  /// True when the device index compares as "local".
  [[nodiscard]] bool is_local(std::int32_t index) const noexcept {
    return norm_.map_local_device && local_ && index == *local_;
  }

 private:
  const model::Graph& g_;
  const GraphNormalization& norm_;
  std::optional<std::int32_t> local_;
  std::vector<std::string> symbols_;  // in order of first appearance
  std::vector<std::uint64_t> content_, op_;
};

/// Where in a node a difference sits: "target", "args[2]", "args[1][0]", "kwargs.device",
/// "meta.dtype", "meta.shape", "meta.stride", "meta.device", "meta", "args", "kwargs".
struct FieldDiff {
  std::string path;
  std::string a_text, b_text;
  /// The differing leaves when both sides are scalars (nullptr for a structural difference
  /// such as a different list length, or for annotation fields).
  const model::Value* a_value = nullptr;
  const model::Value* b_value = nullptr;
};

/// The fields in which node a (of A) and node b (of B) differ under the normalization. Node
/// references are equal when `refs_equal(a_ref, b_ref)` says so (the alignment decides).
template <typename RefsEqual>
std::vector<FieldDiff> diff_nodes(const NormalizedGraph& a, model::NodeId na, const NormalizedGraph& b,
                                  model::NodeId nb, RefsEqual&& refs_equal);

// ---- implementation of the template --------------------------------------------------------

namespace detail {
bool leaf_equal(const NormalizedGraph& a, const model::Value& va, const NormalizedGraph& b,
                const model::Value& vb);
/// value_text, with " (local)" after a device that is the graph's local device.
std::string leaf_text(const NormalizedGraph& g, const model::Value& v);
bool is_pg_arg(const NormalizedGraph& g, const model::Node& n, int arg);
void diff_meta(const NormalizedGraph& a, const model::Node& na, const NormalizedGraph& b,
               const model::Node& nb, std::vector<FieldDiff>& out);
}  // namespace detail

template <typename RefsEqual>
void diff_values(const NormalizedGraph& a, const model::Value& va, const NormalizedGraph& b,
                 const model::Value& vb, const std::string& path, RefsEqual& refs_equal,
                 std::vector<FieldDiff>& out) {
  using model::ValueKind;
  const bool a_seq = !va.items.empty() || va.kind == ValueKind::List || va.kind == ValueKind::Tuple ||
                     va.kind == ValueKind::Slice;
  if (va.kind != vb.kind || (a_seq && va.items.size() != vb.items.size())) {
    FieldDiff d{path, value_text(a.graph(), va), value_text(b.graph(), vb)};
    if (!a_seq && vb.items.empty()) {
      d.a_value = &va;
      d.b_value = &vb;
    }
    out.push_back(std::move(d));
    return;
  }
  if (va.kind == ValueKind::Node) {
    if (!refs_equal(va.node, vb.node))
      out.push_back({path, value_text(a.graph(), va), value_text(b.graph(), vb)});
    return;
  }
  if (a_seq) {
    for (std::size_t i = 0; i < va.items.size(); ++i)
      diff_values(a, va.items[i], b, vb.items[i], path + "[" + std::to_string(i) + "]", refs_equal, out);
    return;
  }
  if (!detail::leaf_equal(a, va, b, vb))
    out.push_back({path, detail::leaf_text(a, va), detail::leaf_text(b, vb), &va, &vb});
}

template <typename RefsEqual>
std::vector<FieldDiff> diff_nodes(const NormalizedGraph& a, model::NodeId na, const NormalizedGraph& b,
                                  model::NodeId nb, RefsEqual&& refs_equal) {
  std::vector<FieldDiff> out;
  const auto& x = a.graph().node(na);
  const auto& y = b.graph().node(nb);
  const auto& ga = a.graph();
  const auto& gb = b.graph();
  if (x.kind != y.kind)
    out.push_back(
        {"kind", std::string(model::node_kind_name(x.kind)), std::string(model::node_kind_name(y.kind))});
  if (ga.str(x.target) != gb.str(y.target)) {
    const bool placeholder = x.kind == model::NodeKind::Placeholder;
    const bool sym = placeholder && x.meta.kind == model::TensorMeta::Kind::Sym;
    const bool renamed = placeholder && !sym && a.norm().ignore_node_names;  // its target is its name
    if (!renamed && (!sym || a.symbolic(ga.str(x.target)) != b.symbolic(gb.str(y.target))))
      out.push_back({"target", std::string(ga.str(x.target)), std::string(gb.str(y.target))});
  }
  if (x.args.size() != y.args.size()) {
    out.push_back({"args", std::to_string(x.args.size()) + " args", std::to_string(y.args.size()) + " args"});
  } else {
    for (std::size_t i = 0; i < x.args.size(); ++i) {
      if (detail::is_pg_arg(a, x, static_cast<int>(i)) && detail::is_pg_arg(b, y, static_cast<int>(i)))
        continue;
      diff_values(a, x.args[i], b, y.args[i], "args[" + std::to_string(i) + "]", refs_equal, out);
    }
  }
  // kwargs by name: FX prints them in call order, which is not meaningful.
  for (const auto& k : x.kwargs) {
    const auto name = ga.str(k.name);
    const model::Kwarg* other = nullptr;
    for (const auto& l : y.kwargs) {
      if (gb.str(l.name) == name) other = &l;
    }
    const std::string path = "kwargs." + std::string(name);
    if (other == nullptr) {
      out.push_back({path, value_text(ga, k.value), "(absent)"});
    } else if (!(a.norm().ignore_process_groups && name == "group_name")) {
      diff_values(a, k.value, b, other->value, path, refs_equal, out);
    }
  }
  for (const auto& l : y.kwargs) {
    const auto name = gb.str(l.name);
    bool found = false;
    for (const auto& k : x.kwargs) found = found || ga.str(k.name) == name;
    if (!found) out.push_back({"kwargs." + std::string(name), "(absent)", value_text(gb, l.value)});
  }
  detail::diff_meta(a, x, b, y, out);
  return out;
}

}  // namespace gparity::diff
