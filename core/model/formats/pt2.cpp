#include "core/model/formats/pt2.hpp"

#include <unordered_map>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/graph/graph_json.hpp"

namespace gparity::model {
namespace {

using Json = nlohmann::json;

// torch/_export/serde/schema.py ScalarType.
std::optional<DType> scalar_type(std::int64_t v) {
  switch (v) {
    case 1: return DType::U8;
    case 2: return DType::I8;
    case 3: return DType::I16;
    case 4: return DType::I32;
    case 5: return DType::I64;
    case 6: return DType::F16;
    case 7: return DType::F32;
    case 8: return DType::F64;
    case 10: return DType::C64;
    case 12: return DType::Bool;
    case 13: return DType::BF16;
    case 28: return DType::U16;
    case 29: return DType::F8E4M3;
    case 30: return DType::F8E5M2;
    default: return std::nullopt;
  }
}

constexpr std::string_view kLayouts[] = {"torch.unknown_layout", "torch.sparse_coo", "torch.sparse_csr",
                                         "torch.sparse_csc",     "torch.sparse_bsr", "torch.sparse_bsc",
                                         "torch._mkldnn",        "torch.strided"};
constexpr std::string_view kMemoryFormats[] = {"torch.unknown_memory_format", "torch.contiguous_format",
                                               "torch.channels_last", "torch.channels_last_3d",
                                               "torch.preserve_format"};

class Converter {
 public:
  Converter(const std::string& source, Graph& g) : source_(source), g_(g) {}

  void graph(const Json& gj, int depth) {
    if (depth > 32) fail("subgraphs nested deeper than 32 levels");
    if (!gj.is_object()) fail("graph is not an object");
    tensor_values_ = &field(gj, "tensor_values");
    const Json& inputs = array(gj, "inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i) input(inputs[i], i);
    for (const auto& n : array(gj, "nodes")) node(n, depth);
    Node out;
    out.kind = NodeKind::Output;
    out.name = out.target = g_.intern("output");
    std::vector<Value> items;
    for (const auto& o : array(gj, "outputs")) items.push_back(argument(o, depth));
    out.args.push_back(Value::sequence(ValueKind::Tuple, std::move(items)));
    add(std::move(out));
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(source_, where_.empty() ? problem : where_ + ": " + problem);
  }
  const Json& field(const Json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) fail(std::string("missing \"") + key + "\"");
    return j[key];
  }
  const Json& array(const Json& j, const char* key) const {
    const Json& a = field(j, key);
    if (!a.is_array()) fail(std::string("\"") + key + "\" is not an array");
    return a;
  }
  std::string str(const Json& j, const char* key) const {
    const Json& s = field(j, key);
    if (!s.is_string()) fail(std::string("\"") + key + "\" is not a string");
    return s.get<std::string>();
  }
  std::int64_t integer(const Json& j) const {
    if (!j.is_number_integer()) fail("expected an integer, got " + j.dump().substr(0, 40));
    return j.get<std::int64_t>();
  }

  NodeId add(Node n) {
    const auto id = static_cast<NodeId>(g_.nodes.size());
    if (!names_.emplace(std::string(g_.str(n.name)), id).second) {
      fail("name '" + std::string(g_.str(n.name)) + "' is defined twice");
    }
    g_.nodes.push_back(std::move(n));
    return id;
  }

  Dim dim(const Json& d) const {
    if (d.is_object() && d.contains("as_int")) return {integer(d["as_int"]), kEmptyStr};
    if (d.is_object() && d.contains("as_expr")) {
      const Json& e = d["as_expr"];
      return {0, g_.intern(e.is_object() && e.contains("expr_str") && e["expr_str"].is_string()
                               ? e["expr_str"].get<std::string>()
                               : e.dump())};
    }
    fail("malformed symbolic size " + d.dump().substr(0, 60));
  }

  Device device(const Json& d) const {
    Device out;
    out.type = g_.intern(str(d, "type"));
    if (d.contains("index") && !d["index"].is_null())
      out.index = static_cast<std::int32_t>(integer(d["index"]));
    return out;
  }

