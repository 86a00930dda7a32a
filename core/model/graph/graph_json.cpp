#include "core/model/graph/graph_json.hpp"

#include <unordered_map>

#include "core/model/base/input_error.hpp"

namespace gparity::model {
namespace {

using Json = nlohmann::ordered_json;

Json device_to_json(const Graph& g, const Device& d) {
  Json j = {{"type", g.str(d.type)}};
  if (d.index >= 0) j["index"] = d.index;
  return j;
}

Json dims_to_json(const Graph& g, const std::vector<Dim>& dims) {
  Json a = Json::array();
  for (const auto& d : dims) {
    if (d.is_symbolic()) {
      a.push_back(Json{{"sym", g.str(d.expr)}});
    } else {
      a.push_back(d.value);
    }
  }
  return a;
}

}  // namespace

Json value_to_json(const Graph& g, const Value& v) {
  const auto items = [&] {
    Json a = Json::array();
    for (const auto& item : v.items) a.push_back(value_to_json(g, item));
    return a;
  };
  switch (v.kind) {
    case ValueKind::None: return nullptr;
    case ValueKind::Bool: return v.i != 0;
    case ValueKind::Int: return v.i;
    case ValueKind::String: return std::string(g.str(v.s));
    case ValueKind::List: return items();
    case ValueKind::Tuple: return Json{{"tuple", items()}};
    case ValueKind::Slice: return Json{{"slice", items()}};
    case ValueKind::Node: return Json{{"node", v.node < g.nodes.size() ? g.node_name(v.node) : ""}};
    case ValueKind::DType: return Json{{"dtype", dtype_name(static_cast<DType>(v.i))}};
    case ValueKind::Device: return Json{{"device", device_to_json(g, v.device)}};
    default: return Json{{std::string(value_kind_name(v.kind)), g.str(v.s)}};
  }
}

Json meta_to_json(const Graph& g, const TensorMeta& m) {
  switch (m.kind) {
    case TensorMeta::Kind::None: return nullptr;
    case TensorMeta::Kind::Sym: return Json{{"kind", "sym"}, {"expr", g.str(m.sym)}};
    case TensorMeta::Kind::Other: return Json{{"kind", "other"}, {"text", g.str(m.sym)}};
    case TensorMeta::Kind::Tensor: break;
  }
  Json j = {{"kind", "tensor"}, {"dtype", dtype_name(m.dtype)}, {"sizes", dims_to_json(g, m.sizes)}};
  if (m.has_strides) j["strides"] = dims_to_json(g, m.strides);
  if (m.device.type != kEmptyStr) j["device"] = device_to_json(g, m.device);
  return j;
}

Json graph_to_json(const Graph& g) {
  Json nodes = Json::array();
  for (const auto& n : g.nodes) {
    Json j = {{"name", g.str(n.name)}, {"op", node_kind_name(n.kind)}, {"target", g.str(n.target)}};
    Json args = Json::array();
    for (const auto& a : n.args) args.push_back(value_to_json(g, a));
    j["args"] = std::move(args);
    Json kwargs = Json::object();
    for (const auto& k : n.kwargs) kwargs[std::string(g.str(k.name))] = value_to_json(g, k.value);
    j["kwargs"] = std::move(kwargs);
    if (n.meta.kind != TensorMeta::Kind::None) j["meta"] = meta_to_json(g, n.meta);
    if (n.source.known() || n.source.line != 0 || n.source.function != kEmptyStr ||
        n.source.code != kEmptyStr) {
      j["source"] = {{"file", g.str(n.source.file)},
                     {"line", n.source.line},
                     {"function", g.str(n.source.function)},
                     {"code", g.str(n.source.code)}};
    }
    if (n.module_path != kEmptyStr) j["module"] = g.str(n.module_path);
    if (n.comment != kEmptyStr) j["comment"] = g.str(n.comment);
    if (n.line != 0) j["line"] = n.line;
    nodes.push_back(std::move(j));
  }
  Json out = {{"format", kGraphJsonFormat}, {"version", kGraphJsonVersion}, {"name", g.str(g.name)}};
  out["nodes"] = std::move(nodes);
  Json subs = Json::array();
  for (const auto& s : g.subgraphs) subs.push_back(graph_to_json(s));
  out["subgraphs"] = std::move(subs);
  return out;
}

namespace {

class Reader {
 public:
  Reader(const std::string& source, Graph& g) : source_(source), g_(g) {}

