#include "diff/graphs/graph_normalize.hpp"

#include <xxhash.h>

#include <algorithm>
#include <charconv>

namespace gparity::diff {

using model::Graph;
using model::Node;
using model::NodeId;
using model::TensorMeta;
using model::Value;
using model::ValueKind;

std::vector<std::string> normalization_names(const GraphNormalization& n) {
  std::vector<std::string> out;
  if (n.map_local_device) out.emplace_back("local-device");
  if (n.renumber_symbols) out.emplace_back("symbols");
  if (n.ignore_process_groups) out.emplace_back("process-groups");
  if (!n.strip_path_prefixes.empty()) out.emplace_back("source-paths");
  if (n.ignore_node_names) out.emplace_back("node-names");
  out.emplace_back("release-lists");
  return out;
}

namespace {

std::optional<std::int32_t> cuda_string_index(std::string_view s) {
  if (!s.starts_with("cuda:")) return std::nullopt;
  std::int32_t k = 0;
  const auto* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data() + 5, end, k);
  if (ec != std::errc() || p != end) return std::nullopt;
  return k;
}

std::string dims_text(const Graph& g, const std::vector<model::Dim>& ds) {
  std::string out = "[";
  for (std::size_t i = 0; i < ds.size(); ++i) {
    if (i > 0) out += ", ";
    out += ds[i].is_symbolic() ? std::string(g.str(ds[i].expr)) : std::to_string(ds[i].value);
  }
  return out + "]";
}

// Streams words into one 64-bit hash; strings go through XXH3 so their content counts.
class Mix {
 public:
  void word(std::uint64_t v) noexcept {
    h_ ^= v + 0x9E3779B97F4A7C15ULL + (h_ << 6) + (h_ >> 2);
    h_ *= 0xBF58476D1CE4E5B9ULL;
  }
  void text(std::string_view s) noexcept { word(XXH3_64bits(s.data(), s.size())); }
  [[nodiscard]] std::uint64_t value() const noexcept { return h_ ^ (h_ >> 31); }

 private:
  std::uint64_t h_ = 0x243F6A8885A308D3ULL;
};

}  // namespace

std::optional<std::int32_t> device_index_of(const Graph& g, const Value& v) {
  if (v.kind == ValueKind::Device && v.device.index >= 0 && g.str(v.device.type) == "cuda")
    return v.device.index;
  if (v.kind == ValueKind::String) return cuda_string_index(g.str(v.s));
  return std::nullopt;
}

// ---- NormalizedGraph ---------------------------------------------------------------------------

namespace {

class ContentHasher {
 public:
  ContentHasher(const NormalizedGraph& ng, Mix& mix) : ng_(ng), g_(ng.graph()), mix_(mix) {}

  void device(const model::Device& d) {
    mix_.text(g_.str(d.type));
    mix_.word(ng_.is_local(d.index) ? 0xF00DULL << 32 : static_cast<std::uint64_t>(d.index));
  }

  void value(const Value& v) {
    mix_.word(static_cast<std::uint64_t>(v.kind));
    switch (v.kind) {
      case ValueKind::None:
      case ValueKind::Node: break;  // references: only their presence (the aligner adds identity)
      case ValueKind::Bool:
      case ValueKind::Int:
      case ValueKind::DType: mix_.word(static_cast<std::uint64_t>(v.i)); break;
      case ValueKind::Device: device(v.device); break;
      case ValueKind::Symbolic: mix_.text(ng_.symbolic(g_.str(v.s))); break;
      case ValueKind::String:
        if (const auto k = cuda_string_index(g_.str(v.s)); k && ng_.is_local(*k)) {
          mix_.text("cuda:local");
        } else {
          mix_.text(g_.str(v.s));
        }
        break;
      default: mix_.text(g_.str(v.s)); break;
    }
    mix_.word(v.items.size());
    for (const auto& item : v.items) value(item);
  }

  void dims(const std::vector<model::Dim>& ds) {
    mix_.word(ds.size());
    for (const auto& d : ds)
      d.is_symbolic() ? mix_.text(ng_.symbolic(g_.str(d.expr)))
                      : mix_.word(static_cast<std::uint64_t>(d.value));
  }