  TensorMeta meta_of(const std::string& name) const {
    TensorMeta m;
    if (!tensor_values_->is_object() || !tensor_values_->contains(name)) return m;
    const Json& t = (*tensor_values_)[name];
    m.kind = TensorMeta::Kind::Tensor;
    const auto dt = scalar_type(integer(field(t, "dtype")));
    if (!dt) fail("tensor '" + name + "' has an unknown dtype " + field(t, "dtype").dump());
    m.dtype = *dt;
    for (const auto& d : array(t, "sizes")) m.sizes.push_back(dim(d));
    if (t.contains("strides")) {
      m.has_strides = true;
      for (const auto& d : array(t, "strides")) m.strides.push_back(dim(d));
    }
    if (t.contains("device")) m.device = device(t["device"]);
    return m;
  }

  Value ref(const Json& t) const {
    const auto name = str(t, "name");
    const auto it = names_.find(name);
    if (it == names_.end()) fail("reference to unknown tensor '" + name + "'");
    return Value::ref(it->second);
  }

  template <typename F>
  Value list(const Json& a, F&& each) const {
    if (!a.is_array()) fail("expected an array, got " + a.dump().substr(0, 40));
    std::vector<Value> items;
    for (const auto& x : a) items.push_back(each(x));
    return Value::sequence(ValueKind::List, std::move(items));
  }

  Value sym(const Json& s) const {
    if (s.is_object() && s.contains("as_name")) {
      const auto name = s["as_name"].is_string() ? s["as_name"].get<std::string>() : std::string();
      if (const auto it = names_.find(name); it != names_.end()) return Value::ref(it->second);
      return Value::text(ValueKind::Symbolic, g_.intern(name));
    }
    if (s.is_object() && s.contains("as_int")) return Value::integer(integer(s["as_int"]));
    if (s.is_object() && s.contains("as_float"))
      return Value::text(ValueKind::Float, g_.intern(s["as_float"].dump()));
    if (s.is_object() && s.contains("as_bool") && s["as_bool"].is_boolean())
      return Value::boolean(s["as_bool"].get<bool>());
    return Value::text(ValueKind::Opaque, g_.intern(s.dump()));
  }

  Value argument(const Json& a, int depth) {
    if (!a.is_object() || a.size() != 1)
      fail("an argument must be a one-key object: " + a.dump().substr(0, 60));
    const std::string& k = a.begin().key();
    const Json& v = a.begin().value();
    if (k == "as_none") return Value::none();
    if (k == "as_tensor") return ref(v);
    if (k == "as_tensors") return list(v, [&](const Json& t) { return ref(t); });
    if (k == "as_optional_tensor")
      return v.is_object() && v.contains("as_tensor") ? ref(v["as_tensor"]) : Value::none();
    if (k == "as_optional_tensors") {
      return list(v, [&](const Json& t) {
        return t.is_object() && t.contains("as_tensor") ? ref(t["as_tensor"]) : Value::none();
      });
    }
    if (k == "as_int") return Value::integer(integer(v));
    if (k == "as_ints") return list(v, [&](const Json& x) { return Value::integer(integer(x)); });
    if (k == "as_float") return Value::text(ValueKind::Float, g_.intern(v.dump()));
    if (k == "as_floats")
      return list(v, [&](const Json& x) { return Value::text(ValueKind::Float, g_.intern(x.dump())); });
    if (k == "as_bool") {
      if (!v.is_boolean()) fail("as_bool is not a boolean");
      return Value::boolean(v.get<bool>());
    }
    if (k == "as_bools")
      return list(v, [&](const Json& x) { return Value::boolean(x.is_boolean() && x.get<bool>()); });
    if (k == "as_string") {
      if (!v.is_string()) fail("as_string is not a string");
      return Value::text(ValueKind::String, g_.intern(v.get<std::string>()));
    }
    if (k == "as_strings")
      return list(v, [&](const Json& x) {
        return Value::text(ValueKind::String, g_.intern(x.is_string() ? x.get<std::string>() : x.dump()));
      });
    if (k == "as_sym_int" || k == "as_sym_float" || k == "as_sym_bool") return sym(v);
    if (k == "as_sym_ints" || k == "as_sym_floats" || k == "as_sym_bools")
      return list(v, [&](const Json& x) { return sym(x); });
    if (k == "as_scalar_type") {
      const auto dt = scalar_type(integer(v));
      if (!dt) fail("unknown scalar type " + v.dump());
      return Value::dtype(*dt);
    }
    if (k == "as_layout") {
      const auto i = integer(v);
      if (i < 0 || i >= static_cast<std::int64_t>(std::size(kLayouts))) fail("unknown layout " + v.dump());
      return Value::text(ValueKind::Layout, g_.intern(kLayouts[i]));
    }
    if (k == "as_memory_format") {
      const auto i = integer(v);
      if (i < 0 || i >= static_cast<std::int64_t>(std::size(kMemoryFormats)))
        fail("unknown memory format " + v.dump());
      return Value::text(ValueKind::MemoryFormat, g_.intern(kMemoryFormats[i]));
    }
    if (k == "as_device") return Value::of_device(device(v));
    if (k == "as_graph") {
      Graph sub;
      const auto name = str(v, "name");
      sub.name = sub.intern(name);
      Converter c(source_, sub);
      c.graph(field(v, "graph"), depth + 1);
      g_.subgraphs.push_back(std::move(sub));
      return Value::text(ValueKind::Opaque, g_.intern(name));
    }
    return Value::text(ValueKind::Opaque, g_.intern(a.dump()));
  }

