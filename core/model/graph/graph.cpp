#include "core/model/graph/graph.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include "core/model/graph/fingerprint_parts.hpp"

namespace gparity::model {

StringPool::StringPool() {
  intern("");
}

StringPool::StringPool(const StringPool& other) {
  // The views point into the other pool's chunks: every string is stored again.
  strings_.reserve(other.strings_.size());
  index_.reserve(other.strings_.size());
  for (const std::string_view text : other.strings_) {
    strings_.push_back(store(text));
    index_.insert(strings_.back(), static_cast<StrId>(strings_.size() - 1));
  }
}

StringPool& StringPool::operator=(const StringPool& other) {
  if (this != &other) {
    StringPool copy(other);
    *this = std::move(copy);
  }
  return *this;
}

std::string_view StringPool::store(std::string_view text) {
  constexpr std::size_t kChunk = 16 * 1024;
  if (text.empty()) return {};
  char* at = nullptr;
  if (text.size() > kChunk / 4) {  // a long string (a code line, a path): a block of its own
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(text.size()));
    at = chunks_.back().get();
  } else {
    if (text.size() > left_) {
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(kChunk));
      next_ = chunks_.back().get();
      left_ = kChunk;
    }
    at = next_;
    next_ += text.size();
    left_ -= text.size();
  }
  std::memcpy(at, text.data(), text.size());
  return {at, text.size()};
}

StringPool::StringPool(StringPool&& other) noexcept
    : chunks_(std::move(other.chunks_)),
      next_(std::exchange(other.next_, nullptr)),
      left_(std::exchange(other.left_, 0)),
      strings_(std::move(other.strings_)),
      index_(std::move(other.index_)) {}

StringPool& StringPool::operator=(StringPool&& other) noexcept {
  if (this != &other) {
    chunks_ = std::move(other.chunks_);
    next_ = std::exchange(other.next_, nullptr);
    left_ = std::exchange(other.left_, 0);
    strings_ = std::move(other.strings_);
    index_ = std::move(other.index_);
  }
  return *this;
}

StrId StringPool::intern(std::string_view text) {
  if (text.empty() && !strings_.empty()) return kEmptyStr;  // "" is always id 0
  return index_.find_or_insert(
      text,
      [&] {
        strings_.push_back(store(text));
        return static_cast<StrId>(strings_.size() - 1);
      },
      [&](std::string_view) { return strings_.back(); });
}

void StringPool::reserve(std::size_t n) {
  strings_.reserve(n);
  index_.reserve(n);
}

std::optional<StrId> StringPool::find(std::string_view text) const {
  if (const std::uint32_t* id = index_.find(text)) return *id;
  return std::nullopt;
}

namespace {

constexpr std::array<std::string_view, 7> kNodeKindNames = {
    "placeholder", "call_function", "call_method", "call_module", "get_attr", "output", "opaque"};
constexpr std::array<std::string_view, 15> kValueKindNames = {
    "none",  "bool",   "int",    "float",         "str",   "list",     "tuple", "node",
    "dtype", "device", "layout", "memory_format", "slice", "symbolic", "opaque"};

}  // namespace

std::string_view node_kind_name(NodeKind k) noexcept {
  return kNodeKindNames[static_cast<std::size_t>(k)];
}

std::optional<NodeKind> parse_node_kind(std::string_view text) noexcept {
  for (std::size_t i = 0; i < kNodeKindNames.size(); ++i) {
    if (kNodeKindNames[i] == text) return static_cast<NodeKind>(i);
  }
  return std::nullopt;
}

std::string_view value_kind_name(ValueKind k) noexcept {
  return kValueKindNames[static_cast<std::size_t>(k)];
}

Value Value::text(ValueKind k, StrId s) {
  Value r;
  r.kind = k;
  r.s = s;
  return r;
}

Value Value::ref(NodeId n) {
  Value r;
  r.kind = ValueKind::Node;
  r.node = n;
  return r;
}

