// The graph interpreter (interpreter.hpp): prepares every node once (op lookup, argument binding),
// then runs boxed calls over an environment of IValues, one per node, freed after its last use.

#include "core/runtime/interpreter/interpreter.hpp"

#include <ATen/Context.h>
#include <ATen/Dispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "core/model/ops/op_log.hpp"
#include "core/runtime/clock.hpp"
#include "core/runtime/interpreter/collectives.hpp"
#include "core/runtime/interpreter/detail.hpp"
#include "core/runtime/interpreter/inputs.hpp"
#include "core/runtime/interpreter/python_prims.hpp"
#include "core/runtime/recorder.hpp"

namespace gparity::runtime {

std::string torch_version() {
  return TORCH_VERSION;
}

std::optional<std::pair<std::string, std::string>> split_op_target(std::string_view target) {
  if (target.starts_with("torch.ops.")) target.remove_prefix(10);
  const auto first = target.find('.');
  const auto last = target.rfind('.');
  if (first == std::string_view::npos || first == last || first == 0 || last + 1 == target.size())
    return std::nullopt;
  const auto ns = target.substr(0, first);
  const auto name = target.substr(first + 1, last - first - 1);
  const auto overload = target.substr(last + 1);
  if (name.find('.') != std::string_view::npos) return std::nullopt;
  return std::pair{std::string(ns) + "::" + std::string(name),
                   overload == "default" ? "" : std::string(overload)};
}

// What a step of the program does. Outside the anonymous namespace: Interpreter::Impl::Step (a
// member of a class with linkage) holds one.
namespace interpreter_detail {
enum class StepKind { Placeholder, Op, Collective, GetItem, Arith, HigherOrder, Subgraph, Constant, Output };
}  // namespace interpreter_detail
using interpreter_detail::StepKind;

namespace {

using model::NodeKind;
using model::Value;
using model::ValueKind;

std::string strip_ops(std::string_view target) {
  if (target.starts_with("torch.ops.")) target.remove_prefix(10);
  return std::string(target);
}

}  // namespace

/// Node records whose CUDA hashes are still on the device (DeferredHashes): records go to the
/// sink in execution order once they are back, with one wait per run instead of one per node.
/// CUDA tensors wait in `queued` (kept alive) and are hashed in batches: one launch for many
/// nodes, because a launch per node costs more host time than a node's own kernels. A batch is
/// enqueued before any op that writes in place (so every tensor is hashed as its node left it),
/// before collectives, and when it reaches kBatchTensors tensors or InterpretOptions::batch_bytes
/// bytes.
///
/// With a side stream (InterpretOptions::hash_side_stream) batches are smaller (side_batch_bytes),
/// so that the hashes of the first nodes run while the later ones compute, and settle() makes
/// the graph's stream wait for them before an op overwrites what they read.
struct PendingRecords {
  static constexpr std::size_t kBatchTensors = 512;
  explicit PendingRecords(const InterpretOptions& o)
      : hashes(DeferredHashOptions{.xxh3 = o.node_xxh3,
                                   .spec = o.shard_spec,
                                   .side_stream = o.hash_side_stream,
                                   .side_share = o.side_share,
                                   .host_xxh3_chains = o.xxh3_host_chains}),
        batch_bytes(std::max<std::int64_t>(1, o.hash_side_stream ? o.side_batch_bytes : o.batch_bytes)) {}
  struct Entry {
    model::NodeRecord rec;
    std::optional<std::size_t> slot;  // position in hashes.collect(); none: already hashed
    bool output = false;              // one of the graph's outputs
  };
  DeferredHashes hashes;
  std::int64_t batch_bytes;
  std::vector<Entry> entries;
  std::vector<at::Tensor> queued;         // not yet enqueued, slots next_slot - queued.size() ...
  std::vector<std::uint8_t> queued_xxh3;  // per queued tensor: XXH3 too (--node-hash both)
  std::int64_t queued_bytes = 0;
  std::size_t next_slot = 0;  // slots handed out since the last collect(): > 0 while any waits
  RunProfile profile;

  [[nodiscard]] bool waiting() const noexcept { return next_slot > 0; }

  std::size_t queue(const at::Tensor& t, bool xxh3_too) {
    queued.push_back(t);
    queued_xxh3.push_back(xxh3_too ? 1 : 0);
    queued_bytes += static_cast<std::int64_t>(t.nbytes());
    const std::size_t slot = next_slot++;
    if (queued.size() >= kBatchTensors || queued_bytes >= batch_bytes) enqueue();
    return slot;
  }
  void enqueue() {
    if (queued.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    ++profile.batches;
    profile.tensors += queued.size();
    profile.bytes += queued_bytes;
    (void)hashes.enqueue(queued, queued_xxh3);
    profile.enqueue_ms += ms_since(t0);
    queued.clear();
    queued_xxh3.clear();
    queued_bytes = 0;
  }
  /// Before an op writes in place or a collective: every tensor queued so far is hashed as it is
  /// now, before the graph's stream goes on (it waits for a side stream's hashes).
  void settle() {
    enqueue();
    hashes.wait_on_device();
  }
  std::vector<BlockHashes> collect() {
    enqueue();
    next_slot = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto out = hashes.collect();
    profile.collect_ms += ms_since(t0);
    return out;
  }
};

struct Interpreter::Impl {
  struct Step {
    StepKind kind = StepKind::Op;
    model::NodeId node = model::kNoNode;
    std::optional<c10::OperatorHandle> op;
    std::vector<detail::BoundArg> args;
    std::size_t returns = 1;
    std::string name;  // collective / operator name
    bool legacy = false;
    std::vector<const Value*> values;       // collective / operator / higher-order operands
    std::unique_ptr<Impl> body;             // higher-order op
    std::vector<model::NodeId> free_after;  // env entries no longer needed after this step
    bool writes = false;                    // writes an argument in place (schema alias info)
    bool view = false;                      // its result may alias an argument: a view, no new bytes
    std::optional<std::size_t> alias_arg;   // a view's aliased argument (schema position)
    // Attention ops without dropout return their RNG-state outputs (philox_seed, philox_offset;
    // rng_state, unused) as uninitialized tensors: replay defines them as zero, or every execution would
    // hash different garbage. `dropout_arg` is the schema position of dropout_p.
    std::vector<std::size_t> rng_state_outputs;
    std::optional<std::size_t> dropout_arg;
    // empty, empty_like, empty_strided, new_empty, new_empty_strided, empty_permuted: the result
    // is uninitialized memory (whatever the allocator's block held), so every execution would
    // hash different bytes. Replay fills it as PyTorch's deterministic mode does
    // (torch.utils.deterministic.fill_uninitialized_memory): NaN, or the integer type's maximum.
    bool uninitialized_result = false;
  };

