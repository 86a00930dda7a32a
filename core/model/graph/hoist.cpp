#include "core/model/graph/hoist.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace gparity::model {

std::string_view hoist_change_kind_name(HoistChangeKind k) noexcept {
  switch (k) {
    case HoistChangeKind::DeviceLiteral: return "device";
    case HoistChangeKind::Annotation: return "annotation";
    case HoistChangeKind::ProcessGroup: return "group";
  }
  return "device";
}

std::string_view hoist_problem_kind_name(HoistProblemKind k) noexcept {
  switch (k) {
    case HoistProblemKind::ForeignDevice: return "foreign-device";
    case HoistProblemKind::UnknownGroup: return "group";
  }
  return "foreign-device";
}

std::size_t HoistResult::count(HoistChangeKind k) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(changes.begin(), changes.end(), [k](const HoistChange& c) { return c.kind == k; }));
}

namespace {

// Device types whose index names a per-rank accelerator. cpu and meta have no per-rank index.
constexpr std::array<std::string_view, 7> kAccelerators = {"cuda", "xpu", "hpu",          "npu",
                                                           "mtia", "mps", "privateuseone"};

bool is_accelerator(std::string_view type) noexcept {
  return std::find(kAccelerators.begin(), kAccelerators.end(), type) != kAccelerators.end();
}

/// "cuda:3" -> 3; -1 for anything that is not an accelerator device with an index.
std::int32_t device_string_index(std::string_view s) {
  const auto colon = s.find(':');
  if (colon == std::string_view::npos || !is_accelerator(s.substr(0, colon))) return -1;
  std::int32_t k = -1;
  const auto* end = s.data() + s.size();
  const auto r = std::from_chars(s.data() + colon + 1, end, k);
  return r.ec == std::errc() && r.ptr == end ? k : -1;
}

bool ident_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// Every "<accelerator>:<from>" in verbatim text (annotation or opaque expression) written with
/// index `to`; the count of replacements, and of other indices seen, through the out-params.
std::string replace_device_text(std::string_view text, std::int32_t from, std::int32_t to, int& replaced,
                                std::vector<std::string>& foreign) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = text.find(':', i);
    if (j == std::string_view::npos) break;
    std::size_t b = j;
    while (b > i && ident_char(text[b - 1])) --b;
    std::size_t e = j + 1;
    while (e < text.size() && text[e] >= '0' && text[e] <= '9') ++e;
    const bool bounded = (b == 0 || !ident_char(text[b - 1])) && (e == text.size() || !ident_char(text[e]));
    const auto index = bounded && e > j + 1 ? device_string_index(text.substr(b, e - b)) : -1;
    out.append(text.substr(i, j + 1 - i));
    i = j + 1;
    if (index < 0) continue;
    if (index == from) {
      out += std::to_string(to);
      ++replaced;
    } else {
      out.append(text.substr(j + 1, e - j - 1));
      if (index != to) foreign.emplace_back(text.substr(b, e - b));
    }
    i = e;
  }
  out.append(text.substr(i));
  return out;
}

std::string device_text(const Graph& g, const Device& d) {
  return std::string(g.str(d.type)) + (d.index >= 0 ? ":" + std::to_string(d.index) : "");
}

class Hoister {
 public:
  Hoister(const HoistOptions& o, HoistResult& r) : o_(o), r_(r) {}

  void graph(Graph& g, const std::string& path) {
    for (auto& n : g.nodes) node(g, n, path);
    for (auto& s : g.subgraphs) {
      const std::string name(s.str(s.name));
      graph(s, path.empty() ? name : path + "." + name);
    }
  }

 private:
  void node(Graph& g, Node& n, const std::string& path) {
    HoistChange base;
    base.graph = path;
    base.node = std::string(g.str(n.name));
    base.target = std::string(g.str(n.target));
    if (n.source.known())
      base.source = std::string(g.str(n.source.file)) + ":" + std::to_string(n.source.line);
    base_ = &base;
    const int pg = process_group_arg(g, n);
    for (std::size_t k = 0; k < n.args.size(); ++k) {
      const std::string field = "args[" + std::to_string(k) + "]";
      if (static_cast<int>(k) == pg) {
        group(g, n.args[k], field);
      } else {
        value(g, n.args[k], field);
      }
    }
    for (auto& kw : n.kwargs) {
      const std::string field = "kwargs." + std::string(g.str(kw.name));
      if (g.str(kw.name) == "group_name" && kw.value.kind == ValueKind::String &&
          is_functional_collective(g.str(n.target))) {
        group(g, kw.value, field);
      } else {
        value(g, kw.value, field);
      }
    }
    meta(g, n.meta);
    base_ = nullptr;
  }