  void meta(const TensorMeta& m) {
    mix_.word(static_cast<std::uint64_t>(m.kind));
    if (m.kind == TensorMeta::Kind::Tensor) {
      mix_.word(static_cast<std::uint64_t>(m.dtype));
      dims(m.sizes);
      dims(m.strides);
      device(m.device);
    } else if (m.kind != TensorMeta::Kind::None) {
      mix_.text(ng_.localized(ng_.symbolic(g_.str(m.sym))));
    }
  }

  void node(const Node& n) {
    mix_.word(static_cast<std::uint64_t>(n.kind));
    const bool placeholder = n.kind == model::NodeKind::Placeholder;
    if (placeholder && n.meta.kind == TensorMeta::Kind::Sym) {
      mix_.text(ng_.symbolic(g_.str(n.target)));
    } else if (!placeholder || !ng_.norm().ignore_node_names) {
      mix_.text(g_.str(n.target));  // a placeholder's target is its name
    }
    mix_.word(n.args.size());
    for (std::size_t i = 0; i < n.args.size(); ++i) {
      if (detail::is_pg_arg(ng_, n, static_cast<int>(i))) {
        mix_.text("pg");
      } else {
        value(n.args[i]);
      }
    }
    // kwargs are order-insensitive: sum of per-kwarg hashes.
    std::uint64_t kw = 0;
    for (const auto& k : n.kwargs) {
      Mix one;
      ContentHasher h(ng_, one);
      one.text(g_.str(k.name));
      if (!(ng_.norm().ignore_process_groups && g_.str(k.name) == "group_name")) h.value(k.value);
      kw += one.value();
    }
    mix_.word(kw);
    meta(n.meta);
  }

 private:
  const NormalizedGraph& ng_;
  const Graph& g_;
  Mix& mix_;
};

}  // namespace

NormalizedGraph::NormalizedGraph(const Graph& g, const GraphNormalization& norm,
                                 std::optional<std::int32_t> local_device)
    : g_(g), norm_(norm), local_(local_device) {
  if (norm_.renumber_symbols) {
    // First appearance in graph order: placeholders first, as FX prints them.
    const auto note = [&](std::string_view expr) {
      for (const auto sym : model::symbols_in(expr)) {
        if (std::find(symbols_.begin(), symbols_.end(), sym) == symbols_.end()) symbols_.emplace_back(sym);
      }
    };
    for (const auto& n : g.nodes) {
      if (n.kind == model::NodeKind::Placeholder && n.meta.kind == TensorMeta::Kind::Sym)
        note(g.str(n.target));
      if (n.meta.kind == TensorMeta::Kind::Sym) note(g.str(n.meta.sym));
      for (const auto& d : n.meta.sizes) {
        if (d.is_symbolic()) note(g.str(d.expr));
      }
    }
  }
  content_.resize(g.nodes.size());
  op_.resize(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Mix mix;
    ContentHasher(*this, mix).node(g.nodes[i]);
    content_[i] = mix.value();
    Mix op;
    op.word(static_cast<std::uint64_t>(g.nodes[i].kind));
    op.text(g.str(g.nodes[i].target));
    op_[i] = op.value();
  }
}

std::string NormalizedGraph::localized(std::string_view text) const {
  if (!norm_.map_local_device || !local_) return std::string(text);
  const std::string from = "cuda:" + std::to_string(*local_);
  std::string out;
  std::size_t last = 0;
  for (auto at = text.find(from); at != std::string_view::npos; at = text.find(from, at + 1)) {
    const std::size_t end = at + from.size();
    if (end < text.size() && text[end] >= '0' && text[end] <= '9') continue;  // cuda:1 inside cuda:12
    out.append(text.substr(last, at - last));
    out += "cuda:local";
    last = end;
  }
  out.append(text.substr(last));
  return out;
}

std::string NormalizedGraph::symbolic(std::string_view expr) const {
  if (!norm_.renumber_symbols) return std::string(expr);
  std::string out;
  std::size_t last = 0;
  for (const auto sym : model::symbols_in(expr)) {
    const auto at = static_cast<std::size_t>(sym.data() - expr.data());
    out.append(expr.substr(last, at - last));
    const auto it = std::find(symbols_.begin(), symbols_.end(), sym);
    out += it == symbols_.end() ? std::string(sym) : "s#" + std::to_string(it - symbols_.begin());
    last = at + sym.size();
  }
  out.append(expr.substr(last));
  return out;
}