  const model::Graph& g;
  InterpretOptions o;
  std::vector<Step> steps;
  std::vector<c10::IValue> env;
  std::map<std::string, std::int64_t> symbols;
  std::size_t op_count = 0;
  // The placeholder values of the last bind (top level only), in placeholder order: reruns use
  // them as they are, so they keep their addresses (what a captured CUDA graph reads).
  std::vector<c10::IValue> bound;
  bool hash_now = true;               // o.hash, or the rerun's choice
  bool keep_values = false;           // no frees: every node's value outlives the run (hash_kept)
  bool keep_now = true;               // keep the collectives' results this run (o.keep_collectives)
  c10::IValue result;                 // the output of the last run
  PendingRecords* pending = nullptr;  // the top level's, shared with the subgraphs
  /// Where each node's tensors' hashes are (this run, until an op writes in place): getitem and
  /// the output take them from the node that made the tensor instead of hashing it again.
  struct HashRef {
    std::optional<std::size_t> slot;      // on the device, in the pending batch
    BlockHashes known;                    // on the CPU
    std::optional<model::NodeView> view;  // not hashed: a view's result, lying in view->base's tensor
    // The hashed tensor it lies in (itself when hashed): a later result that shares its storage
    // is a view of that tensor, recorded by where it lies in it.
    const void* storage = nullptr;
    std::int64_t base_offset = 0;
    std::vector<std::int64_t> base_stride;
    model::NodeId base_node = model::kNoNode;
    std::int64_t base_output = 0;
    bool xxh3 = false;  // carries XXH3 (besides the shard hash)
  };
  std::vector<std::map<std::int64_t, HashRef>> node_hashes;
  /// The nodes hashed when not every node is (InterpretOptions::every_node false; mark_wanted).
  std::vector<bool> wanted;
  std::unique_ptr<PendingRecords> own_pending;

  Impl(const model::Graph& graph, InterpretOptions options) : g(graph), o(std::move(options)) {}

  std::string source_of(const model::Node& n) const {
    if (n.source.known()) return std::string(g.str(n.source.file)) + ":" + std::to_string(n.source.line);
    if (n.line > 0)
      return (o.source.empty() ? std::string("graph") : o.source) + ":" + std::to_string(n.line);
    return {};
  }

  std::string where(const model::Node& n) const {
    std::string s = "graph \"" + o.label + "\", node \"" + std::string(g.str(n.name)) + "\" (" +
                    std::string(g.str(n.target)) + ")";
    const auto src = source_of(n);
    if (!src.empty()) s += " at " + src;
    return s;
  }

  [[noreturn]] void fail(const model::Node& n, const std::string& what) const {
    throw ReplayError(where(n) + ": " + what);
  }

  /// Runs `fn` for node `n`: whatever it throws becomes one ReplayError naming the node (an
  /// error a subgraph's node already named passes through as it is).
  template <typename Fn>
  decltype(auto) naming(const model::Node& n, Fn&& fn) const {
    try {
      return fn();
    } catch (const ReplayError& e) {
      const std::string msg = e.what();
      if (msg.starts_with("graph \"")) throw;
      fail(n, msg);
    } catch (const c10::Error& e) {
      fail(n, e.what_without_backtrace());
    } catch (const std::exception& e) {
      fail(n, e.what());
    }
  }

  void prepare() {
    steps.reserve(g.nodes.size());
    for (model::NodeId id = 0; id < g.nodes.size(); ++id) {
      Step s;
      s.node = id;
      naming(g.nodes[id], [&] { prepare_node(g.nodes[id], s); });
      if (s.kind != StepKind::Placeholder && s.kind != StepKind::Output && s.kind != StepKind::Subgraph)
        ++op_count;
      steps.push_back(std::move(s));
    }
    plan_frees();
    mark_wanted();
  }

  /// What a lazy pass hashes (InterpretOptions::every_node false): the output node and the nodes
  /// it names, the tensors collectives read (not wait_tensor's: a collective's result), the
  /// results of ops that write in place; then, walking back (arguments come before their
  /// users), what those records name: a getitem's source (it takes that node's hashes) and a
  /// view's aliased argument (the base it is recorded in). Each wanted node is then recorded
  /// exactly as a run hashing every node records it.
  void mark_wanted() {
    wanted.assign(g.nodes.size(), false);
    const auto want = [&](model::NodeId r) {
      if (r < wanted.size()) wanted[r] = true;
    };
    for (const auto& s : steps) {
      const auto& n = g.nodes[s.node];
      if (s.kind == StepKind::Output) {
        wanted[s.node] = true;
        for (const auto& a : n.args) model::for_each_ref(a, want);
      } else if (s.kind == StepKind::Collective && s.name != "wait_tensor") {
        for (const auto* v : s.values)
          if (v != nullptr) model::for_each_ref(*v, want);
      } else if (s.kind == StepKind::Op && s.writes) {
        wanted[s.node] = true;
      }
    }
    for (auto id = static_cast<std::int64_t>(steps.size()) - 1; id >= 0; --id) {
      const auto& s = steps[static_cast<std::size_t>(id)];
      if (!wanted[s.node]) continue;
      const auto& n = g.nodes[s.node];
      if (s.kind == StepKind::GetItem) want(n.args[0].node);
      if (s.kind == StepKind::Op && s.view && s.alias_arg && *s.alias_arg < s.args.size() &&
          s.args[*s.alias_arg].value != nullptr)
        model::for_each_ref(*s.args[*s.alias_arg].value, want);
    }
  }