  void input(const Json& a, std::size_t i) {
    Node n;
    n.kind = NodeKind::Placeholder;
    std::string name = "arg" + std::to_string(i);
    if (a.is_object() && a.size() == 1) {
      const Json& v = a.begin().value();
      if (a.contains("as_tensor")) {
        name = str(v, "name");
        n.meta = meta_of(name);
      } else if (a.contains("as_sym_int") && v.is_object() && v.contains("as_name") &&
                 v["as_name"].is_string()) {
        name = v["as_name"].get<std::string>();
        n.meta.kind = TensorMeta::Kind::Sym;
        n.meta.sym = g_.intern(name);
      } else if (a.contains("as_custom_obj") && v.is_object() && v.contains("name") &&
                 v["name"].is_string()) {
        name = v["name"].get<std::string>();
      }
    }
    n.name = n.target = g_.intern(name);
    add(std::move(n));
  }

  void metadata(const Json& m, Node& n) const {
    if (!m.is_object()) return;
    if (const auto st = m.find("stack_trace"); st != m.end() && st->is_string())
      source_loc(st->get<std::string>(), n);
    if (const auto ms = m.find("nn_module_stack"); ms != m.end() && ms->is_string()) {
      // "key,path,type;key,path,type": the innermost (last) module's path.
      const std::string& s = ms->get_ref<const std::string&>();
      const auto last = s.substr(s.rfind(';') == std::string::npos ? 0 : s.rfind(';') + 1);
      const auto c1 = last.find(',');
      const auto c2 = c1 == std::string::npos ? std::string::npos : last.find(',', c1 + 1);
      if (c2 != std::string::npos) n.module_path = g_.intern(last.substr(c1 + 1, c2 - c1 - 1));
    }
  }

  // Innermost frame of a Python traceback: `File "path", line N, in func\n    code`.
  void source_loc(const std::string& st, Node& n) const {
    const auto at = st.rfind("File \"");
    if (at == std::string::npos) return;
    const auto q = st.find('"', at + 6);
    if (q == std::string::npos) return;
    n.source.file = g_.intern(st.substr(at + 6, q - at - 6));
    const auto ln = st.find(", line ", q);
    if (ln != std::string::npos)
      n.source.line = static_cast<std::int32_t>(std::strtol(st.c_str() + ln + 7, nullptr, 10));
    const auto in = st.find(", in ", q);
    const auto eol = st.find('\n', q);
    if (in != std::string::npos && in < eol) n.source.function = g_.intern(st.substr(in + 5, eol - in - 5));
    if (eol != std::string::npos) {
      auto code = st.substr(eol + 1, st.find('\n', eol + 1) - eol - 1);
      code.erase(0, code.find_first_not_of(' '));
      n.source.code = g_.intern(code);
    }
  }