Value Value::of_device(Device d) {
  Value r;
  r.kind = ValueKind::Device;
  r.device = d;
  return r;
}

Value Value::sequence(ValueKind k, std::vector<Value> items) {
  Value r;
  r.kind = k;
  r.items = std::move(items);
  return r;
}

NodeId Graph::find_node(std::string_view name) const noexcept {
  const auto id = strings.find(name);
  if (!id) return kNoNode;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == *id) return static_cast<NodeId>(i);
  }
  return kNoNode;
}

const Graph* Graph::find_subgraph(std::string_view name) const noexcept {
  for (const auto& g : subgraphs) {
    if (g.str(g.name) == name) return &g;
  }
  return nullptr;
}

std::size_t Graph::total_nodes() const noexcept {
  std::size_t n = nodes.size();
  for (const auto& g : subgraphs) n += g.total_nodes();
  return n;
}

std::size_t Graph::total_opaque() const noexcept {
  std::size_t n = 0;
  for (const auto& node : nodes) n += node.kind == NodeKind::Opaque;
  for (const auto& g : subgraphs) n += g.total_opaque();
  return n;
}

// ---- equality -------------------------------------------------------------------------------

namespace {

bool devices_equal(const Graph& ga, const Device& a, const Graph& gb, const Device& b) {
  return a.index == b.index && ga.str(a.type) == gb.str(b.type);
}

bool dims_equal(const Graph& ga, const std::vector<Dim>& a, const Graph& gb, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].value != b[i].value || ga.str(a[i].expr) != gb.str(b[i].expr)) return false;
  }
  return true;
}

bool meta_equal(const Graph& ga, const TensorMeta& a, const Graph& gb, const TensorMeta& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == TensorMeta::Kind::Tensor) {
    return a.dtype == b.dtype && a.has_strides == b.has_strides && dims_equal(ga, a.sizes, gb, b.sizes) &&
           dims_equal(ga, a.strides, gb, b.strides) && devices_equal(ga, a.device, gb, b.device);
  }
  return ga.str(a.sym) == gb.str(b.sym);
}

}  // namespace

bool nodes_equal(const Graph& ga, const Node& a, const Graph& gb, const Node& b) {
  if (a.kind != b.kind || a.line != b.line || ga.str(a.name) != gb.str(b.name) ||
      ga.str(a.target) != gb.str(b.target) || a.args.size() != b.args.size() ||
      a.kwargs.size() != b.kwargs.size() || !meta_equal(ga, a.meta, gb, b.meta) ||
      ga.str(a.source.file) != gb.str(b.source.file) || a.source.line != b.source.line ||
      ga.str(a.source.function) != gb.str(b.source.function) ||
      ga.str(a.source.code) != gb.str(b.source.code) || ga.str(a.module_path) != gb.str(b.module_path) ||
      ga.str(a.comment) != gb.str(b.comment)) {
    return false;
  }
  for (std::size_t i = 0; i < a.args.size(); ++i) {
    if (!values_equal(ga, a.args[i], gb, b.args[i])) return false;
  }
  for (std::size_t i = 0; i < a.kwargs.size(); ++i) {
    if (ga.str(a.kwargs[i].name) != gb.str(b.kwargs[i].name) ||
        !values_equal(ga, a.kwargs[i].value, gb, b.kwargs[i].value)) {
      return false;
    }
  }
  return true;
}

bool values_equal(const Graph& ga, const Value& a, const Graph& gb, const Value& b) {
  if (a.kind != b.kind || a.i != b.i || a.node != b.node || ga.str(a.s) != gb.str(b.s) ||
      !devices_equal(ga, a.device, gb, b.device) || a.items.size() != b.items.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    if (!values_equal(ga, a.items[i], gb, b.items[i])) return false;
  }
  return true;
}

