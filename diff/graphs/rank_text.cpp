#include "diff/graphs/rank_text.hpp"

#include <algorithm>
#include <cstring>

#include "core/model/graph/fx_text.hpp"
#include "diff/graphs/rank_graph_set.hpp"
#include "diff/graphs/rank_shared.hpp"

namespace gparity::diff {

using model::FxStatementKind;
using model::Graph;
using model::Node;
using model::NodeId;

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/// Offsets of the digits of `cuda:<local>` and `index=<local>` in `text` (whole digit runs).
std::vector<std::uint32_t> local_spans(std::string_view text, std::string_view digits) {
  std::vector<std::uint32_t> out;
  for (const std::string_view prefix : {std::string_view("cuda:"), std::string_view("index=")}) {
    for (std::size_t p = text.find(prefix); p != std::string_view::npos; p = text.find(prefix, p + 1)) {
      const std::size_t d = p + prefix.size();
      std::size_t e = d;
      while (e < text.size() && is_digit(text[e])) ++e;
      if (text.substr(d, e - d) == digits) out.push_back(static_cast<std::uint32_t>(d));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Every device index the graph names (annotations, device literals, 'cuda:k' strings).
void device_indices(const Graph& g, const model::Value& v, std::vector<std::int32_t>& out) {
  if (v.kind == model::ValueKind::Device && v.device.index >= 0) out.push_back(v.device.index);
  if (const auto k = device_index_of(g, v)) out.push_back(*k);
  for (const auto& item : v.items) device_indices(g, item, out);
}

std::vector<std::int32_t> foreign_devices(const Graph& g, std::optional<std::int32_t> local) {
  std::vector<std::int32_t> all;
  for (const auto& n : g.nodes) {
    if (n.meta.device.index >= 0) all.push_back(n.meta.device.index);
    for (const auto& a : n.args) device_indices(g, a, all);
    for (const auto& k : n.kwargs) device_indices(g, k.value, all);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (local) all.erase(std::remove(all.begin(), all.end(), *local), all.end());
  return all;
}

/// Offset after `lines` whole lines of `text` from `at` (the rest of it when `last`).
std::optional<std::size_t> lines_end(std::string_view text, std::size_t at, std::uint32_t lines, bool last) {
  if (last) return text.size();
  for (std::uint32_t k = 0; k < lines; ++k) {
    const void* nl = std::memchr(text.data() + at, '\n', text.size() - at);
    if (nl == nullptr) return std::nullopt;
    at = static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
  }
  return at;
}

/// Whole lines holding one comment that sets no source location (`# graph id: 1404...`), then
/// blank lines: the reader takes nothing from it (fx_statement.cpp, source_comment).
bool inert_comment(std::string_view lines) {
  bool first = true;
  while (!lines.empty()) {
    const std::size_t nl = lines.find('\n');
    std::string_view line = lines.substr(0, nl);
    lines = nl == std::string_view::npos ? std::string_view() : lines.substr(nl + 1);
    const std::size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) continue;
    if (!first || line[b] != '#') return false;
    first = false;
    std::string_view c = line.substr(b + 1);
    if (c.starts_with(' ')) c.remove_prefix(1);
    if (c.starts_with("File: ") || c.starts_with("No stacktrace found")) return false;
  }
  return !first;
}

}  // namespace

std::unique_ptr<RankPayloadTemplate> RankPayloadTemplate::make(std::string text, std::int64_t first_line,
                                                               const Graph& graph,
                                                               std::optional<std::int32_t> local) {
  auto cut = model::fx_statements(text, graph, first_line);
  if (!cut) return nullptr;
  std::unique_ptr<RankPayloadTemplate> t(new RankPayloadTemplate());
  t->text_ = std::move(text);
  t->first_line_ = first_line;
  t->graph_ = &graph;
  t->local_ = local;
  t->foreign_ = foreign_devices(graph, local);
  if (local) {
    t->local_digits_ = std::to_string(*local);
    t->spans_ = local_spans(t->text_, t->local_digits_);
  }
  for (std::size_t i = 0; i < graph.nodes.size(); ++i)
    t->names_.insert(graph.node_name(static_cast<NodeId>(i)), static_cast<NodeId>(i));

  // A stand-in for any other rank's device: an index the graph does not name.
  std::int32_t other = 0;
  while ((local && other == *local) || std::binary_search(t->foreign_.begin(), t->foreign_.end(), other))
    ++other;
  const rank_shared::Locals l = rank_shared::locals(local, other);
  // The base's text as a rank on `other` would write it, parsed whole: the proof of which
  // statements may be taken with their spans rewritten.
  std::optional<Graph> rewritten;
  if (local && !t->spans_.empty()) {
    std::string moved;
    std::size_t from = 0;
    const std::string digits = std::to_string(other);
    for (const std::uint32_t s : t->spans_) {
      moved.append(t->text_, from, s - from);
      moved += digits;
      from = s + t->local_digits_.size();
    }
    moved.append(t->text_, from);
    auto parsed = model::read_fx_text(moved, "rank payload template", first_line);
    if (parsed.graph && parsed.problems.empty() && parsed.graph->nodes.size() == graph.nodes.size() &&
        parsed.graph->str(parsed.graph->name) == graph.str(graph.name))
      rewritten = std::move(parsed.graph);
  }
  const rank_shared::SharedTest same(graph, graph, l);
  std::optional<rank_shared::SharedTest> shared;
  if (rewritten) shared.emplace(graph, *rewritten, l);
  Graph remapped;  // the base's nodes remapped, one at a time (strings pile up, nodes do not)
  auto span = t->spans_.begin();
  for (std::size_t i = 0; i < cut->size(); ++i) {
    Statement s;
    s.at = (*cut)[i];
    while (span != t->spans_.end() && *span < s.at.begin) ++span;
    s.spans = span != t->spans_.end() && *span < s.at.end;
    // Byte for byte, a statement gives the base's nodes as they are: shared when they name no
    // device the remapping touches. Rewritten, it must give them remapped, and shared.
    bool identical = true;
    bool rewrite = s.spans && rewritten.has_value() && s.at.kind != FxStatementKind::Comment &&
                   s.at.kind != FxStatementKind::Rename;
    for (NodeId n = s.at.node_begin; n < s.at.node_end; ++n) {
      const Node& base = graph.nodes[n];
      identical = identical && same.node(base, base);
      if (!rewrite) continue;
      const Node want = copy_node(graph, base, remapped, local, other, [](NodeId x) { return x; });
      rewrite = model::nodes_equal(remapped, want, *rewritten, rewritten->nodes[n]) &&
                shared->node(base, rewritten->nodes[n]);
    }
    s.identical = identical;
    s.rewrite = rewrite;
    t->statements_.push_back(s);
  }
  return t;
}

std::size_t RankPayloadTemplate::rewritable() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(statements_.begin(), statements_.end(), [](const Statement& s) { return s.rewrite; }));
}

std::size_t RankPayloadTemplate::parsable() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(statements_.begin(), statements_.end(), [](const Statement& s) { return s.at.alone; }));
}