  void node(const Json& j, int depth) {
    Node n;
    n.kind = NodeKind::CallFunction;
    const auto target = str(j, "target");
    where_ = "node '" +
             (j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : target) + "'";
    n.target =
        g_.intern(std::string_view(target).starts_with("torch.ops.") ? std::string_view(target).substr(10)
                                                                     : std::string_view(target));
    for (const auto& in : array(j, "inputs")) {
      Value v = argument(field(in, "arg"), depth);
      const bool keyword =
          in.contains("kind") && in["kind"].is_number_integer() && in["kind"].get<int>() == 2;
      if (keyword) {
        n.kwargs.push_back({g_.intern(str(in, "name")), std::move(v)});
      } else {
        n.args.push_back(std::move(v));
      }
    }
    if (j.contains("metadata")) metadata(j["metadata"], n);
    const Json& outs = array(j, "outputs");
    // A single tensor output names the node; several become getitem nodes as FX prints them.
    std::vector<std::string> items;
    std::string own = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : "";
    if (outs.size() == 1 && outs[0].is_object() && outs[0].contains("as_tensor")) {
      own = str(outs[0]["as_tensor"], "name");
      n.meta = meta_of(own);
    } else {
      for (const auto& o : outs) {
        if (o.is_object() && o.contains("as_tensors") && o["as_tensors"].is_array()) {
          for (const auto& t : o["as_tensors"]) items.push_back(str(t, "name"));
        } else if (o.is_object() && o.contains("as_tensor")) {
          items.push_back(str(o["as_tensor"], "name"));
        } else if (o.is_object() && o.contains("as_sym_int") && o["as_sym_int"].is_object() &&
                   o["as_sym_int"].contains("as_name") && o["as_sym_int"]["as_name"].is_string()) {
          if (outs.size() == 1) own = o["as_sym_int"]["as_name"].get<std::string>();
        }
      }
    }
    if (own.empty()) own = std::string(g_.str(n.target)) + "_" + std::to_string(g_.nodes.size());
    n.name = g_.intern(own);
    const SourceLoc loc = n.source;
    const StrId module = n.module_path;
    const NodeId id = add(std::move(n));
    for (std::size_t i = 0; i < items.size(); ++i) {
      Node gi;
      gi.kind = NodeKind::CallFunction;
      gi.name = g_.intern(items[i]);
      gi.target = g_.intern("operator.getitem");
      gi.args = {Value::ref(id), Value::integer(static_cast<std::int64_t>(i))};
      gi.meta = meta_of(items[i]);
      gi.source = loc;
      gi.module_path = module;
      add(std::move(gi));
    }
    where_.clear();
  }

  const std::string& source_;
  Graph& g_;
  const Json* tensor_values_ = nullptr;
  std::unordered_map<std::string, NodeId> names_;
  std::string where_;
};

}  // namespace

Graph exported_program_to_graph(const nlohmann::json& program, const std::string& source) {
  if (!program.is_object() || !program.contains("graph_module") || !program["graph_module"].is_object() ||
      !program["graph_module"].contains("graph")) {
    throw InputError(source, "not a serialized ExportedProgram (no graph_module.graph)");
  }
  Graph g;
  g.name = g.intern("ExportedProgram");
  Converter c(source, g);
  c.graph(program["graph_module"]["graph"], 0);
  return g;
}

std::vector<ExportedGraph> read_pt2(const std::string& path, ZipLimits limits) {
  const ZipArchive zip(path, limits);
  std::vector<std::string> programs;
  for (const auto& m : zip.members()) {
    const auto slash = m.rfind('/');
    const std::string base = slash == std::string::npos ? m : m.substr(slash + 1);
    const std::string dir = slash == std::string::npos ? "" : m.substr(0, slash);
    const bool new_layout = m.ends_with(".json") && (dir == "models" || dir.ends_with("/models"));
    const bool old_layout = base == "serialized_exported_program.json";
    if (new_layout || old_layout) programs.push_back(m);
  }
  if (programs.empty()) {
    throw InputError(path,
                     "no exported program in the archive (neither models/<name>.json nor "
                     "serialized_exported_program.json)");
  }
  std::vector<ExportedGraph> out;
  for (const auto& m : programs) {
    const std::string where = path + "!" + m;
    const std::string text = zip.read(m);
    Graph g = exported_program_to_graph(parse_json(text, where), where);
    const auto slash = m.rfind('/');
    const auto stem = m.substr(slash == std::string::npos ? 0 : slash + 1);
    g.name = g.intern(stem.substr(0, stem.size() - 5));
    out.push_back({m, std::move(g)});
  }
  return out;
}

}  // namespace gparity::model