bool graphs_equal(const Graph& a, const Graph& b) {
  if (a.str(a.name) != b.str(b.name) || a.nodes.size() != b.nodes.size() ||
      a.subgraphs.size() != b.subgraphs.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    if (!nodes_equal(a, a.nodes[i], b, b.nodes[i])) return false;
  }
  for (std::size_t i = 0; i < a.subgraphs.size(); ++i) {
    if (!graphs_equal(a.subgraphs[i], b.subgraphs[i])) return false;
  }
  return true;
}

// ---- edges and order ------------------------------------------------------------------------

UseEdges::UseEdges(const Graph& g) {
  const std::size_t n = g.nodes.size();
  in_offsets_.assign(n + 1, 0);
  std::vector<NodeId> seen_by(n, kNoNode);  // dedups one node's inputs without a set
  for (std::size_t i = 0; i < n; ++i) {
    const auto add = [&](NodeId ref) {
      if (ref < n && seen_by[ref] != i) {
        seen_by[ref] = static_cast<NodeId>(i);
        in_.push_back(ref);
      }
    };
    for (const auto& a : g.nodes[i].args) for_each_ref(a, add);
    for (const auto& k : g.nodes[i].kwargs) for_each_ref(k.value, add);
    in_offsets_[i + 1] = static_cast<std::uint32_t>(in_.size());
  }
  out_offsets_.assign(n + 1, 0);
  for (const NodeId r : in_) ++out_offsets_[r + 1];
  for (std::size_t i = 0; i < n; ++i) out_offsets_[i + 1] += out_offsets_[i];
  out_.resize(in_.size());
  std::vector<std::uint32_t> fill(out_offsets_.begin(), out_offsets_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t e = in_offsets_[i]; e < in_offsets_[i + 1]; ++e)
      out_[fill[in_[e]]++] = static_cast<NodeId>(i);
  }
}

std::span<const NodeId> UseEdges::inputs(NodeId n) const {
  return {in_.data() + in_offsets_[n], in_offsets_[n + 1] - in_offsets_[n]};
}

std::span<const NodeId> UseEdges::users(NodeId n) const {
  return {out_.data() + out_offsets_[n], out_offsets_[n + 1] - out_offsets_[n]};
}

std::optional<std::vector<NodeId>> topological_order(const Graph& g) {
  const UseEdges edges(g);
  const std::size_t n = g.nodes.size();
  std::vector<std::uint32_t> pending(n);
  for (std::size_t i = 0; i < n; ++i)
    pending[i] = static_cast<std::uint32_t>(edges.inputs(static_cast<NodeId>(i)).size());
  // A min-heap on node index keeps the graph's own order wherever it is already valid.
  std::vector<NodeId> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(static_cast<NodeId>(i));
  }
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  std::vector<NodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    const NodeId v = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (const NodeId u : edges.users(v)) {
      if (--pending[u] == 0) {
        ready.push_back(u);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  if (order.size() != n) return std::nullopt;
  return order;
}

// ---- collectives and symbols ----------------------------------------------------------------

bool is_functional_collective(std::string_view target) noexcept {
  return target.starts_with("_c10d_functional.") || target.starts_with("c10d_functional.") ||
         target.starts_with("_c10d_functional_autograd.");
}

int process_group_arg(const Graph& g, const Node& n) noexcept {
  if (n.kind != NodeKind::CallFunction || !is_functional_collective(g.str(n.target))) return -1;
  for (int i = static_cast<int>(n.args.size()) - 1; i >= 0; --i) {
    if (n.args[static_cast<std::size_t>(i)].kind == ValueKind::String) return i;
  }
  return -1;
}

namespace {

bool ident_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool ident_char(char c) noexcept {
  return ident_start(c) || (c >= '0' && c <= '9');
}

}  // namespace

std::vector<std::string_view> symbols_in(std::string_view expr) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < expr.size()) {
    if (!ident_start(expr[i])) {
      ++i;
      continue;
    }
    const std::size_t b = i;
    while (i < expr.size() && ident_char(expr[i])) ++i;
    const std::string_view id = expr.substr(b, i - b);
    // sympy symbols as torch names them: a short lowercase prefix then digits (s77, u3, zuf0).
    std::size_t d = 0;
    while (d < id.size() && id[d] >= 'a' && id[d] <= 'z') ++d;
    if (d > 0 && d <= 3 && d < id.size() &&
        std::all_of(id.begin() + static_cast<std::ptrdiff_t>(d), id.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      out.push_back(id);
    }
  }
  return out;
}