  [[nodiscard]] bool hashes(const Step& s) const { return o.every_node || wanted[s.node]; }

  void plan_frees() {
    std::vector<std::size_t> last(g.nodes.size(), 0);
    std::vector<bool> used(g.nodes.size(), false);
    for (model::NodeId id = 0; id < g.nodes.size(); ++id) {
      const auto& n = g.nodes[id];
      const auto mark = [&](model::NodeId r) {
        if (r < g.nodes.size()) {
          last[r] = std::max<std::size_t>(last[r], id);
          used[r] = true;
        }
      };
      for (const auto& a : n.args) model::for_each_ref(a, mark);
      for (const auto& kw : n.kwargs) model::for_each_ref(kw.value, mark);
    }
    for (model::NodeId id = 0; id < g.nodes.size(); ++id)
      steps[used[id] ? last[id] : id].free_after.push_back(id);
  }

  void prepare_node(const model::Node& n, Step& s) {
    const auto target = strip_ops(g.str(n.target));
    switch (n.kind) {
      case NodeKind::Placeholder: s.kind = StepKind::Placeholder; return;
      case NodeKind::Output: s.kind = StepKind::Output; return;
      case NodeKind::GetAttr:
        if (g.find_subgraph(target)) {
          s.kind = StepKind::Subgraph;
          return;
        }
        s.kind = StepKind::Constant;  // from the inputs file, by attribute name
        return;
      case NodeKind::CallMethod:
        throw ReplayError("method call ." + target +
                          "() is not a registered op (replay runs ATen-level graphs: "
                          "AOT, post-grad, make_fx, torch.export)");
      case NodeKind::CallModule:
        throw ReplayError("call_module nodes are not supported; export the graph flattened");
      case NodeKind::Opaque:
        throw ReplayError("statement the FX reader kept as opaque text cannot run: " + target);
      case NodeKind::CallFunction: break;
    }
    if (target == "operator.getitem") {
      if (n.args.size() != 2 || n.args[0].kind != ValueKind::Node || n.args[1].kind != ValueKind::Int)
        throw ReplayError("operator.getitem takes a node and an integer index");
      s.kind = StepKind::GetItem;
      return;
    }
    if (target.starts_with("operator.")) {
      static const char* kOps[] = {"add", "sub", "mul", "floordiv", "truediv", "mod", "neg", "pow"};
      s.name = target.substr(9);
      bool known = false;
      for (const char* op : kOps) known = known || s.name == op;
      if (!known) throw ReplayError("Python operator " + target + " is not supported");
      s.kind = StepKind::Arith;
      for (const auto& a : n.args) s.values.push_back(&a);
      return;
    }
    if (target.starts_with("higher_order.")) return prepare_higher_order(n, s, target.substr(13));
    for (const char* prefix : {"_c10d_functional.", "c10d_functional."}) {
      const std::string_view p(prefix);
      if (!target.starts_with(p)) continue;
      const auto rest = target.substr(p.size());
      s.name = rest.substr(0, rest.rfind('.'));
      s.legacy = p[0] == 'c';
      const auto* params = detail::collective_params(s.name, s.legacy);
      if (!params) throw ReplayError("functional collective " + target + " is not supported");
      s.kind = StepKind::Collective;
      s.values.assign(params->size(), nullptr);
      if (n.args.size() > params->size()) throw ReplayError("too many arguments for " + target);
      for (std::size_t i = 0; i < n.args.size(); ++i) s.values[i] = &n.args[i];
      for (const auto& kw : n.kwargs) {
        const auto name = g.str(kw.name);
        std::size_t i = 0;
        while (i < params->size() && (*params)[i] != name) ++i;
        if (i == params->size()) throw ReplayError("unknown keyword argument \"" + std::string(name) + "\"");
        s.values[i] = &kw.value;
      }
      if (!s.values[0]) throw ReplayError("missing argument \"" + (*params)[0] + "\"");
      return;
    }
    const auto name = split_op_target(target);
    if (!name)
      throw ReplayError("\"" + target +
                        "\" is not a registered op (namespace.op.overload): replay runs ATen-level "
                        "graphs (AOT, post-grad, make_fx, torch.export)");
    const auto handle = c10::Dispatcher::singleton().findSchema({name->first, name->second});
    if (!handle)
      throw ReplayError("op " + name->first + (name->second.empty() ? "" : "." + name->second) +
                        " is not registered in this LibTorch (" + TORCH_VERSION + ")");
    s.kind = StepKind::Op;
    s.op = *handle;
    const auto& schema = handle->schema();
    s.args = detail::bind_arguments(schema, g, n);
    for (const auto& a : schema.arguments())
      s.writes = s.writes || (a.alias_info() != nullptr && a.alias_info()->isWrite());
    s.view = !s.writes && !schema.returns().empty();
    for (const auto& r : schema.returns()) s.view = s.view && returns_alias(r);
    // _unsafe_view's schema declares no alias, but its result is its argument's memory.
    if (schema.name() == "aten::_unsafe_view") s.view = true;
    if (s.view) s.alias_arg = aliased_argument(schema);
    s.returns = schema.returns().size();
    note_rng_state_outputs(schema, s);
    s.uninitialized_result = s.returns == 1 && model::ops::allocates_uninitialized(schema.name());
  }