  void graph(const Json& j, int depth) {
    if (depth > 64) fail("subgraphs nested deeper than 64 levels");
    if (!j.is_object()) fail("a graph must be a JSON object");
    if (j.value("format", std::string()) != kGraphJsonFormat)
      fail("not a gparity graph (format is not \"gparity.graph\")");
    if (!j.contains("version") || !j["version"].is_number_integer() ||
        j["version"].get<int>() != kGraphJsonVersion) {
      fail("unsupported gparity graph version");
    }
    g_.name = g_.intern(string_field(j, "name", true));
    const Json& nodes = array_field(j, "nodes");
    // Names first, so references may point at any node (importers may not sort).
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].is_object()) fail("node " + std::to_string(i) + " is not an object");
      const auto name = string_field(nodes[i], "name", false);
      if (!names_.emplace(name, static_cast<NodeId>(i)).second) fail("node '" + name + "' is defined twice");
    }
    g_.nodes.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      where_ = "node '" + nodes[i]["name"].get<std::string>() + "'";
      g_.nodes.push_back(node(nodes[i]));
    }
    where_.clear();
    if (j.contains("subgraphs")) {
      for (const auto& s : array_field(j, "subgraphs")) {
        Graph sub;
        Reader r(source_, sub);
        r.graph(s, depth + 1);
        g_.subgraphs.push_back(std::move(sub));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(source_, where_.empty() ? problem : where_ + ": " + problem);
  }
  std::string string_field(const Json& j, const char* key, bool optional) const {
    if (!j.contains(key)) {
      if (optional) return {};
      fail(std::string("missing \"") + key + "\"");
    }
    if (!j[key].is_string()) fail(std::string("\"") + key + "\" must be a string");
    return j[key].get<std::string>();
  }
  const Json& array_field(const Json& j, const char* key) const {
    if (!j.contains(key) || !j[key].is_array()) fail(std::string("\"") + key + "\" must be an array");
    return j[key];
  }
  std::int64_t int_of(const Json& j, const char* what) const {
    if (!j.is_number_integer()) fail(std::string(what) + " must be an integer");
    return j.get<std::int64_t>();
  }

  Node node(const Json& j) {
    Node n;
    n.name = g_.intern(string_field(j, "name", false));
    const auto kind = parse_node_kind(string_field(j, "op", false));
    if (!kind) fail("unknown op \"" + j["op"].get<std::string>() + "\"");
    n.kind = *kind;
    n.target = g_.intern(string_field(j, "target", false));
    for (const auto& a : array_field(j, "args")) n.args.push_back(value(a, 0));
    if (j.contains("kwargs")) {
      if (!j["kwargs"].is_object()) fail("\"kwargs\" must be an object");
      for (const auto& [k, v] : j["kwargs"].items()) n.kwargs.push_back({g_.intern(k), value(v, 0)});
    }
    if (j.contains("meta") && !j["meta"].is_null()) n.meta = meta(j["meta"]);
    if (j.contains("source")) {
      const Json& s = j["source"];
      if (!s.is_object()) fail("\"source\" must be an object");
      n.source.file = g_.intern(string_field(s, "file", true));
      n.source.line = s.contains("line") ? static_cast<std::int32_t>(int_of(s["line"], "source line")) : 0;
      n.source.function = g_.intern(string_field(s, "function", true));
      n.source.code = g_.intern(string_field(s, "code", true));
    }
    n.module_path = g_.intern(string_field(j, "module", true));
    n.comment = g_.intern(string_field(j, "comment", true));
    if (j.contains("line")) n.line = int_of(j["line"], "\"line\"");
    return n;
  }

  Device device(const Json& j) {
    if (!j.is_object()) fail("a device must be an object");
    Device d;
    d.type = g_.intern(string_field(j, "type", false));
    if (j.contains("index")) d.index = static_cast<std::int32_t>(int_of(j["index"], "device index"));
    return d;
  }

  std::vector<Dim> dims(const Json& j) {
    if (!j.is_array()) fail("sizes and strides must be arrays");
    std::vector<Dim> out;
    for (const auto& d : j) {
      if (d.is_object()) {
        out.push_back({0, g_.intern(string_field(d, "sym", false))});
      } else {
        out.push_back({int_of(d, "a size"), kEmptyStr});
      }
    }
    return out;
  }

  TensorMeta meta(const Json& j) {
    if (!j.is_object()) fail("\"meta\" must be an object");
    TensorMeta m;
    const auto kind = string_field(j, "kind", false);
    if (kind == "sym") {
      m.kind = TensorMeta::Kind::Sym;
      m.sym = g_.intern(string_field(j, "expr", false));
    } else if (kind == "other") {
      m.kind = TensorMeta::Kind::Other;
      m.sym = g_.intern(string_field(j, "text", false));
    } else if (kind == "tensor") {
      m.kind = TensorMeta::Kind::Tensor;
      const auto dt = parse_dtype(string_field(j, "dtype", false));
      if (!dt) fail("unknown dtype \"" + j["dtype"].get<std::string>() + "\"");
      m.dtype = *dt;
      m.sizes = dims(j.contains("sizes") ? j["sizes"] : Json::array());
      if (j.contains("strides")) {
        m.has_strides = true;
        m.strides = dims(j["strides"]);
      }
      if (j.contains("device")) m.device = device(j["device"]);
    } else {
      fail("unknown meta kind \"" + kind + "\"");
    }
    return m;
  }

  std::vector<Value> items(const Json& j, int depth) {
    if (!j.is_array()) fail("expected an array of values");
    std::vector<Value> out;
    out.reserve(j.size());
    for (const auto& v : j) out.push_back(value(v, depth + 1));
    return out;
  }

  Value value(const Json& j, int depth) {
    if (depth > 128) fail("values nested deeper than 128 levels");
    if (j.is_null()) return Value::none();
    if (j.is_boolean()) return Value::boolean(j.get<bool>());
    if (j.is_number_integer()) return Value::integer(j.get<std::int64_t>());
    if (j.is_string()) return Value::text(ValueKind::String, g_.intern(j.get<std::string>()));
    if (j.is_array()) return Value::sequence(ValueKind::List, items(j, depth));
    if (!j.is_object() || j.size() != 1)
      fail("a value must be null, bool, int, string, array or a one-key object");
    const auto first = j.begin();
    const std::string key = first.key();
    const Json& inner = first.value();
    if (key == "tuple") return Value::sequence(ValueKind::Tuple, items(inner, depth));
    if (key == "slice") {
      auto s = items(inner, depth);
      if (s.size() != 3) fail("a slice has 3 items");
      return Value::sequence(ValueKind::Slice, std::move(s));
    }
    if (key == "node") {
      if (!inner.is_string()) fail("a node reference must be a name");
      const auto it = names_.find(inner.get<std::string>());
      if (it == names_.end()) fail("reference to unknown node '" + inner.get<std::string>() + "'");
      return Value::ref(it->second);
    }
    if (key == "dtype") {
      const auto dt = inner.is_string() ? parse_dtype(inner.get<std::string>()) : std::nullopt;
      if (!dt) fail("unknown dtype value");
      return Value::dtype(*dt);
    }
    if (key == "device") return Value::of_device(device(inner));
    for (const auto k : {ValueKind::Float, ValueKind::Layout, ValueKind::MemoryFormat, ValueKind::Symbolic,
                         ValueKind::Opaque}) {
      if (key == value_kind_name(k)) {
        if (!inner.is_string()) fail("\"" + key + "\" must hold a string");
        return Value::text(k, g_.intern(inner.get<std::string>()));
      }
    }
    fail("unknown value kind \"" + key + "\"");
  }

  const std::string& source_;
  Graph& g_;
  std::unordered_map<std::string, NodeId> names_;
  std::string where_;
};

}  // namespace

Graph graph_from_json(const nlohmann::ordered_json& j, const std::string& source) {
  Graph g;
  Reader r(source, g);
  r.graph(j, 0);
  return g;
}

}  // namespace gparity::model
