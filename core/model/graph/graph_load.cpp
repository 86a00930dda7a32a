#include "core/model/graph/graph_load.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/format_detect.hpp"
#include "core/model/formats/pt2.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"

namespace gparity::model {
namespace {

void number_occurrences(GraphCollection& c) {
  std::map<std::tuple<std::int32_t, CompileId, std::string>, std::size_t> seen;
  for (auto& e : c.entries) e.occurrence = seen[{e.rank, e.compile, e.kind}]++;
}

GraphCollection load_trace(const std::string& path) {
  GraphCollection c;
  c.path = path;
  c.format = "torch_trace";
  c.trace = std::make_shared<MultiRankTrace>(read_torch_trace_dir(path));
  for (const auto& r : c.trace->ranks) {
    c.ranks.push_back(r.rank);
    c.compile_ids.push_back(r.compile_ids());
    c.md5_mismatches += r.md5_mismatches;
    c.problems.insert(c.problems.end(), r.problems.begin(), r.problems.end());
    for (const auto& g : r.graphs) {
      GraphEntry e{r.rank, g.compile, g.kind,
                   0,      &g.graph,  r.path + ":" + std::to_string(r.records[g.record].line)};
      e.problems = g.problems;
      c.entries.push_back(std::move(e));
    }
    for (const auto i : r.unparsed) {
      const TraceRecord& rec = r.records[i];
      std::string why = "no FX module in the payload";
      for (const auto& p : r.problems) {
        if (p.line > rec.line && p.line <= rec.line + rec.payload_lines) {
          why = p.problem;
          break;
        }
      }
      c.unparsed.push_back({r.rank, rec.compile, rec.name, r.path, rec.line, why});
    }
  }
  return c;
}

GraphCollection single(const std::string& path, std::string format, std::string kind, Graph g) {
  GraphCollection c;
  c.path = path;
  c.format = std::move(format);
  c.owned.push_back(std::make_shared<Graph>(std::move(g)));
  c.entries.push_back({-1, {}, std::move(kind), 0, c.owned.back().get(), path});
  return c;
}

}  // namespace

GraphCollection load_graphs(const std::string& path) {
  const PathKind kind = path_kind(path);
  if (kind == PathKind::Missing) throw InputError(path, "no such file or directory");
  GraphCollection c;
  if (kind == PathKind::Directory) {
    c = load_trace(path);
  } else {
    // By content (format_detect.hpp): logs named *.txt are common, and a pickle or an empty file
    // is no FX text whatever its name.
    const auto d = detect_format(path);
    switch (d.format) {
      case Format::TorchTrace:
      case Format::Zip:
      case Format::GraphJson:
      case Format::Json:
      case Format::Text: break;
      default: throw unrecognized_input(path, d, kGraphFormats);
    }
    const MappedFile file(path);
    const auto text = file.text();
    if (d.format == Format::TorchTrace) {
      c = load_trace(path);
    } else if (d.format == Format::Zip) {
      c.path = path;
      c.format = "pt2";
      for (auto& p : read_pt2(path)) {
        c.owned.push_back(std::make_shared<Graph>(std::move(p.graph)));
        c.entries.push_back({-1, {}, "exported_program", 0, c.owned.back().get(), path + "!" + p.member});
      }
    } else if (d.format != Format::Text) {
      c = single(path, "gparity_json", "gparity_graph",
                 graph_from_json(parse_ordered_json(text, path), path));
    } else {
      FxParse p = read_fx_text(text, path);
      for (auto& pr : p.problems) c.problems.push_back({path, pr.line, std::move(pr.problem)});
      if (!p.graph) {
        throw InputError(path, c.problems.empty() ? 0 : c.problems.front().line,
                         c.problems.empty() ? "no FX module in the text" : c.problems.front().problem);
      }
      auto problems = std::move(c.problems);
      c = single(path, "fx_text", "fx_text", std::move(*p.graph));
      c.entries.back().problems = static_cast<std::uint32_t>(problems.size());
      c.problems = std::move(problems);
    }
  }
  number_occurrences(c);
  return c;
}

std::vector<const GraphEntry*> select_graphs(const GraphCollection& c, const GraphSelector& s) {
  std::vector<const GraphEntry*> out;
  for (const auto& e : c.entries) {
    if (s.rank && e.rank != *s.rank) continue;
    if (s.compile && e.compile != *s.compile) continue;
    if (!s.kind.empty() && e.kind != s.kind) continue;
    if (s.occurrence && e.occurrence != *s.occurrence) continue;
    out.push_back(&e);
  }
  return out;
}

namespace {

std::string dims_text(const Graph& g, const std::vector<Dim>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].is_symbolic() ? std::string(g.str(dims[i].expr)) : std::to_string(dims[i].value);
  }
  return s + "]";
}