  /// A return annotated as an alias of an argument: `Tensor(a)`, or a list of them (`Tensor(a)[]`).
  static bool returns_alias(const c10::Argument& r) {
    const auto* alias = r.alias_info();
    if (alias == nullptr) return false;
    if (alias->isWrite()) return false;
    if (!alias->beforeSets().empty()) return true;
    for (const auto& c : alias->containedTypes())
      if (!c.isWrite() && !c.beforeSets().empty()) return true;
    return false;
  }

  /// The argument whose alias set a view's returns share (`Tensor(a) self` for `-> Tensor(a)`);
  /// the first annotated argument, else the first one, when the sets do not say.
  static std::optional<std::size_t> aliased_argument(const c10::FunctionSchema& schema) {
    std::set<std::string> sets;
    const auto add = [&](const c10::AliasInfo& a) {
      for (const auto& sym : a.beforeSets()) sets.insert(sym.toQualString());
    };
    for (const auto& r : schema.returns()) {
      if (r.alias_info() == nullptr) continue;
      add(*r.alias_info());
      for (const auto& c : r.alias_info()->containedTypes()) add(c);
    }
    const auto& args = schema.arguments();
    std::optional<std::size_t> annotated;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto* a = args[i].alias_info();
      if (a == nullptr || a->isWrite()) continue;
      if (!annotated) annotated = i;
      for (const auto& sym : a->beforeSets())
        if (sets.contains(sym.toQualString())) return i;
    }
    if (annotated) return annotated;
    return args.empty() ? std::nullopt : std::optional<std::size_t>(0);
  }

  static void note_rng_state_outputs(const c10::FunctionSchema& schema, Step& s) {
    const auto& args = schema.arguments();
    for (std::size_t i = 0; i < args.size(); ++i)
      if (args[i].name() == "dropout_p") s.dropout_arg = i;
    if (!s.dropout_arg) return;
    const auto& rets = schema.returns();
    for (std::size_t i = 0; i < rets.size(); ++i) {
      const auto& r = rets[i].name();
      // 2.11's flash attention names its seed and offset rng_state and unused.
      if (r == "philox_seed" || r == "philox_offset" || r == "rng_state" || r == "unused")
        s.rng_state_outputs.push_back(i);
    }
  }

  void prepare_higher_order(const model::Node& n, Step& s, const std::string& op) {
    // Operand layout per op: where the body is, where its operands start.
    std::size_t body_at = 0, first_operand = 0;
    if (op == "invoke_subgraph") {
      body_at = 0;
      first_operand = 2;
    } else if (op == "wrap_with_set_grad_enabled") {
      body_at = 1;
      first_operand = 2;
    } else if (op == "wrap_with_autocast") {
      // (device_type, dtype, enabled, cache_enabled, body, *args): the body runs as it is only when
      // autocast is off; otherwise its casts are implicit and a replay would differ.
      if (n.args.size() < 5 || n.args[2].kind != ValueKind::Bool || n.args[2].i != 0)
        throw ReplayError("higher-order op wrap_with_autocast with autocast enabled is not supported");
      body_at = 4;
      first_operand = 5;
    } else {
      throw ReplayError("higher-order op " + op +
                        " is not supported (replay runs invoke_subgraph, "
                        "wrap_with_set_grad_enabled and wrap_with_autocast with autocast off)");
    }
    if (n.args.size() <= body_at || n.args[body_at].kind != ValueKind::Node)
      throw ReplayError("higher-order op " + op + " has no subgraph argument");
    const auto& body_node = g.node(n.args[body_at].node);
    const auto* body = g.find_subgraph(g.str(body_node.target));
    if (!body)
      throw ReplayError("subgraph \"" + std::string(g.str(body_node.target)) + "\" is not in the graph");
    InterpretOptions bo = o;
    bo.label = o.label + "/" + std::string(g.str(body_node.target));
    s.body = std::make_unique<Impl>(*body, bo);
    s.body->prepare();
    s.kind = StepKind::HigherOrder;
    s.name = op;
    for (std::size_t i = first_operand; i < n.args.size(); ++i) s.values.push_back(&n.args[i]);
  }

  // ---- running ----

  detail::BindContext ctx() const { return {&g, &env, &symbols}; }

  void bind_symbols(InputSource& inputs) {
    symbols.insert(o.symbols.begin(), o.symbols.end());
    if (!inputs.has_file()) return;
    for (const auto& n : g.nodes) {
      if (n.kind != NodeKind::Placeholder || n.meta.kind != model::TensorMeta::Kind::Tensor) continue;
      bool symbolic = false;
      for (const auto& d : n.meta.sizes) symbolic = symbolic || d.is_symbolic();
      if (!symbolic) continue;
      const auto t = inputs.from_file(g.str(n.name), "cpu");
      if (!t || t->dim() != static_cast<std::int64_t>(n.meta.sizes.size())) continue;
      for (std::size_t i = 0; i < n.meta.sizes.size(); ++i)
        if (n.meta.sizes[i].is_symbolic())
          symbols.emplace(std::string(g.str(n.meta.sizes[i].expr)), t->size(i));
    }
  }

  std::int64_t dim_value(const model::Node& n, const model::Dim& d) {
    if (!d.is_symbolic()) return d.value;
    const std::string e(g.str(d.expr));
    if (const auto it = symbols.find(e); it != symbols.end()) return it->second;
    fail(n, "size " + e + " is not bound (give --sym " + e + "=VALUE or the input in --inputs)");
  }