// The offset after statement `s` when `text` from `at` is the base's statement with every local
// span written `digits` (the statement byte for byte when `digits` is empty).
std::optional<std::size_t> RankPayloadTemplate::match(const Statement& s, std::string_view text,
                                                      std::size_t at, std::string_view digits) const {
  const auto same = [&](std::size_t from, std::size_t n) {
    if (text.size() - at < n || std::memcmp(text.data() + at, text_.data() + from, n) != 0) return false;
    at += n;
    return true;
  };
  std::size_t from = s.at.begin;
  if (!digits.empty() && s.spans) {
    for (auto it = std::lower_bound(spans_.begin(), spans_.end(), s.at.begin);
         it != spans_.end() && *it < s.at.end; ++it) {
      if (!same(from, *it - from)) return std::nullopt;
      if (text.substr(at, digits.size()) != digits) return std::nullopt;
      at += digits.size();
      if (at < text.size() && is_digit(text[at])) return std::nullopt;
      from = *it + local_digits_.size();
    }
  }
  if (!same(from, s.at.end - from)) return std::nullopt;
  return at;
}

std::optional<RankPayloadTemplate::Delta> RankPayloadTemplate::delta(
    std::string_view text, std::int64_t first_line, std::optional<std::int32_t> local) const {
  if (first_line != first_line_) return std::nullopt;
  const bool remap = local_ && local && *local_ != *local;
  if (remap && std::binary_search(foreign_.begin(), foreign_.end(), *local)) return std::nullopt;
  const std::string digits = remap ? std::to_string(*local) : std::string();
  const rank_shared::Locals l = rank_shared::locals(local_, local);
  const Graph& g = *graph_;
  Delta d;
  d.patches.name = d.patches.intern(g.str(g.name));
  const std::size_t limit = g.nodes.size() / 4;
  std::size_t at = 0;
  for (std::size_t i = 0; i < statements_.size(); ++i) {
    const Statement& s = statements_[i];
    // Rewritten where make() proved it gives the base's nodes remapped and shared; byte for byte
    // where the base's nodes as they are are shared (any, when devices are not remapped).
    std::optional<std::size_t> end;
    if (remap && s.rewrite) end = match(s, text, at, digits);
    if (!end && (!remap || s.identical)) end = match(s, text, at, {});
    if (end) {
      at = *end;
      continue;
    }
    end = lines_end(text, at, s.at.lines, i + 1 == statements_.size());
    if (!end) return std::nullopt;
    const std::string_view differing = text.substr(at, *end - at);
    // A comment that sets no source location, here as in the base (an object id): nothing to read.
    if (s.at.kind == FxStatementKind::Comment && inert_comment(differing) &&
        inert_comment(std::string_view(text_).substr(s.at.begin, s.at.end - s.at.begin))) {
      at = *end;
      continue;
    }
    if (!s.at.alone) return std::nullopt;
    const NodeId p = s.at.node_begin;
    model::FxStatementContext ctx;
    ctx.graph = &g;
    ctx.names = &names_;
    ctx.at = p;
    ctx.source = g.nodes[p].source;
    auto node = model::parse_fx_node_statement(differing, first_line + s.at.line - 1, ctx, d.patches);
    if (!node || d.patches.str(node->name) != g.node_name(p)) return std::nullopt;
    if (!rank_shared::SharedTest(g, d.patches, l).node(g.nodes[p], *node)) {
      d.patched.push_back(p);
      d.patches.nodes.push_back(std::move(*node));
      if (d.patched.size() > limit) return std::nullopt;
    }
    at = *end;
  }
  if (at != text.size()) return std::nullopt;
  return d;
}

}  // namespace gparity::diff
