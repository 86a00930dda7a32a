// Binding graph argument values to c10 schemas (detail.hpp).

#include <cerrno>
#include <cstdlib>

#include "core/runtime/dtype_map.hpp"
#include "core/runtime/interpreter/detail.hpp"
#include "core/runtime/interpreter/interpreter.hpp"

namespace gparity::runtime::detail {
namespace {

using model::Value;
using model::ValueKind;

[[noreturn]] void unfit(const model::Graph& g, const Value& v, const c10::TypePtr& type) {
  throw ReplayError("value " + std::string(model::value_kind_name(v.kind)) +
                    (v.s != model::kEmptyStr ? " \"" + std::string(g.str(v.s)) + "\"" : std::string()) +
                    " does not fit type " + type->str());
}

double parse_float(const model::Graph& g, const Value& v) {
  const std::string text(g.str(v.s));
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0')
    throw ReplayError("float literal \"" + text + "\" is not a number");
  return d;
}

std::int64_t layout_code(std::string_view s) {
  if (s.starts_with("torch.")) s.remove_prefix(6);
  if (s == "strided") return static_cast<std::int64_t>(c10::kStrided);
  if (s == "sparse_coo") return static_cast<std::int64_t>(c10::kSparse);
  if (s == "_mkldnn") return static_cast<std::int64_t>(c10::kMkldnn);
  if (s == "sparse_csr") return static_cast<std::int64_t>(c10::kSparseCsr);
  throw ReplayError("unknown layout \"" + std::string(s) + "\"");
}

std::int64_t memory_format_code(std::string_view s) {
  if (s.starts_with("torch.")) s.remove_prefix(6);
  if (s == "contiguous_format") return static_cast<std::int64_t>(c10::MemoryFormat::Contiguous);
  if (s == "preserve_format") return static_cast<std::int64_t>(c10::MemoryFormat::Preserve);
  if (s == "channels_last") return static_cast<std::int64_t>(c10::MemoryFormat::ChannelsLast);
  if (s == "channels_last_3d") return static_cast<std::int64_t>(c10::MemoryFormat::ChannelsLast3d);
  throw ReplayError("unknown memory format \"" + std::string(s) + "\"");
}

const c10::IValue& node_value(const Value& v, const BindContext& ctx) {
  if (!ctx.env || v.node >= ctx.env->size()) throw ReplayError("reference to a node that has not run");
  return (*ctx.env)[v.node];
}

std::int64_t symbol_value(const Value& v, const BindContext& ctx) {
  const std::string name(ctx.graph->str(v.s));
  if (ctx.symbols)
    if (const auto it = ctx.symbols->find(name); it != ctx.symbols->end()) return it->second;
  throw ReplayError("symbolic value \"" + name + "\" is not bound by the inputs' shapes (give --sym " + name +
                    "=VALUE)");
}

std::int64_t to_int(const Value& v, const BindContext& ctx, const c10::TypePtr& type) {
  switch (v.kind) {
    case ValueKind::Int:
    case ValueKind::Bool: return v.i;
    case ValueKind::DType: {
      const auto st = to_scalar_type(static_cast<model::DType>(v.i));
      if (!st)
        throw ReplayError("dtype " + std::string(model::dtype_name(static_cast<model::DType>(v.i))) +
                          " is not known to this LibTorch");
      return static_cast<std::int64_t>(*st);
    }
    case ValueKind::Layout: return layout_code(ctx.graph->str(v.s));
    case ValueKind::MemoryFormat: return memory_format_code(ctx.graph->str(v.s));
    case ValueKind::Symbolic: return symbol_value(v, ctx);
    case ValueKind::Node: {
      const auto& iv = node_value(v, ctx);
      if (iv.isInt()) return iv.toInt();
      if (iv.isBool()) return iv.toBool() ? 1 : 0;
      if (iv.isTensor() && iv.toTensor().numel() == 1 && !at::isFloatingType(iv.toTensor().scalar_type()))
        return iv.toTensor().item<std::int64_t>();
      throw ReplayError("node " + std::string(ctx.graph->node_name(v.node)) + " gives " + iv.tagKind() +
                        " where " + type->str() + " is expected");
    }
    default: unfit(*ctx.graph, v, type);
  }
}

c10::IValue scalar_value(const Value& v, const BindContext& ctx, const c10::TypePtr& type) {
  switch (v.kind) {
    case ValueKind::Int: return c10::IValue(v.i);
    case ValueKind::Bool: return c10::IValue(v.i != 0);
    case ValueKind::Float: return c10::IValue(parse_float(*ctx.graph, v));
    case ValueKind::Symbolic: return c10::IValue(symbol_value(v, ctx));
    case ValueKind::Node: {
      const auto& iv = node_value(v, ctx);
      if (iv.isInt() || iv.isDouble() || iv.isBool()) return iv;
      if (iv.isTensor() && iv.toTensor().numel() == 1) return c10::IValue(iv.toTensor().item());
      throw ReplayError("node " + std::string(ctx.graph->node_name(v.node)) + " gives " + iv.tagKind() +
                        " where a number is expected");
    }
    default: unfit(*ctx.graph, v, type);
  }
}

template <typename T, typename F>
c10::IValue typed_list(const Value& v, F&& convert) {
  c10::List<T> out;
  out.reserve(v.items.size());
  for (const auto& item : v.items) out.push_back(convert(item));
  return c10::IValue(std::move(out));
}

bool is_sequence(const Value& v) {
  return v.kind == ValueKind::List || v.kind == ValueKind::Tuple;
}

}  // namespace

bool needs_runtime(const Value& v) noexcept {
  if (v.kind == ValueKind::Node || v.kind == ValueKind::Symbolic) return true;
  for (const auto& item : v.items)
    if (needs_runtime(item)) return true;
  return false;
}

c10::IValue plain_value(const Value& v, const BindContext& ctx) {
  switch (v.kind) {
    case ValueKind::None: return {};
    case ValueKind::Bool: return c10::IValue(v.i != 0);
    case ValueKind::Int: return c10::IValue(v.i);
    case ValueKind::Float: return c10::IValue(parse_float(*ctx.graph, v));
    case ValueKind::String: return c10::IValue(std::string(ctx.graph->str(v.s)));
    case ValueKind::Node: return node_value(v, ctx);
    case ValueKind::Symbolic: return c10::IValue(symbol_value(v, ctx));
    case ValueKind::DType:
    case ValueKind::Layout:
    case ValueKind::MemoryFormat: return c10::IValue(to_int(v, ctx, c10::IntType::get()));
    case ValueKind::Device: {
      std::string text(ctx.graph->str(v.device.type));
      if (v.device.index >= 0) text += ":" + std::to_string(v.device.index);
      return c10::IValue(parse_device(text));
    }
    case ValueKind::List:
    case ValueKind::Tuple: {
      // Lists of integers (split sizes, rank lists) as int[], like the schemas that take them.
      bool ints = !v.items.empty();
      for (const auto& item : v.items)
        ints = ints && (item.kind == ValueKind::Int || item.kind == ValueKind::Symbolic ||
                        (item.kind == ValueKind::Node && node_value(item, ctx).isInt()));
      if (ints)
        return typed_list<std::int64_t>(v,
                                        [&](const Value& x) { return to_int(x, ctx, c10::IntType::get()); });
      std::vector<c10::IValue> items;
      for (const auto& item : v.items) items.push_back(plain_value(item, ctx));
      return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
    }
    default:
      throw ReplayError("cannot evaluate " + std::string(model::value_kind_name(v.kind)) + " \"" +
                        std::string(ctx.graph->str(v.s)) + "\"");
  }
}

c10::IValue bind_value(const Value& v, const c10::TypePtr& type, const BindContext& ctx) {
  const auto& g = *ctx.graph;
  switch (type->kind()) {
    case c10::TypeKind::OptionalType:
      if (v.kind == ValueKind::None) return {};
      return bind_value(v, type->castRaw<c10::OptionalType>()->getElementType(), ctx);
    case c10::TypeKind::TensorType: {
      // Python's argument parser turns None into an undefined Tensor for a plain `Tensor`
      // argument, and graphs rely on it: `_scaled_dot_product_efficient_attention_backward`
      // receives `attn_bias=None` in the AOT graphs of PyTorch 2.11.
      if (v.kind == ValueKind::None) return c10::IValue(at::Tensor());
      if (v.kind == ValueKind::Node) {
        const auto& iv = node_value(v, ctx);
        if (iv.isTensor()) return iv;
        if (iv.isInt() || iv.isDouble() || iv.isBool()) {
          auto t = at::scalar_to_tensor(iv.toScalar());
          t.unsafeGetTensorImpl()->set_wrapped_number(true);
          return c10::IValue(std::move(t));
        }
        throw ReplayError("node " + std::string(g.node_name(v.node)) + " gives " + iv.tagKind() +
                          " where a Tensor is expected");
      }
      if (v.kind == ValueKind::Int || v.kind == ValueKind::Float || v.kind == ValueKind::Bool) {
        // A Python number where the schema wants a Tensor: what torch's argument parser does.
        auto t = at::scalar_to_tensor(scalar_value(v, ctx, type).toScalar());
        t.unsafeGetTensorImpl()->set_wrapped_number(true);
        return c10::IValue(std::move(t));
      }
      unfit(g, v, type);
    }
    case c10::TypeKind::IntType: return c10::IValue(to_int(v, ctx, type));
    case c10::TypeKind::FloatType:
      if (v.kind == ValueKind::Float) return c10::IValue(parse_float(g, v));
      if (v.kind == ValueKind::Int) return c10::IValue(static_cast<double>(v.i));
      return c10::IValue(scalar_value(v, ctx, type).toDouble());
    case c10::TypeKind::BoolType:
      if (v.kind == ValueKind::Bool) return c10::IValue(v.i != 0);
      if (v.kind == ValueKind::Node) {
        const auto& iv = node_value(v, ctx);
        if (iv.isBool()) return iv;
      }
      unfit(g, v, type);
    case c10::TypeKind::NumberType: return scalar_value(v, ctx, type);
    case c10::TypeKind::StringType:
      if (v.kind == ValueKind::String) return c10::IValue(std::string(g.str(v.s)));
      unfit(g, v, type);
    case c10::TypeKind::DeviceObjType:
      if (v.kind == ValueKind::Device) return plain_value(v, ctx);
      if (v.kind == ValueKind::String) return c10::IValue(parse_device(std::string(g.str(v.s))));
      unfit(g, v, type);
    case c10::TypeKind::GeneratorType:
      if (v.kind == ValueKind::None) return {};
      unfit(g, v, type);
    case c10::TypeKind::ListType: {
      const auto elem = type->castRaw<c10::ListType>()->getElementType();
      if (!is_sequence(v)) {
        // int[N] accepts a single int (Python's argument parser repeats it); a node may give a
        // whole list (a multi-output op's result).
        if (v.kind == ValueKind::Node) {
          const auto& iv = node_value(v, ctx);
          if (iv.isList() || iv.isTensorList() || iv.isIntList()) return iv;
          if (iv.isTuple() && elem->kind() == c10::TypeKind::TensorType) {
            c10::List<at::Tensor> out;
            for (const auto& e : iv.toTupleRef().elements()) out.push_back(e.toTensor());
            return c10::IValue(std::move(out));
          }
        }
        if (elem->kind() == c10::TypeKind::IntType &&
            (v.kind == ValueKind::Int || v.kind == ValueKind::Symbolic))
          return c10::IValue(c10::List<std::int64_t>({to_int(v, ctx, elem)}));
        unfit(g, v, type);
      }
      switch (elem->kind()) {
        case c10::TypeKind::IntType:
          return typed_list<std::int64_t>(v, [&](const Value& x) { return to_int(x, ctx, elem); });
        case c10::TypeKind::FloatType:
          return typed_list<double>(v, [&](const Value& x) { return bind_value(x, elem, ctx).toDouble(); });
        case c10::TypeKind::BoolType:
          return typed_list<bool>(v, [&](const Value& x) { return bind_value(x, elem, ctx).toBool(); });
        case c10::TypeKind::TensorType:
          return typed_list<at::Tensor>(v,
                                        [&](const Value& x) { return bind_value(x, elem, ctx).toTensor(); });
        case c10::TypeKind::OptionalType: {
          const auto inner = elem->castRaw<c10::OptionalType>()->getElementType();
          if (inner->kind() == c10::TypeKind::TensorType)
            return typed_list<c10::optional<at::Tensor>>(v, [&](const Value& x) -> c10::optional<at::Tensor> {
              if (x.kind == ValueKind::None) return c10::nullopt;
              return bind_value(x, inner, ctx).toTensor();
            });
          break;
        }
        default: break;
      }
      c10::impl::GenericList out(elem);
      for (const auto& item : v.items) out.push_back(bind_value(item, elem, ctx));
      return c10::IValue(std::move(out));
    }
    default: {
      auto iv = plain_value(v, ctx);
      if (!iv.isNone() && !iv.type()->isSubtypeOf(*type)) unfit(g, v, type);
      return iv;
    }
  }
}

std::vector<BoundArg> bind_arguments(const c10::FunctionSchema& schema, const model::Graph& g,
                                     const model::Node& n) {
  const auto& params = schema.arguments();
  std::vector<BoundArg> out(params.size());
  std::vector<bool> given(params.size(), false);
  if (n.args.size() > params.size())
    throw ReplayError("takes at most " + std::to_string(params.size()) + " arguments (" + schema.name() +
                      (schema.overload_name().empty() ? "" : "." + schema.overload_name()) + "), got " +
                      std::to_string(n.args.size()));
  for (std::size_t i = 0; i < n.args.size(); ++i) {
    if (params[i].kwarg_only())
      throw ReplayError("argument " + std::to_string(i + 1) + " is positional, but \"" + params[i].name() +
                        "\" is keyword-only");
    out[i].value = &n.args[i];
    given[i] = true;
  }
  for (const auto& kw : n.kwargs) {
    const auto name = g.str(kw.name);
    std::size_t i = 0;
    while (i < params.size() && params[i].name() != name) ++i;
    if (i == params.size()) throw ReplayError("unknown keyword argument \"" + std::string(name) + "\"");
    if (given[i]) throw ReplayError("argument \"" + std::string(name) + "\" given twice");
    out[i].value = &kw.value;
    given[i] = true;
  }
  const BindContext ctx{&g, nullptr, nullptr};
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto& b = out[i];
    b.type = params[i].type();
    if (!given[i]) {
      if (params[i].default_value()) {
        b.constant = *params[i].default_value();
      } else if (b.type->kind() == c10::TypeKind::OptionalType) {
        b.constant = c10::IValue();
      } else {
        throw ReplayError("missing argument \"" + params[i].name() + "\" (" + b.type->str() + ")");
      }
      continue;
    }
    if (needs_runtime(*b.value)) {
      b.runtime = true;
      continue;
    }
    try {
      b.constant = bind_value(*b.value, b.type, ctx);
    } catch (const ReplayError& e) {
      throw ReplayError("argument \"" + params[i].name() + "\": " + e.what());
    }
  }
  return out;
}

void push_arguments(const std::vector<BoundArg>& args, const BindContext& ctx,
                    std::vector<c10::IValue>& stack) {
  for (const auto& a : args) stack.push_back(a.runtime ? bind_value(*a.value, a.type, ctx) : a.constant);
}

}  // namespace gparity::runtime::detail