  c10::IValue placeholder(const model::Node& n, InputSource& inputs) {
    const auto name = g.str(n.name);
    switch (n.meta.kind) {
      case model::TensorMeta::Kind::Tensor: {
        std::vector<std::int64_t> sizes, strides;
        for (const auto& d : n.meta.sizes) sizes.push_back(dim_value(n, d));
        bool concrete = n.meta.has_strides;
        for (const auto& d : n.meta.strides) concrete = concrete && !d.is_symbolic();
        if (concrete)
          for (const auto& d : n.meta.strides) strides.push_back(d.value);
        return inputs.tensor(name, n.meta, sizes, strides, o.device, where(n));
      }
      case model::TensorMeta::Kind::Sym: {
        const std::string e(g.str(n.meta.sym));
        if (const auto it = symbols.find(e); it != symbols.end()) return c10::IValue(it->second);
        fail(n, "symbolic input " + e + " is not bound (give --sym " + e + "=VALUE)");
      }
      default:
        if (auto t = inputs.from_file(name, o.device)) return c10::IValue(*t);
        fail(n, "input \"" + std::string(name) + "\" has no tensor annotation and is not in --inputs");
    }
  }

  c10::IValue arith(const Step& s) {
    std::vector<c10::IValue> a;
    for (const auto* v : s.values) a.push_back(detail::plain_value(*v, ctx()));
    const auto num = [](const c10::IValue& v) -> std::optional<std::int64_t> {
      if (v.isInt()) return v.toInt();
      if (v.isBool()) return v.toBool() ? 1 : 0;
      return std::nullopt;
    };
    if (s.name == "neg" && a.size() == 1 && num(a[0])) return c10::IValue(-*num(a[0]));
    if (a.size() != 2 || !num(a[0]) || !num(a[1]))
      throw ReplayError("operator." + s.name + " runs on integers (symbolic sizes) only");
    const auto x = *num(a[0]), y = *num(a[1]);
    if (s.name == "add") return c10::IValue(x + y);
    if (s.name == "sub") return c10::IValue(x - y);
    if (s.name == "mul") return c10::IValue(x * y);
    if (s.name == "pow") {
      std::int64_t r = 1;
      for (std::int64_t i = 0; i < y; ++i) r *= x;
      return c10::IValue(r);
    }
    if (y == 0) throw ReplayError("division by zero in operator." + s.name);
    if (s.name == "truediv") return c10::IValue(static_cast<double>(x) / static_cast<double>(y));
    const auto q = x / y - ((x % y != 0 && ((x < 0) != (y < 0))) ? 1 : 0);  // Python floor division
    if (s.name == "floordiv") return c10::IValue(q);
    return c10::IValue(x - q * y);
  }

  c10::IValue getitem(const model::Node& n) {
    const auto& src = env[n.args[0].node];
    const auto i = n.args[1].i;
    const auto pick = [&](std::size_t size, auto&& at) -> c10::IValue {
      const auto k = i < 0 ? i + static_cast<std::int64_t>(size) : i;
      if (k < 0 || k >= static_cast<std::int64_t>(size))
        fail(n, "index " + std::to_string(i) + " is out of range for a result of " + std::to_string(size));
      return at(static_cast<std::size_t>(k));
    };
    if (src.isTuple()) {
      const auto& e = src.toTupleRef().elements();
      return pick(e.size(), [&](std::size_t k) { return e[k]; });
    }
    if (src.isList()) {
      const auto l = src.toListRef();
      return pick(l.size(), [&](std::size_t k) { return l[k]; });
    }
    fail(n, "operator.getitem on a result that is not a tuple or list");
  }

  /// What PyTorch's deterministic mode writes into uninitialized memory.
  static void fill_deterministic(at::Tensor t) {
    if (t.is_floating_point() || t.is_complex()) {
      t.fill_(std::numeric_limits<double>::quiet_NaN());
    } else if (t.scalar_type() == at::kBool) {
      t.fill_(true);
    } else {
      AT_DISPATCH_INTEGRAL_TYPES(t.scalar_type(), "fill_deterministic",
                                 [&] { t.fill_(std::numeric_limits<scalar_t>::max()); });
    }
  }

  c10::IValue call(Step& s, std::vector<c10::IValue>& stack) {
    stack.clear();
    detail::push_arguments(s.args, ctx(), stack);
    const bool no_dropout = !s.rng_state_outputs.empty() && *s.dropout_arg < stack.size() &&
                            stack[*s.dropout_arg].isDouble() && stack[*s.dropout_arg].toDouble() == 0.0;
    s.op->callBoxed(stack);
    if (no_dropout) {
      for (const auto i : s.rng_state_outputs)
        if (i < stack.size() && stack[i].isTensor() && stack[i].toTensor().defined())
          stack[i].toTensor().zero_();
    }
    if (s.uninitialized_result && !stack.empty() && stack[0].isTensor() && stack[0].toTensor().defined())
      fill_deterministic(stack[0].toTensor());
    if (s.returns == 1) return std::move(stack[0]);
    if (s.returns == 0) return {};
    return c10::IValue(c10::ivalue::Tuple::create(std::vector<c10::IValue>(stack.begin(), stack.end())));
  }

  c10::IValue higher_order(Step& s, InputSource& inputs, const NodeSink& sink) {
    std::vector<c10::IValue> operands;
    for (const auto* v : s.values) operands.push_back(detail::plain_value(*v, ctx()));
    s.body->hash_now = hash_now;
    s.body->keep_now = keep_now;
    s.body->pending = pending;
    auto out = s.body->execute(inputs, sink, &operands);
    return out;
  }

  static void tensors_in(const c10::IValue& v, std::vector<at::Tensor>& out, std::vector<std::int64_t>& index,
                         std::int64_t& k) {
    if (v.isTensor()) {
      if (v.toTensor().defined()) {
        out.push_back(v.toTensor());
        index.push_back(k);
      }
      ++k;
    } else if (v.isTuple()) {
      for (const auto& e : v.toTupleRef().elements()) tensors_in(e, out, index, k);
    } else if (v.isList()) {
      for (const auto& e : v.toListRef()) tensors_in(e, out, index, k);
    } else {
      ++k;
    }
  }

  void forget_hashes() {
    for (auto& m : node_hashes) m.clear();
  }

