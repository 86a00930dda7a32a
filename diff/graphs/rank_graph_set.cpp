#include "diff/graphs/rank_graph_set.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "core/model/graph/fingerprint_parts.hpp"
#include "diff/graphs/rank_shared.hpp"

namespace gparity::diff {

using model::Graph;
using model::Node;
using model::NodeId;
using model::TensorMeta;
using model::Value;
using model::ValueKind;

namespace {

using rank_shared::locals;
using rank_shared::Locals;
using rank_shared::SharedTest;

model::Normalization fingerprint_norm(const GraphNormalization& norm, std::optional<std::int32_t> local) {
  model::Normalization n;
  if (norm.map_local_device) n.local_device = local;
  n.renumber_symbols = norm.renumber_symbols;
  n.ignore_process_groups = norm.ignore_process_groups;
  n.ignore_node_names = true;
  return n;
}

bool refs_backward(const Graph& g) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    bool ok = true;
    const auto check = [&](NodeId r) { ok = ok && r < i; };
    for (const auto& a : g.nodes[i].args) model::for_each_ref(a, check);
    for (const auto& k : g.nodes[i].kwargs) model::for_each_ref(k.value, check);
    if (!ok) return false;
  }
  return true;
}

bool distinct_names(const Graph& g) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(g.nodes.size());
  for (const auto& n : g.nodes) {
    if (!seen.insert(g.str(n.name)).second) return false;
  }
  return true;
}

}  // namespace

namespace {

Value copy_value(const Graph& from, const Value& v, Graph& to, const Locals& l,
                 const std::function<NodeId(NodeId)>& ref) {
  Value o;
  o.kind = v.kind;
  o.i = v.i;
  o.node = v.kind == ValueKind::Node ? ref(v.node) : v.node;
  o.device.type = to.intern(from.str(v.device.type));
  o.device.index = v.device.index;
  if (v.kind == ValueKind::Device && l.remap && v.device.index == l.a) o.device.index = l.b;
  const auto s = from.str(v.s);
  o.s = to.intern(v.kind == ValueKind::String && l.remap && s == l.a_text ? std::string_view(l.b_text) : s);
  o.items.reserve(v.items.size());
  for (const auto& item : v.items) o.items.push_back(copy_value(from, item, to, l, ref));
  return o;
}

TensorMeta copy_meta(const Graph& from, const TensorMeta& m, Graph& to, const Locals& l) {
  TensorMeta o = m;
  for (auto& d : o.sizes) d.expr = to.intern(from.str(d.expr));
  for (auto& d : o.strides) d.expr = to.intern(from.str(d.expr));
  o.device.type = to.intern(from.str(m.device.type));
  if (l.remap && m.device.index == l.a) o.device.index = l.b;
  o.sym = to.intern(from.str(m.sym));
  return o;
}

}  // namespace

Node copy_node(const Graph& from, const Node& n, Graph& to, std::optional<std::int32_t> from_local,
               std::optional<std::int32_t> to_local, const std::function<NodeId(NodeId)>& ref) {
  const Locals l = locals(from_local, to_local);
  Node o;
  o.name = to.intern(from.str(n.name));
  o.kind = n.kind;
  o.target = to.intern(from.str(n.target));
  o.args.reserve(n.args.size());
  for (const auto& a : n.args) o.args.push_back(copy_value(from, a, to, l, ref));
  o.kwargs.reserve(n.kwargs.size());
  for (const auto& k : n.kwargs)
    o.kwargs.push_back({to.intern(from.str(k.name)), copy_value(from, k.value, to, l, ref)});
  o.meta = copy_meta(from, n.meta, to, l);
  o.source.file = to.intern(from.str(n.source.file));
  o.source.line = n.source.line;
  o.source.function = to.intern(from.str(n.source.function));
  o.source.code = to.intern(from.str(n.source.code));
  o.module_path = to.intern(from.str(n.module_path));
  o.comment = to.intern(from.str(n.comment));
  o.line = n.line;
  return o;
}

RankGraphSet::RankGraphSet(GraphNormalization norm, std::int32_t ranks_per_node)
    : norm_(std::move(norm)), ranks_per_node_(ranks_per_node) {}

RankGraphSet::~RankGraphSet() = default;

std::optional<std::int32_t> RankGraphSet::local_of(std::int32_t rank) const noexcept {
  if (!norm_.map_local_device) return std::nullopt;
  return ranks_per_node_ > 0 ? rank % ranks_per_node_ : rank;
}

std::unique_ptr<RankGraphSet::Base> RankGraphSet::make_base(Graph graph,
                                                            std::optional<std::int32_t> local) const {
  auto b = std::make_unique<Base>();
  b->graph = std::move(graph);
  b->local = local;
  const Graph& g = b->graph;
  if (!norm_.renumber_symbols && g.subgraphs.empty()) {
    const auto fn = fingerprint_norm(norm_, local);
    model::fingerprint_header_bytes(g, b->header_bytes);
    b->node_offsets.reserve(g.nodes.size() + 1);
    b->node_offsets.push_back(0);
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      model::fingerprint_node_bytes(g, static_cast<NodeId>(i), fn, b->node_bytes);
      b->node_offsets.push_back(b->node_bytes.size());
    }
  }
  b->refs_backward = refs_backward(g);
  b->distinct_names = distinct_names(g);
  return b;
}