std::string device_text(const Graph& g, const Device& d) {
  std::string s(g.str(d.type));
  if (d.index >= 0) s += ":" + std::to_string(d.index);
  return s;
}

}  // namespace

std::string meta_text(const Graph& g, const TensorMeta& m) {
  switch (m.kind) {
    case TensorMeta::Kind::None: return "";
    case TensorMeta::Kind::Sym: return "Sym(" + std::string(g.str(m.sym)) + ")";
    case TensorMeta::Kind::Other: return std::string(g.str(m.sym));
    case TensorMeta::Kind::Tensor: break;
  }
  std::string s = std::string(dtype_short_name(m.dtype)) + dims_text(g, m.sizes);
  if (m.has_strides) s += dims_text(g, m.strides);
  return s + device_text(g, m.device);
}

std::string value_text(const Graph& g, const Value& v) {
  const auto seq = [&](const char* open, const char* close) {
    std::string s = open;
    for (std::size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + value_text(g, v.items[i]);
    if (v.kind == ValueKind::Tuple && v.items.size() == 1) s += ",";
    return s + close;
  };
  switch (v.kind) {
    case ValueKind::None: return "None";
    case ValueKind::Bool: return v.i ? "True" : "False";
    case ValueKind::Int: return std::to_string(v.i);
    case ValueKind::String: {
      std::string out = "'";
      for (const char c : g.str(v.s)) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
      }
      return out + "'";
    }
    case ValueKind::List: return seq("[", "]");
    case ValueKind::Tuple: return seq("(", ")");
    case ValueKind::Slice: return seq("slice(", ")");
    case ValueKind::Node: return v.node < g.nodes.size() ? std::string(g.node_name(v.node)) : "?";
    case ValueKind::DType: return "torch." + std::string(dtype_name(static_cast<DType>(v.i)));
    case ValueKind::Device:
      return "device(type='" + std::string(g.str(v.device.type)) + "'" +
             (v.device.index >= 0 ? ", index=" + std::to_string(v.device.index) : "") + ")";
    default: return std::string(g.str(v.s));
  }
}

std::string graph_to_dot(const Graph& g) {
  const auto esc = [](std::string_view s) {
    std::string o;
    for (const char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      if (c == '\n') {
        o += "\\n";
        continue;
      }
      o += c;
    }
    return o;
  };
  std::string out = "digraph \"" + esc(g.str(g.name)) + "\" {\n  node [shape=box, fontname=\"monospace\"];\n";
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string label = std::string(g.str(n.name)) + "\\n" + esc(g.str(n.target));
    const auto m = meta_text(g, n.meta);
    if (!m.empty()) label += "\\n" + esc(m);
    out += "  n" + std::to_string(i) + " [label=\"" + label + "\"";
    if (n.kind == NodeKind::Placeholder || n.kind == NodeKind::Output) out += ", style=rounded";
    out += "];\n";
  }
  const UseEdges edges(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (const NodeId u : edges.users(static_cast<NodeId>(i))) {
      out += "  n" + std::to_string(i) + " -> n" + std::to_string(u) + ";\n";
    }
  }
  return out + "}\n";
}

}  // namespace gparity::model
