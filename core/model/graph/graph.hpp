#pragma once
// The graph IR every importer (FX print_readable text, TORCH_TRACE payloads, torch.export .pt2)
// produces and every consumer (graph diff, CLI, GUI) reads. A Graph is an ordered list of nodes in
// the order the source printed them (FX order is a topological order); nodes refer to each other
// by index (NodeId), and every string (names, targets, source files and code lines, symbols) is
// interned in the graph's own StringPool, so a 100,000-node graph is a few flat vectors.
// Strings are compared across graphs by text (graph.str(id)), never by StrId.
// docs/graph-format.md describes the model and its JSON form (graph_json.hpp).

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/base/dtype.hpp"
#include "core/model/graph/string_index.hpp"

namespace gparity::model {

using StrId = std::uint32_t;
using NodeId = std::uint32_t;
/// The empty string: every pool holds it at id 0, so default-constructed fields read as "".
inline constexpr StrId kEmptyStr = 0;
inline constexpr NodeId kNoNode = 0xFFFFFFFFu;

/// Interned strings with stable ids and stable storage (an arena of chunks: views stay valid as
/// the pool grows, and a string costs no allocation of its own).
class StringPool {
 public:
  StringPool();
  StringPool(const StringPool& other);
  StringPool& operator=(const StringPool& other);
  StringPool(StringPool&& other) noexcept;
  StringPool& operator=(StringPool&& other) noexcept;
  ~StringPool() = default;

  StrId intern(std::string_view text);
  /// Room for `n` strings without regrowing.
  void reserve(std::size_t n);
  [[nodiscard]] std::string_view str(StrId id) const noexcept { return strings_[id]; }
  [[nodiscard]] std::size_t size() const noexcept { return strings_.size(); }
  /// The id of `text` when it was interned, else nullopt.
  [[nodiscard]] std::optional<StrId> find(std::string_view text) const;

 private:
  std::string_view store(std::string_view text);

  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;  // free bytes of the current chunk: [next_, next_ + left_)
  std::size_t left_ = 0;
  std::vector<std::string_view> strings_;
  StringIndex index_;
};

/// Opaque: a statement the FX reader does not model (valid Python it cannot map to an FX op, or a
/// damaged line). It keeps its name (the assigned name, or "opaque_<line>"), the statement text
/// verbatim in `target`, the nodes it mentions as Node references in `args` (uses), and `line`;
/// views and diffs show it as "opaque" and compare it by that text.
enum class NodeKind : std::uint8_t {
  Placeholder,
  CallFunction,
  CallMethod,
  CallModule,
  GetAttr,
  Output,
  Opaque
};

/// "placeholder", "call_function", ... as torch.fx names them.
std::string_view node_kind_name(NodeKind k) noexcept;
std::optional<NodeKind> parse_node_kind(std::string_view text) noexcept;

/// A device: type ("cuda", "cpu", "meta", ...) and index (-1 when none was given).
struct Device {
  StrId type = kEmptyStr;
  std::int32_t index = -1;
};

/// A size or stride: a concrete integer, or a symbolic expression kept as printed
/// ("s77", "2*((s77//2))"); `expr == kEmptyStr` means concrete.
struct Dim {
  std::int64_t value = 0;
  StrId expr = kEmptyStr;
  [[nodiscard]] bool is_symbolic() const noexcept { return expr != kEmptyStr; }
};

/// What a node's annotation says about its result.
struct TensorMeta {
  enum class Kind : std::uint8_t {
    None,    // no annotation
    Tensor,  // "f32[4, 64][64, 1]cuda:0"
    Sym,     // "Sym(s77)", "Sym(2*s0)": a symbolic scalar; `sym` holds the expression
    Other,   // any other annotation, kept verbatim in `sym`
  };
  Kind kind = Kind::None;
  DType dtype = DType::F32;
  bool has_strides = false;
  std::vector<Dim> sizes;
  std::vector<Dim> strides;
  Device device;          // type kEmptyStr when the annotation names none
  StrId sym = kEmptyStr;  // Sym: the expression; Other: the annotation text
};

enum class ValueKind : std::uint8_t {
  None,
  Bool,          // i: 0/1
  Int,           // i
  Float,         // s: the exact text as printed ("1.1920928955078125e-07", "inf", "-0.0")
  String,        // s: the decoded string
  List,          // items
  Tuple,         // items
  Node,          // node: a reference to an earlier node of the same graph
  DType,         // i: the DType
  Device,        // device
  Layout,        // s: "torch.strided", ...
  MemoryFormat,  // s: "torch.contiguous_format", ...
  Slice,         // items: start, stop, step (None when absent)
  Symbolic,      // s: a symbolic expression or a name the graph does not define ("s77", "2*s0")
  Opaque,        // s: any other Python expression, verbatim (never evaluated)
};

std::string_view value_kind_name(ValueKind k) noexcept;

/// One argument value: a small tagged tree.
struct Value {
  ValueKind kind = ValueKind::None;
  std::int64_t i = 0;
  StrId s = kEmptyStr;
  NodeId node = kNoNode;
  Device device;
  std::vector<Value> items;

  static Value none() { return {}; }
  static Value boolean(bool b) { return make(ValueKind::Bool, b ? 1 : 0); }
  static Value integer(std::int64_t v) { return make(ValueKind::Int, v); }
  static Value text(ValueKind k, StrId s);
  static Value ref(NodeId n);
  static Value dtype(DType d) { return make(ValueKind::DType, static_cast<std::int64_t>(d)); }
  static Value of_device(Device d);
  static Value sequence(ValueKind k, std::vector<Value> items);