  void change(HoistChangeKind kind, const std::string& field, std::string from, std::string to) {
    HoistChange c = *base_;
    c.kind = kind;
    c.field = field;
    c.from = std::move(from);
    c.to = std::move(to);
    r_.changes.push_back(std::move(c));
  }

  void problem(HoistProblemKind kind, const std::string& field, std::string text, std::string message) {
    r_.unresolved.push_back(
        {kind, base_->graph, base_->node, base_->target, field, std::move(text), std::move(message)});
  }

  void foreign(const std::string& field, const std::string& text) {
    problem(HoistProblemKind::ForeignDevice, field, text,
            "device index is not the source rank's (" + std::to_string(o_.source_device) +
                "): left as it is; the graph may rely on another rank's device");
  }

  /// Remaps a device index; false when it is foreign (neither source nor target).
  [[nodiscard]] bool remap_index(std::int32_t& index) const {
    if (index == o_.source_device) {
      index = o_.target_device;
      return true;
    }
    return index == o_.target_device;
  }

  void value(Graph& g, Value& v, const std::string& field) {
    switch (v.kind) {
      case ValueKind::List:
      case ValueKind::Tuple:
        for (std::size_t i = 0; i < v.items.size(); ++i)
          value(g, v.items[i], field + "[" + std::to_string(i) + "]");
        return;
      case ValueKind::Device: {
        if (v.device.index < 0 || !is_accelerator(g.str(v.device.type))) return;
        const auto before = device_text(g, v.device);
        if (!remap_index(v.device.index)) return foreign(field, before);
        if (before != device_text(g, v.device))
          change(HoistChangeKind::DeviceLiteral, field, before, device_text(g, v.device));
        return;
      }
      case ValueKind::String: {
        const std::string before(g.str(v.s));
        const auto was = device_string_index(before);
        if (was < 0) return;
        auto index = was;
        if (!remap_index(index)) return foreign(field, "'" + before + "'");
        if (index == was) return;
        const auto after = before.substr(0, before.find(':') + 1) + std::to_string(index);
        v.s = g.intern(after);
        change(HoistChangeKind::DeviceLiteral, field, "'" + before + "'", "'" + after + "'");
        return;
      }
      case ValueKind::Opaque: verbatim(g, v.s, field, HoistChangeKind::DeviceLiteral); return;
      default: return;
    }
  }

  void verbatim(Graph& g, StrId& s, const std::string& field, HoistChangeKind kind) {
    int replaced = 0;
    std::vector<std::string> others;
    const std::string before(g.str(s));
    auto after = replace_device_text(before, o_.source_device, o_.target_device, replaced, others);
    for (const auto& f : others) foreign(field, f);
    if (replaced == 0) return;
    s = g.intern(after);
    change(kind, field, before, std::move(after));
  }

  void meta(Graph& g, TensorMeta& m) {
    if (m.kind == TensorMeta::Kind::Other) return verbatim(g, m.sym, "meta", HoistChangeKind::Annotation);
    if (m.kind != TensorMeta::Kind::Tensor || m.device.index < 0 || !is_accelerator(g.str(m.device.type)))
      return;
    const auto before = device_text(g, m.device);
    if (!remap_index(m.device.index)) return foreign("meta.device", before);
    if (before != device_text(g, m.device))
      change(HoistChangeKind::Annotation, "meta.device", before, device_text(g, m.device));
  }

  void group(Graph& g, Value& v, const std::string& field) {
    if (v.kind != ValueKind::String) return;
    const std::string name(g.str(v.s));
    if (o_.source_rank == o_.target_rank) return;
    if (o_.groups == nullptr || o_.groups->empty()) {
      return problem(HoistProblemKind::UnknownGroup, field, name,
                     "no process-group table: give the run's Flight Recorder dumps or --group NAME=RANKS");
    }
    const auto res = o_.groups->counterpart(name, o_.target_rank);
    if (res.group == nullptr) return problem(HoistProblemKind::UnknownGroup, field, name, res.problem);
    if (res.group->name == name) return;
    v.s = g.intern(res.group->name);
    change(HoistChangeKind::ProcessGroup, field, "'" + name + "'", "'" + res.group->name + "'");
  }

  const HoistOptions& o_;
  HoistResult& r_;
  const HoistChange* base_ = nullptr;
};

}  // namespace

HoistResult hoist_graph(const Graph& g, const HoistOptions& options) {
  HoistResult r{g, {}, {}};
  Hoister(options, r).graph(r.graph, "");
  return r;
}

}  // namespace gparity::model
