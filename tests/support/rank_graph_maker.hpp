#pragma once
// Synthetic ranks' graphs for `graph ranks` at scale (tests/diff/graphs/rank_graph_set_test.cpp,
// bench/graph_ranks_scale_bench.cpp), made as bench_graph_diff makes its inputs: a sample graph
// repeated to a node count with every node renamed per copy. Per rank: its own device (every
// device index 0 becomes the rank's local device: annotations, literals, 'cuda:0' strings),
// rank parameters (integer arguments at `rank_params` spread positions written 32*rank + their
// value, as slice bounds of a sharded tensor are), and on one rank a planted constant.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"

namespace gparity::testing {

class RankGraphMaker {
 public:
  /// `sample`'s nodes (its output node last, once) repeated until `nodes` nodes.
  RankGraphMaker(const model::Graph& sample, std::size_t nodes, std::size_t rank_params) {
    template_.name = template_.intern(sample.str(sample.name));
    const std::size_t body = sample.nodes.size() - 1;
    const std::size_t copies = std::max<std::size_t>(1, (nodes - 1 + body - 1) / body);
    template_.nodes.reserve(copies * body + 1);
    for (std::size_t c = 0; c < copies; ++c) {
      const auto base = static_cast<model::NodeId>(template_.nodes.size());
      const std::string suffix = "_c" + std::to_string(c);
      for (std::size_t i = 0; i < body; ++i)
        template_.nodes.push_back(copy(sample, sample.nodes[i], base, suffix));
      if (c + 1 == copies) template_.nodes.push_back(copy(sample, sample.nodes.back(), base, suffix));
    }
    const std::size_t n = template_.nodes.size();
    for (std::size_t k = 1; k <= rank_params; ++k) {
      if (auto at = int_arg_from(n * k / (rank_params + 2))) params_.push_back(*at);
    }
    plant_ = int_arg_from(n / 2 + 7);
  }

  [[nodiscard]] const model::Graph& base() const noexcept { return template_; }
  [[nodiscard]] std::size_t rank_params() const noexcept { return params_.size(); }

  /// Rank `rank`'s graph on device `device`; `planted`: the planted constant's value there.
  [[nodiscard]] model::Graph rank_graph(std::int32_t rank, std::int32_t device, bool with_params,
                                        std::optional<std::int64_t> planted = {}) const {
    model::Graph g = template_;
    if (device != 0) {
      const model::StrId from = g.intern("cuda:0");
      const model::StrId to = g.intern("cuda:" + std::to_string(device));
      for (auto& n : g.nodes) {
        if (n.meta.device.index == 0) n.meta.device.index = device;
        for (auto& a : n.args) move_device(a, device, from, to);
        for (auto& k : n.kwargs) move_device(k.value, device, from, to);
      }
    }
    if (with_params) {
      for (const auto& p : params_) {
        auto& v = int_at(g, p);
        v.i += 32 * rank;
      }
    }
    if (planted && plant_) int_at(g, *plant_).i = *planted;
    return g;
  }

 private:
  /// An integer argument: node, argument, item (or -1).
  struct IntAt {
    std::size_t node = 0, arg = 0;
    int item = -1;
  };

  static model::Value& int_at(model::Graph& g, const IntAt& p) {
    auto& a = g.nodes[p.node].args[p.arg];
    return p.item < 0 ? a : a.items[static_cast<std::size_t>(p.item)];
  }

  /// The first integer > 1 among the arguments of an aten node at or after `from`.
  std::optional<IntAt> int_arg_from(std::size_t from) const {
    for (std::size_t i = from; i < template_.nodes.size(); ++i) {
      const auto& n = template_.nodes[i];
      if (template_.str(n.target).rfind("aten.", 0) != 0) continue;
      for (std::size_t a = 0; a < n.args.size(); ++a) {
        const auto& v = n.args[a];
        if (v.kind == model::ValueKind::Int && v.i > 1) return IntAt{i, a, -1};
        for (std::size_t j = 0; j < v.items.size(); ++j) {
          if (v.items[j].kind == model::ValueKind::Int && v.items[j].i > 1)
            return IntAt{i, a, static_cast<int>(j)};
        }
      }
    }
    return std::nullopt;
  }

  static void move_device(model::Value& v, std::int32_t device, model::StrId from, model::StrId to) {
    if (v.kind == model::ValueKind::Device && v.device.index == 0) v.device.index = device;
    if (v.kind == model::ValueKind::String && v.s == from) v.s = to;
    for (auto& item : v.items) move_device(item, device, from, to);
  }

  model::Value value(const model::Graph& src, const model::Value& v, model::NodeId base) {
    model::Value o = v;
    o.s = template_.intern(src.str(v.s));
    o.device.type = template_.intern(src.str(v.device.type));
    if (v.kind == model::ValueKind::Node) o.node = v.node + base;
    for (auto& item : o.items) item = value(src, item, base);
    return o;
  }

  model::Node copy(const model::Graph& src, const model::Node& n, model::NodeId base,
                   const std::string& suffix) {
    model::Node o = n;
    o.name = template_.intern(std::string(src.str(n.name)) + suffix);
    o.target = n.kind == model::NodeKind::Placeholder ? o.name : template_.intern(src.str(n.target));
    for (auto& a : o.args) a = value(src, a, base);
    for (auto& kw : o.kwargs) {
      kw.name = template_.intern(src.str(kw.name));
      kw.value = value(src, kw.value, base);
    }
    o.meta.device.type = template_.intern(src.str(n.meta.device.type));
    o.meta.sym = template_.intern(src.str(n.meta.sym));
    for (auto& d : o.meta.sizes) d.expr = template_.intern(src.str(d.expr));
    for (auto& d : o.meta.strides) d.expr = template_.intern(src.str(d.expr));
    o.source.file = template_.intern(src.str(n.source.file));
    o.source.function = template_.intern(src.str(n.source.function));
    o.source.code = template_.intern(src.str(n.source.code));
    o.module_path = template_.intern(src.str(n.module_path));
    o.comment = template_.intern(src.str(n.comment));
    return o;
  }

  model::Graph template_;
  std::vector<IntAt> params_;
  std::optional<IntAt> plant_;
};

}  // namespace gparity::testing