// ---- comparison helpers ----------------------------------------------------------------------

namespace detail {

bool leaf_equal(const NormalizedGraph& a, const Value& va, const NormalizedGraph& b, const Value& vb) {
  const auto& ga = a.graph();
  const auto& gb = b.graph();
  const auto ka = device_index_of(ga, va);
  const auto kb = device_index_of(gb, vb);
  // A local device equals only a local device: cuda:0 is rank 0's own device but a foreign
  // one on rank 1, even though the text is the same.
  if (ka && kb && (a.is_local(*ka) || b.is_local(*kb))) return a.is_local(*ka) && b.is_local(*kb);
  switch (va.kind) {
    case ValueKind::None: return true;
    case ValueKind::Bool:
    case ValueKind::Int:
    case ValueKind::DType: return va.i == vb.i;
    case ValueKind::Device:
      return ga.str(va.device.type) == gb.str(vb.device.type) && va.device.index == vb.device.index;
    case ValueKind::Symbolic: return a.symbolic(ga.str(va.s)) == b.symbolic(gb.str(vb.s));
    default: return ga.str(va.s) == gb.str(vb.s);
  }
}

std::string leaf_text(const NormalizedGraph& g, const Value& v) {
  auto text = value_text(g.graph(), v);
  if (const auto k = device_index_of(g.graph(), v); k && g.is_local(*k)) text += " (local)";
  return text;
}

bool is_pg_arg(const NormalizedGraph& g, const Node& n, int arg) {
  return g.norm().ignore_process_groups && model::process_group_arg(g.graph(), n) == arg;
}

void diff_meta(const NormalizedGraph& a, const Node& na, const NormalizedGraph& b, const Node& nb,
               std::vector<FieldDiff>& out) {
  const auto& ga = a.graph();
  const auto& gb = b.graph();
  const auto& x = na.meta;
  const auto& y = nb.meta;
  if (x.kind != y.kind) {
    out.push_back({"meta", meta_text(ga, x), meta_text(gb, y)});
    return;
  }
  if (x.kind == TensorMeta::Kind::None) return;
  if (x.kind != TensorMeta::Kind::Tensor) {
    if (a.localized(a.symbolic(ga.str(x.sym))) != b.localized(b.symbolic(gb.str(y.sym))))
      out.push_back({"meta", meta_text(ga, x), meta_text(gb, y)});
    return;
  }
  if (x.dtype != y.dtype)
    out.push_back(
        {"meta.dtype", std::string(model::dtype_name(x.dtype)), std::string(model::dtype_name(y.dtype))});
  const auto dims_equal = [&](const std::vector<model::Dim>& p, const std::vector<model::Dim>& q) {
    if (p.size() != q.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i].is_symbolic() != q[i].is_symbolic()) return false;
      if (p[i].is_symbolic() ? a.symbolic(ga.str(p[i].expr)) != b.symbolic(gb.str(q[i].expr))
                             : p[i].value != q[i].value)
        return false;
    }
    return true;
  };
  if (!dims_equal(x.sizes, y.sizes))
    out.push_back({"meta.shape", dims_text(ga, x.sizes), dims_text(gb, y.sizes)});
  if (x.has_strides && y.has_strides && !dims_equal(x.strides, y.strides))
    out.push_back({"meta.stride", dims_text(ga, x.strides), dims_text(gb, y.strides)});
  const bool both_local = a.is_local(x.device.index) && b.is_local(y.device.index);
  if (!both_local && (ga.str(x.device.type) != gb.str(y.device.type) || x.device.index != y.device.index)) {
    const auto dev = [](const Graph& g, const model::Device& d) {
      return std::string(g.str(d.type)) + (d.index >= 0 ? ":" + std::to_string(d.index) : "");
    };
    out.push_back({"meta.device", dev(ga, x.device), dev(gb, y.device)});
  }
}

}  // namespace detail

}  // namespace gparity::diff