  /// The hash of output position `k` of a tensor already hashed this run: the node a getitem
  /// takes it from, or the node an output element names; nullptr: hash it.
  const HashRef* known_hash(const model::Node& n, model::NodeId id, std::int64_t k) const {
    const auto at = [&](model::NodeId node, std::int64_t pos) -> const HashRef* {
      if (node >= node_hashes.size()) return nullptr;
      const auto it = node_hashes[node].find(pos);
      return it == node_hashes[node].end() ? nullptr : &it->second;
    };
    if (n.kind == NodeKind::Output) {
      if (n.args.empty()) return nullptr;
      const auto& out = n.args[0];
      if (out.kind == ValueKind::Node) return k == 0 ? at(out.node, 0) : nullptr;
      if (k < 0 || static_cast<std::size_t>(k) >= out.items.size()) return nullptr;
      const auto& item = out.items[static_cast<std::size_t>(k)];
      return item.kind == ValueKind::Node ? at(item.node, 0) : nullptr;
    }
    if (id < steps.size() && steps[id].kind == StepKind::GetItem && k == 0)
      return at(n.args[0].node, n.args[1].i);
    return nullptr;
  }

  void record(const model::Node& n, model::NodeId id, const std::string& op, const c10::IValue& v,
              const NodeSink& sink, std::vector<model::NodeRecord>* keep = nullptr,
              const HashRef* alias_of = nullptr, const HashRef* same_bytes = nullptr) {
    const auto t0 = std::chrono::steady_clock::now();
    record_tensors(n, id, op, v, sink, keep, alias_of, same_bytes);
    pending->profile.record_ms += ms_since(t0);
  }

  static const void* storage_of(const at::Tensor& t) {
    return t.has_storage() ? static_cast<const void*>(t.storage().unsafeGetStorageImpl()) : nullptr;
  }

  /// `t` as a view lying in the hashed tensor `in` lies in (the aliased argument's, which is
  /// alive: it is read by this very node), when it shares that tensor's storage; nullopt when the
  /// op copied after all (a reshape that could not alias).
  static std::optional<HashRef> view_in(const at::Tensor& t, const HashRef& in) {
    if (in.storage == nullptr || storage_of(t) != in.storage) return std::nullopt;
    HashRef ref = in;
    ref.slot.reset();
    ref.known = {};
    ref.xxh3 = false;
    model::NodeView& v = ref.view.emplace();
    v.base_output = in.base_output;
    v.offset = t.storage_offset() - in.base_offset;
    v.stride = t.strides().vec();
    v.base_stride = in.base_stride;
    return ref;
  }

  void record_tensors(const model::Node& n, model::NodeId id, const std::string& op, const c10::IValue& v,
                      const NodeSink& sink, std::vector<model::NodeRecord>* keep, const HashRef* alias_of,
                      const HashRef* same_bytes) {
    std::vector<at::Tensor> ts;
    std::vector<std::int64_t> index;
    std::int64_t k = 0;
    tensors_in(v, ts, index, k);
    if (ts.empty()) return;
    if (node_hashes.size() < g.nodes.size()) node_hashes.resize(g.nodes.size());
    std::vector<at::Tensor> cpu;
    std::vector<std::optional<HashRef>> known(ts.size());
    for (std::size_t i = 0; i < ts.size(); ++i) {
      if (const auto* ref = known_hash(n, id, index[i])) known[i] = *ref;
      if (!known[i] && alias_of) known[i] = view_in(ts[i], *alias_of);
      if (!known[i] && same_bytes && ts.size() == 1) {
        known[i] = *same_bytes;
        ++pending->profile.same_bytes;
      }
      if (!known[i] && !ts[i].is_cuda()) cpu.push_back(ts[i]);
    }
    const auto cpu_hashes = hash_blocks(cpu, {}, {}, o.shard_spec);
    pending->profile.tensors += cpu.size();
    for (const auto& t : cpu) pending->profile.bytes += static_cast<std::int64_t>(t.nbytes());
    std::size_t next_cpu = 0;
    const auto src = source_of(n);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      PendingRecords::Entry e;
      auto& r = e.rec;
      r.graph = o.label;
      r.node = std::string(g.str(n.name));
      r.index = id;
      r.op = op;
      r.source = src;
      r.output = index[i];
      HashRef ref;
      if (known[i]) {
        // A getitem or output element takes the hashes of the node that made its tensor (or is
        // recorded as the view that node was); a view lies in its base, hashed where that was made.
        ref = std::move(*known[i]);
      } else {
        if (ts[i].is_cuda()) {
          ref.xxh3 = o.node_xxh3;
          ref.slot = pending->queue(ts[i], o.node_xxh3);
        } else {
          ref.known = cpu_hashes[next_cpu++];
          ref.xxh3 = true;  // hash_blocks computes both on the CPU
        }
        ref.storage = storage_of(ts[i]);
        ref.base_offset = ref.storage ? ts[i].storage_offset() : 0;
        ref.base_stride = ts[i].strides().vec();
        ref.base_node = id;
        ref.base_output = index[i];
      }
      if (ref.view) {
        r.view = ref.view;
        if (ref.base_node < g.nodes.size()) r.view->base = std::string(g.str(g.nodes[ref.base_node].name));
      }
      r.has_shard = !ref.view;
      r.shard_spec = static_cast<std::uint8_t>(o.shard_spec);
      r.has_xxh3 = ref.xxh3 && o.node_xxh3 && !ref.view;
      e.slot = ref.slot;
      if (!ref.slot) {
        r.xxh3 = r.has_xxh3 ? ref.known.xxh3 : 0;
        r.shard = ref.known.shard;
      }
      node_hashes[id][index[i]] = std::move(ref);
      try {
        r.dtype = trace_dtype(ts[i]);
      } catch (const std::exception&) {
        continue;  // a dtype traces cannot name (complex32, ...): not recorded
      }
      r.shape = ts[i].sizes().vec();
      e.output = keep != nullptr;
      pending->entries.push_back(std::move(e));
    }
    // On the CPU nothing waits: records go out as they come unless device hashes are pending.
    if (!pending->waiting()) flush(sink, keep);
  }