// ---- fingerprint ----------------------------------------------------------------------------

namespace {

struct XxhDeleter {
  void operator()(XXH3_state_t* s) const noexcept { XXH3_freeState(s); }
};

// The bytes of a graph under a normalization go through a buffer: XXH3's streaming update costs
// about as much per call as for a kilobyte, and a node is a dozen small fields. The digest is the
// same (XXH3 streaming does not depend on how the input is cut). With `out` set, the bytes are
// appended there instead (fingerprint_header_bytes / fingerprint_node_bytes).
class Hasher {
 public:
  Hasher(const Graph& g, const Normalization& norm, std::string* out = nullptr)
      : g_(g), norm_(norm), state_(XXH3_createState()), out_(out) {
    XXH3_64bits_reset(state_.get());
  }

  void graph() {
    header();
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) node(g_.nodes[i], i);
    u64(g_.subgraphs.size());
    for (const auto& sub : g_.subgraphs) {
      Hasher inner(sub, norm_);
      inner.symbols_ = symbols_;
      inner.graph();
      u64(inner.digest());
    }
  }

  void header() {
    text(g_.str(g_.name));
    u64(g_.nodes.size());
  }

  void one_node(std::size_t i) { node(g_.nodes[i], i); }

  std::uint64_t digest() {
    flush();
    return XXH3_64bits_digest(state_.get());
  }

 private:
  void flush() {
    if (!buf_.empty()) XXH3_64bits_update(state_.get(), buf_.data(), buf_.size());
    buf_.clear();
  }
  void raw(const void* p, std::size_t n) {
    std::string& to = out_ != nullptr ? *out_ : buf_;
    to.append(static_cast<const char*>(p), n);
    if (out_ == nullptr && buf_.size() >= (std::size_t{1} << 16)) flush();
  }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void text(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }

  void symbolic(std::string_view expr) {
    if (!norm_.renumber_symbols) return text(expr);
    std::string out;
    std::size_t last = 0;
    for (const auto sym : symbols_in(expr)) {
      const auto at = static_cast<std::size_t>(sym.data() - expr.data());
      out.append(expr.substr(last, at - last));
      auto it = std::find(symbols_.begin(), symbols_.end(), sym);
      if (it == symbols_.end()) it = symbols_.insert(symbols_.end(), std::string(sym));
      out += "s#" + std::to_string(it - symbols_.begin());
      last = at + sym.size();
    }
    out.append(expr.substr(last));
    text(out);
  }

  void device(const Device& d) {
    text(g_.str(d.type));
    if (norm_.local_device && d.index == *norm_.local_device) {
      text("local");
    } else {
      u64(static_cast<std::uint64_t>(static_cast<std::int64_t>(d.index)));
    }
  }

  void dims(const std::vector<Dim>& ds) {
    u64(ds.size());
    for (const auto& d : ds)
      d.is_symbolic() ? symbolic(g_.str(d.expr)) : u64(static_cast<std::uint64_t>(d.value));
  }

  void value(const Value& v) {
    u64(static_cast<std::uint64_t>(v.kind));
    switch (v.kind) {
      case ValueKind::None: break;
      case ValueKind::Bool:
      case ValueKind::Int:
      case ValueKind::DType: u64(static_cast<std::uint64_t>(v.i)); break;
      case ValueKind::Node: u64(v.node); break;  // by position: names are handled separately
      case ValueKind::Device: device(v.device); break;
      case ValueKind::Symbolic: symbolic(g_.str(v.s)); break;
      case ValueKind::String:
        if (norm_.local_device) {
          // A device string such as 'cuda:1' is a baked device too.
          const auto s = g_.str(v.s);
          if (const auto colon = s.find(':'); colon != std::string_view::npos &&
                                              s.substr(0, colon) == "cuda" &&
                                              s.substr(colon + 1) == std::to_string(*norm_.local_device)) {
            text("cuda:local");
            break;
          }
        }
        text(g_.str(v.s));
        break;
      default: text(g_.str(v.s)); break;
    }
    u64(v.items.size());
    for (const auto& item : v.items) value(item);
  }

