#pragma once
// When a rank's node may be shared with the base's node in a RankGraphSet (rank_graph_set.hpp
// says which nodes are not shared): internal to rank_graph_set.cpp and rank_text.cpp, which must
// agree on it node for node.

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"

namespace gparity::diff::rank_shared {

using model::Graph;
using model::Node;
using model::TensorMeta;
using model::Value;
using model::ValueKind;

inline std::string cuda_text(std::int32_t index) {
  return "cuda:" + std::to_string(index);
}

/// A's local device and B's, when they differ (else nodes are shared only when equal).
struct Locals {
  std::int32_t a = 0, b = 0;
  bool remap = false;
  std::string a_text, b_text;  // 'cuda:k' as the fingerprint spells a local device
};

inline Locals locals(std::optional<std::int32_t> a, std::optional<std::int32_t> b) {
  Locals l;
  if (a && b && *a != *b) {
    l.a = *a;
    l.b = *b;
    l.remap = true;
    l.a_text = cuda_text(*a);
    l.b_text = cuda_text(*b);
  }
  return l;
}

inline bool device_index_shared(std::int32_t ia, std::int32_t ib, const Locals& l) {
  if (!l.remap) return ia == ib;
  if (ia == l.a) return ib == l.b;
  return ib == ia && ia != l.b;
}

// Node `nb` of B equals node `na` of A up to the local device, in a way no normalization of diff/
// can tell apart from A's node (rank_graph_set.hpp says which nodes are not shared).
class SharedTest {
 public:
  SharedTest(const Graph& a, const Graph& b, const Locals& l) : a_(a), b_(b), l_(l) {}

  bool node(const Node& x, const Node& y) const {
    if (x.kind != y.kind || x.line != y.line || x.args.size() != y.args.size() ||
        x.kwargs.size() != y.kwargs.size() || x.source.line != y.source.line || !same(x.name, y.name) ||
        !same(x.target, y.target) || !same(x.source.file, y.source.file) ||
        !same(x.source.function, y.source.function) || !same(x.source.code, y.source.code) ||
        !same(x.module_path, y.module_path) || !same(x.comment, y.comment) || !meta(x.meta, y.meta)) {
      return false;
    }
    for (std::size_t i = 0; i < x.args.size(); ++i) {
      if (!value(x.args[i], y.args[i])) return false;
    }
    for (std::size_t i = 0; i < x.kwargs.size(); ++i) {
      if (!same(x.kwargs[i].name, y.kwargs[i].name) || !value(x.kwargs[i].value, y.kwargs[i].value))
        return false;
    }
    return true;
  }

 private:
  bool same(model::StrId x, model::StrId y) const { return a_.str(x) == b_.str(y); }

  bool value(const Value& x, const Value& y) const {
    if (x.kind != y.kind || x.i != y.i || x.node != y.node || x.items.size() != y.items.size() ||
        !same(x.device.type, y.device.type)) {
      return false;
    }
    if (x.kind == ValueKind::Device) {
      if (!device_index_shared(x.device.index, y.device.index, l_)) return false;
      // A local literal is shared only as a cuda device: diff/'s field comparison takes only
      // cuda literals for devices, while the hashes take any type.
      if (l_.remap && x.device.index == l_.a && a_.str(x.device.type) != "cuda") return false;
    } else if (x.device.index != y.device.index) {
      return false;
    }
    if (x.kind == ValueKind::String && l_.remap) {
      const auto sx = a_.str(x.s);
      const auto sy = b_.str(y.s);
      if (sx == l_.a_text) return sy == l_.b_text;
      if (sx != sy) return false;
      if (const auto k = device_index_of(a_, x); k && (*k == l_.a || *k == l_.b)) return false;
    } else if (!same(x.s, y.s)) {
      return false;
    }
    for (std::size_t i = 0; i < x.items.size(); ++i) {
      if (!value(x.items[i], y.items[i])) return false;
    }
    return true;
  }

  bool dims(const std::vector<model::Dim>& x, const std::vector<model::Dim>& y) const {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].value != y[i].value || !same(x[i].expr, y[i].expr)) return false;
    }
    return true;
  }

  bool meta(const TensorMeta& x, const TensorMeta& y) const {
    if (x.kind != y.kind || x.dtype != y.dtype || x.has_strides != y.has_strides || !dims(x.sizes, y.sizes) ||
        !dims(x.strides, y.strides) || !same(x.device.type, y.device.type) || !same(x.sym, y.sym) ||
        !device_index_shared(x.device.index, y.device.index, l_)) {
      return false;
    }
    // Annotation texts are localized by the field diff but not by the fingerprint.
    return !l_.remap || a_.str(x.sym).find("cuda:") == std::string_view::npos;
  }

  const Graph& a_;
  const Graph& b_;
  const Locals& l_;
};

}  // namespace gparity::diff::rank_shared