namespace {

constexpr std::size_t kBasesTried = 4;

/// The positions where `g` differs from `base` (nullopt: not a delta of it).
std::optional<std::vector<NodeId>> patched_positions(const RankGraphSet::Base& base, const Graph& g,
                                                     const Locals& l) {
  const Graph& a = base.graph;
  if (a.nodes.size() != g.nodes.size() || !a.subgraphs.empty() || !g.subgraphs.empty() ||
      a.str(a.name) != g.str(g.name) || base.node_offsets.size() != a.nodes.size() + 1) {
    return std::nullopt;
  }
  const SharedTest test(a, g, l);
  std::vector<NodeId> out;
  const std::size_t limit = a.nodes.size() / 4;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    if (test.node(a.nodes[i], g.nodes[i])) continue;
    out.push_back(static_cast<NodeId>(i));
    if (out.size() > limit) return std::nullopt;
  }
  return out;
}

}  // namespace

std::uint64_t RankGraphSet::patched_fingerprint(const Member& m) const {
  const Base& base = *m.base;
  const auto fn = fingerprint_norm(norm_, m.local);
  // Shared nodes hash as the base's do; patched nodes' bytes depend on them alone.
  std::string patched_bytes;
  std::vector<std::size_t> ends;
  for (std::size_t k = 0; k < m.patched.size(); ++k) {
    model::fingerprint_node_bytes(m.patches, static_cast<NodeId>(k), fn, patched_bytes);
    ends.push_back(patched_bytes.size());
  }
  std::vector<std::string_view> parts{base.header_bytes};
  const std::string_view all(base.node_bytes);
  std::size_t from = 0;
  for (std::size_t k = 0; k < m.patched.size(); ++k) {
    const std::size_t p = m.patched[k];
    parts.push_back(all.substr(base.node_offsets[from], base.node_offsets[p] - base.node_offsets[from]));
    const std::size_t b0 = k == 0 ? 0 : ends[k - 1];
    parts.push_back(std::string_view(patched_bytes).substr(b0, ends[k] - b0));
    from = p + 1;
  }
  parts.push_back(all.substr(base.node_offsets[from]));
  return model::fingerprint_of_parts(parts);
}

void RankGraphSet::push(Member m) {
  std::lock_guard lock(mutex_);
  members_.push_back(std::move(m));
}

void RankGraphSet::add(std::int32_t rank, const Graph& graph, const PayloadText* text) {
  const auto local = local_of(rank);
  const auto fn = fingerprint_norm(norm_, local);
  std::vector<const Base*> tried;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < bases_.size() && i < kBasesTried; ++i) tried.push_back(bases_[i].get());
  }
  Member m;
  m.rank = rank;
  m.local = local;
  for (const Base* base : tried) {
    if (norm_.renumber_symbols) break;
    const Locals l = locals(base->local, local);
    auto positions = patched_positions(*base, graph, l);
    if (!positions) continue;
    m.base = base;
    m.patched = std::move(*positions);
    m.patches.name = m.patches.intern(graph.str(graph.name));
    m.patches.nodes.reserve(m.patched.size());
    for (const NodeId p : m.patched) {
      m.patches.nodes.push_back(copy_node(graph, graph.nodes[p], m.patches, std::nullopt, std::nullopt,
                                          [](NodeId r) { return r; }));
    }
    m.fingerprint = patched_fingerprint(m);
    push(std::move(m));
    return;
  }
  // Not a delta of any base tried: a base of its own, which keeps its payload text when it is
  // the first (later ranks are then read against it: add_text).
  m.fingerprint = model::fingerprint(graph, fn);
  auto base = make_base(graph, local);
  if (text != nullptr && tried.empty() && !base->node_offsets.empty())
    base->text = RankPayloadTemplate::make(std::string(text->text), text->first_line, base->graph, local);
  m.base = base.get();
  m.is_base = true;
  std::lock_guard lock(mutex_);
  bases_.push_back(std::move(base));
  members_.push_back(std::move(m));
}

bool RankGraphSet::add_text(std::int32_t rank, const PayloadText& text) {
  if (norm_.renumber_symbols) return false;
  const Base* base = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!bases_.empty()) base = bases_.front().get();
  }
  if (base == nullptr || !base->text) return false;
  Member m;
  m.rank = rank;
  m.local = local_of(rank);
  auto d = base->text->delta(text.text, text.first_line, m.local);
  if (!d) return false;
  m.base = base;
  m.patched = std::move(d->patched);
  m.patches = std::move(d->patches);
  m.from_text = true;
  m.fingerprint = patched_fingerprint(m);
  push(std::move(m));
  return true;
}

std::vector<const RankGraphSet::Member*> RankGraphSet::members() const {
  std::lock_guard lock(mutex_);
  std::vector<const Member*> out;
  for (const auto& m : members_) out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const Member* x, const Member* y) { return x->rank < y->rank; });
  return out;
}

Graph RankGraphSet::materialize(const Member& m) const {
  Graph g = m.base->graph;
  if (m.is_base) return g;
  const auto same = [](NodeId r) { return r; };
  const Locals l = locals(m.base->local, m.local);
  std::size_t k = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (k < m.patched.size() && m.patched[k] == i) {
      g.nodes[i] = copy_node(m.patches, m.patches.nodes[k], g, std::nullopt, std::nullopt, same);
      ++k;
    } else if (l.remap) {
      g.nodes[i] = copy_node(m.base->graph, m.base->graph.nodes[i], g, m.base->local, m.local, same);
    }
  }
  return g;
}

std::size_t RankGraphSet::base_count() const {
  std::lock_guard lock(mutex_);
  return bases_.size();
}

std::size_t RankGraphSet::patched_nodes() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& m : members_) n += m.patched.size();
  return n;
}

}  // namespace gparity::diff