  /// Sends every pending record to `sink` (and the outputs' to `outputs`), in order, once the
  /// device's hashes are back.
  void flush(const NodeSink& sink, std::vector<model::NodeRecord>* outputs) {
    const auto hashes = pending->waiting() ? pending->collect() : std::vector<BlockHashes>{};
    for (auto& e : pending->entries) {
      if (e.slot) {
        e.rec.xxh3 = e.rec.has_xxh3 ? hashes.at(*e.slot).xxh3 : 0;
        e.rec.shard = hashes.at(*e.slot).shard;
      }
      if (sink) sink(e.rec);
      if (e.output && outputs) outputs->push_back(std::move(e.rec));
    }
    pending->entries.clear();
  }

  /// Makes the placeholder values from `inputs` (and binds the symbols) for the runs that follow.
  void bind(InputSource& inputs) {
    symbols.clear();
    bind_symbols(inputs);
    bound.clear();
    for (const auto& s : steps) {
      if (s.kind != StepKind::Placeholder) continue;
      const auto& n = g.nodes[s.node];
      bound.push_back(naming(n, [&] { return placeholder(n, inputs); }));
    }
  }

  /// Runs the graph: placeholders from `operands` (a subgraph's, or the bound values); returns
  /// the output.
  c10::IValue execute(InputSource& inputs, const NodeSink& sink, const std::vector<c10::IValue>* operands,
                      std::vector<model::NodeRecord>* outputs = nullptr) {
    env.assign(g.nodes.size(), c10::IValue());
    forget_hashes();  // a subgraph runs once per call
    std::vector<c10::IValue> stack;
    std::size_t next_operand = 0;
    result = c10::IValue();
    for (auto& s : steps) {
      const auto& n = g.nodes[s.node];
      naming(n, [&] {
        switch (s.kind) {
          case StepKind::Placeholder:
            if (next_operand >= operands->size())
              fail(n, "the subgraph has more inputs than its caller passes");
            env[s.node] = (*operands)[next_operand++];
            break;
          case StepKind::Op:
            if (s.writes && pending) pending->settle();  // hash what it overwrites first
            if (s.writes) forget_hashes();
            env[s.node] = call(s, stack);
            break;
          case StepKind::GetItem: env[s.node] = getitem(n); break;
          case StepKind::Arith: env[s.node] = arith(s); break;
          case StepKind::Collective: {
            if (pending) pending->settle();
            forget_hashes();
            std::vector<c10::IValue> args;
            for (const auto* v : s.values) args.push_back(v ? detail::plain_value(*v, ctx()) : c10::IValue());
            if (o.take_collectives != nullptr) {
              env[s.node] = detail::take_collective(*o.take_collectives, s.name, s.legacy, args);
            } else {
              env[s.node] = detail::run_collective(o.comm, s.name, s.legacy, args);
              if (o.keep_collectives != nullptr && keep_now)
                detail::keep_collective(*o.keep_collectives, s.name, s.legacy, args, env[s.node]);
            }
            break;
          }
          case StepKind::HigherOrder: env[s.node] = higher_order(s, inputs, sink); break;
          case StepKind::Subgraph: break;
          case StepKind::Constant:
            if (auto t = inputs.from_file(g.str(n.target), o.device)) {
              env[s.node] = *t;
            } else {
              fail(n, "attribute \"" + std::string(g.str(n.target)) + "\" is not in --inputs");
            }
            break;
          case StepKind::Output:
            result = n.args.empty() ? c10::IValue() : detail::plain_value(n.args[0], ctx());
            break;
        }
      });
      if (hash_now && hashes(s)) record_step(s, sink, outputs);
      if (!keep_values)
        for (const auto id : s.free_after) env[id] = c10::IValue();
    }
    return result;
  }

  void record_step(const Step& s, const NodeSink& sink, std::vector<model::NodeRecord>* outputs) {
    const auto& n = g.nodes[s.node];
    if (s.kind == StepKind::Output) {
      record(n, s.node, "output", result, sink, outputs);
    } else if (s.kind != StepKind::Subgraph) {
      record(n, s.node, n.kind == NodeKind::Placeholder ? "placeholder" : strip_ops(g.str(n.target)),
             env[s.node], sink, nullptr, o.view_hashes ? nullptr : aliased_input(s), same_bytes_as_input(s));
    }
  }

  /// A view op's aliased argument, as hashed (or recorded as a view) this run: its result lies in
  /// the same base tensor. nullptr: not a view op, or the argument's hashes are gone (an op wrote
  /// in place since; then the view is hashed).
  const HashRef* aliased_input(const Step& s) const {
    if (!s.view || !s.alias_arg || *s.alias_arg >= s.args.size()) return nullptr;
    const auto* v = s.args[*s.alias_arg].value;
    if (v == nullptr || v->kind != ValueKind::Node || v->node >= node_hashes.size()) return nullptr;
    const auto it = node_hashes[v->node].find(0);
    return it == node_hashes[v->node].end() ? nullptr : &it->second;
  }

  /// The hashes of the first argument when an op's single result is exactly its bytes: both
  /// contiguous, same start, dtype and element count (a view, `_unsafe_view`, a `reshape` or
  /// `contiguous` that copied nothing). XXH3 and the shard hash depend on nothing else, so the
  /// result takes the argument's hashes instead of reading the bytes again. The argument is
  /// alive here, so its address cannot have been reused, and an op that writes in place has
  /// already dropped its arguments' hashes (forget_hashes).
  const HashRef* same_bytes_as_input(const Step& s) const {
    const auto& n = g.nodes[s.node];
    if (s.kind != StepKind::Op || s.returns != 1 || n.args.empty() || n.args[0].kind != ValueKind::Node)
      return nullptr;
    const auto base = n.args[0].node;
    if (base >= env.size() || base >= node_hashes.size() || !env[base].isTensor() || !env[s.node].isTensor())
      return nullptr;
    const auto& a = env[base].toTensor();
    const auto& r = env[s.node].toTensor();
    if (!a.defined() || !r.defined() || a.numel() == 0 || a.data_ptr() != r.data_ptr() ||
        a.scalar_type() != r.scalar_type() || a.numel() != r.numel() || a.device() != r.device() ||
        !a.is_contiguous() || !r.is_contiguous())
      return nullptr;
    const auto it = node_hashes[base].find(0);
    return it == node_hashes[base].end() || it->second.view ? nullptr : &it->second;
  }