 private:
  static Value make(ValueKind k, std::int64_t v) {
    Value r;
    r.kind = k;
    r.i = v;
    return r;
  }
};

struct Kwarg {
  StrId name = kEmptyStr;
  Value value;
};

/// Where a node came from in user code: `# File: path:line in function, code: text`, or
/// .pt2 stack_trace metadata.
struct SourceLoc {
  StrId file = kEmptyStr;
  std::int32_t line = 0;
  StrId function = kEmptyStr;
  StrId code = kEmptyStr;
  [[nodiscard]] bool known() const noexcept { return file != kEmptyStr; }
};

struct Node {
  StrId name = kEmptyStr;
  NodeKind kind = NodeKind::CallFunction;
  /// call_function: the operator without "torch.ops." ("aten.mm.default",
  /// "_c10d_functional.all_reduce.default"), or the Python callable ("torch._C._nn.linear",
  /// "operator.getitem", "operator.add"); call_method: the method ("view"); call_module and
  /// get_attr: the attribute path ("wrap_body_0"); placeholder: the parameter name as the
  /// signature spells it ("L_x_"); output: "output"; opaque: the statement as printed.
  StrId target = kEmptyStr;
  std::vector<Value> args;
  std::vector<Kwarg> kwargs;
  TensorMeta meta;
  SourceLoc source;
  StrId module_path = kEmptyStr;  // nn_module_stack's innermost path when known ("layers.0.attn")
  StrId comment = kEmptyStr;      // trailing comment without "# " ("PlainAOTInput(idx=0)")
  std::int64_t line = 0;          // 1-based line in the text it was parsed from (0: not from text)
};

/// A graph, possibly with nested graphs (higher-order op bodies, submodules) by attribute name.
struct Graph {
  StringPool strings;
  StrId name = kEmptyStr;  // the class name printed ("GraphModule", "inner_f") or the .pt2 model name
  std::vector<Node> nodes;
  std::vector<Graph> subgraphs;

  [[nodiscard]] std::string_view str(StrId id) const noexcept { return strings.str(id); }
  StrId intern(std::string_view text) { return strings.intern(text); }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes[id]; }
  [[nodiscard]] std::string_view node_name(NodeId id) const { return str(nodes[id].name); }
  /// Index of the node with that name, or kNoNode (linear scan; build a map for repeated use).
  [[nodiscard]] NodeId find_node(std::string_view name) const noexcept;
  [[nodiscard]] const Graph* find_subgraph(std::string_view name) const noexcept;
  /// Number of nodes of this graph and of every nested graph.
  [[nodiscard]] std::size_t total_nodes() const noexcept;
  /// Number of Opaque nodes of this graph and of every nested graph.
  [[nodiscard]] std::size_t total_opaque() const noexcept;
};

/// Deep equality by text (string ids may differ between the two pools).
bool graphs_equal(const Graph& a, const Graph& b);
bool values_equal(const Graph& ga, const Value& a, const Graph& gb, const Value& b);
/// Two nodes equal field by field by text (references compared as positions).
bool nodes_equal(const Graph& ga, const Node& a, const Graph& gb, const Node& b);

/// Calls f(NodeId) for every node reference inside `v`, depth first, in order.
template <typename F>
void for_each_ref(const Value& v, F&& f) {
  if (v.kind == ValueKind::Node) f(v.node);
  for (const auto& item : v.items) for_each_ref(item, f);
}

/// Use edges in compressed form: inputs(n) are the distinct nodes n's args and kwargs refer to,
/// in first-use order; users(n) the nodes that use n, in graph order.
class UseEdges {
 public:
  explicit UseEdges(const Graph& g);
  [[nodiscard]] std::span<const NodeId> inputs(NodeId n) const;
  [[nodiscard]] std::span<const NodeId> users(NodeId n) const;

 private:
  std::vector<std::uint32_t> in_offsets_, out_offsets_;
  std::vector<NodeId> in_, out_;
};

/// A topological order (Kahn, ties broken by graph order, so an already sorted graph maps to
/// 0..n-1). nullopt when the references form a cycle or point forward only inside a cycle.
std::optional<std::vector<NodeId>> topological_order(const Graph& g);

/// What the fingerprint ignores or maps; each option is named in reports (graph-diff issue).
struct Normalization {
  /// Device indices in annotations and device values equal to this are hashed as "local";
  /// nullopt: indices hashed as they are.
  std::optional<std::int32_t> local_device;
  /// Symbols (s77, u3) renumbered in order of first appearance, so s77 ~ s0.
  bool renumber_symbols = false;
  /// The process-group name of functional collectives (their last string argument or
  /// group_name kwarg) is hashed as "pg".
  bool ignore_process_groups = false;
  /// Node names are replaced by their position (references still hash by target position).
  bool ignore_node_names = true;
  /// Source locations and comments are part of the hash.
  bool include_source = false;
  /// Prefixes removed from source file paths before hashing (only with include_source).
  std::vector<std::string> strip_path_prefixes;
};

/// XXH3-64 of the graph (and its subgraphs) under `norm`: equal graphs under the same
/// normalization have equal fingerprints, in any process, on any machine.
std::uint64_t fingerprint(const Graph& g, const Normalization& norm = {});

/// True when `target` is a functional collective ("_c10d_functional.*", "c10d_functional.*").
bool is_functional_collective(std::string_view target) noexcept;
/// The argument position holding the process-group name of a functional collective node, or
/// -1 (the last positional String argument; kwargs are matched by name "group_name").
int process_group_arg(const Graph& g, const Node& n) noexcept;

/// Splits a symbolic expression into its symbols (identifiers starting with s, u, or similar
/// sympy-style names followed by digits), in order of appearance, duplicates kept.
std::vector<std::string_view> symbols_in(std::string_view expr);

}  // namespace gparity::model