  void meta(const TensorMeta& m) {
    u64(static_cast<std::uint64_t>(m.kind));
    if (m.kind == TensorMeta::Kind::Tensor) {
      u64(static_cast<std::uint64_t>(m.dtype));
      dims(m.sizes);
      u64(m.has_strides);
      dims(m.strides);
      device(m.device);
    } else if (m.kind == TensorMeta::Kind::Sym) {
      symbolic(g_.str(m.sym));
    } else if (m.kind == TensorMeta::Kind::Other) {
      text(g_.str(m.sym));
    }
  }

  void source_path(std::string_view path) {
    for (const auto& prefix : norm_.strip_path_prefixes) {
      if (path.starts_with(prefix)) {
        path.remove_prefix(prefix.size());
        break;
      }
    }
    text(path);
  }

  void node(const Node& n, std::size_t) {
    u64(static_cast<std::uint64_t>(n.kind));
    if (!norm_.ignore_node_names) text(g_.str(n.name));
    if (n.kind == NodeKind::Placeholder && n.meta.kind == TensorMeta::Kind::Sym) {
      symbolic(g_.str(n.target));  // a symbolic input is named by its symbol (s77)
    } else {
      text(g_.str(n.target));
    }
    const int pg = norm_.ignore_process_groups ? process_group_arg(g_, n) : -1;
    u64(n.args.size());
    for (std::size_t i = 0; i < n.args.size(); ++i) {
      if (static_cast<int>(i) == pg) {
        text("pg");
      } else {
        value(n.args[i]);
      }
    }
    u64(n.kwargs.size());
    for (const auto& k : n.kwargs) {
      const auto name = g_.str(k.name);
      text(name);
      if (norm_.ignore_process_groups && name == "group_name") {
        text("pg");
      } else {
        value(k.value);
      }
    }
    meta(n.meta);
    if (norm_.include_source) {
      source_path(g_.str(n.source.file));
      u64(static_cast<std::uint64_t>(n.source.line));
      text(g_.str(n.source.function));
      text(g_.str(n.source.code));
      text(g_.str(n.module_path));
      text(g_.str(n.comment));
    }
  }

  const Graph& g_;
  const Normalization& norm_;
  std::unique_ptr<XXH3_state_t, XxhDeleter> state_;
  std::string* out_ = nullptr;
  std::string buf_;
  std::vector<std::string> symbols_;
};

}  // namespace

std::uint64_t fingerprint(const Graph& g, const Normalization& norm) {
  Hasher h(g, norm);
  h.graph();
  return h.digest();
}

void fingerprint_header_bytes(const Graph& g, std::string& out) {
  const Normalization norm;
  Hasher(g, norm, &out).header();
}

void fingerprint_node_bytes(const Graph& g, NodeId i, const Normalization& norm, std::string& out) {
  Hasher(g, norm, &out).one_node(i);
}

std::uint64_t fingerprint_of_parts(std::span<const std::string_view> parts) {
  XXH3_state_t* s = XXH3_createState();
  XXH3_64bits_reset(s);
  for (const auto p : parts) XXH3_64bits_update(s, p.data(), p.size());
  const std::uint64_t no_subgraphs = 0;
  XXH3_64bits_update(s, &no_subgraphs, sizeof no_subgraphs);
  const std::uint64_t d = XXH3_64bits_digest(s);
  XXH3_freeState(s);
  return d;
}

}  // namespace gparity::model