  /// Top-level run on the bound placeholder values.
  std::vector<model::NodeRecord> run_bound(InputSource& inputs, const NodeSink& sink, bool reseed) {
    // Graphs are replayed without autograd: inference mode skips the autograd and view-tracking
    // dispatch keys (the same kernels, so the same bits).
    const c10::InferenceMode no_autograd;
    if (reseed) at::manual_seed(o.rng_seed);
    for (auto* c : {keep_now ? o.keep_collectives : nullptr, o.take_collectives})
      if (c != nullptr) detail::restart_collectives(*c);
    std::vector<model::NodeRecord> outputs;
    // With hashes on a side stream, the graph runs on a high-priority stream: its kernels go
    // before the hashes' when both wait for an SM.
    const PriorityStreamScope graph_stream(o.device, hash_now && o.hash_side_stream);
    with_pending([&] { execute(inputs, sink, &bound, &outputs); }, sink, &outputs);
    return outputs;
  }

  /// Runs `fn` with a record queue (the top level's) and flushes it after.
  template <typename Fn>
  void with_pending(Fn&& fn, const NodeSink& sink, std::vector<model::NodeRecord>* outputs) {
    if (!own_pending) own_pending = std::make_unique<PendingRecords>(o);
    pending = own_pending.get();
    own_pending->entries.clear();
    (void)own_pending->collect();  // drops what an interrupted run left
    own_pending->profile = {};
    forget_hashes();
    fn();
    flush(sink, outputs);
  }
};

Interpreter::Interpreter(const model::Graph& graph, InterpretOptions options)
    : impl_(std::make_unique<Impl>(graph, std::move(options))) {
  register_python_prims();  // before prepare() looks the graph's ops up
  impl_->prepare();
}

Interpreter::~Interpreter() = default;

std::vector<model::NodeRecord> Interpreter::run(InputSource& inputs, const NodeSink& sink) {
  bind_inputs(inputs);
  return rerun(inputs, {.hash = impl_->o.hash}, sink);
}

std::vector<model::NodeRecord> Interpreter::run_tensors(std::span<const at::Tensor> inputs,
                                                        const NodeSink& sink) {
  impl_->symbols.clear();
  impl_->bound.assign(inputs.begin(), inputs.end());
  runtime::InputSource none(InputOptions{});
  return rerun(none, {.hash = impl_->o.hash}, sink);
}

void Interpreter::bind_inputs(InputSource& inputs) {
  impl_->bind(inputs);
}

std::vector<model::NodeRecord> Interpreter::rerun(InputSource& inputs, const RerunOptions& options,
                                                  const NodeSink& sink) {
  impl_->hash_now = options.hash;
  impl_->keep_values = options.keep_values;
  impl_->keep_now = options.keep_collectives;
  return impl_->run_bound(inputs, sink, options.reseed);
}

std::vector<model::NodeRecord> Interpreter::hash_kept(const NodeSink& sink) {
  if (!impl_->keep_values) throw std::logic_error("Interpreter::hash_kept without a rerun that kept values");
  const c10::InferenceMode no_autograd;
  std::vector<model::NodeRecord> outputs;
  impl_->with_pending(
      [&] {
        for (const auto& s : impl_->steps)
          if (impl_->hashes(s)) impl_->record_step(s, sink, &outputs);
      },
      sink, &outputs);
  return outputs;
}

void Interpreter::reseed() {
  at::manual_seed(impl_->o.rng_seed);
}

void Interpreter::release_values() {
  impl_->env.clear();
  impl_->result = c10::IValue();
  impl_->keep_values = false;
}

std::vector<std::pair<std::string, at::Tensor>> Interpreter::input_tensors() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::size_t k = 0;
  for (const auto& s : impl_->steps) {
    if (s.kind != StepKind::Placeholder) continue;
    if (k >= impl_->bound.size()) break;
    const auto& v = impl_->bound[k++];
    if (v.isTensor() && v.toTensor().defined())
      out.emplace_back(std::string(impl_->g.str(impl_->g.nodes[s.node].name)), v.toTensor());
  }
  return out;
}

std::vector<std::string> Interpreter::mutated_inputs() const {
  const auto& g = impl_->g;
  std::vector<std::string> out;
  const auto add = [&](model::NodeId id) {
    if (id >= g.nodes.size() || g.nodes[id].kind != NodeKind::Placeholder) return;
    std::string name(g.str(g.nodes[id].name));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  };
  for (const auto& s : impl_->steps) {
    if (s.kind != StepKind::Op) continue;
    const auto& args = s.op->schema().arguments();
    for (std::size_t i = 0; i < args.size() && i < s.args.size(); ++i) {
      const auto* alias = args[i].alias_info();
      if (alias && alias->isWrite() && s.args[i].value) model::for_each_ref(*s.args[i].value, add);
    }
  }
  return out;
}

std::map<std::string, std::int64_t> Interpreter::bound_symbols() const {
  return impl_->symbols;
}

RunProfile Interpreter::last_run_profile() const {
  return impl_->own_pending ? impl_->own_pending->profile : RunProfile{};
}

std::size_t Interpreter::op_nodes() const noexcept {
  return impl_->op_count;
}

}  // namespace gparity::runtime
