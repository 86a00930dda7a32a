// Annotations of the FX text reader: "f32[4, 64][64, 1]cuda:0", "bf16[s77, 96]", "Sym(2*s0)",
// and anything else kept verbatim (fx_text.hpp).
#include <array>
#include <charconv>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_parser.hpp"

namespace gparity::model {
namespace {

/// Calls f on each part of "a, b, Max(1, c)" split at top-level commas, blanks trimmed; nothing
/// for an empty list.
template <typename F>
void for_each_top(std::string_view s, F&& f) {
  const auto trimmed = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  if (trimmed(s).empty()) return;
  int depth = 0;
  std::size_t b = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      f(trimmed(s.substr(b, i - b)));
      b = i + 1;
    }
  }
  f(trimmed(s.substr(b)));
}

/// The text inside the bracket group starting at s[at] == '['; advances `at` past it.
std::optional<std::string_view> bracket_group(std::string_view s, std::size_t& at) {
  int depth = 0;
  for (std::size_t i = at; i < s.size(); ++i) {
    if (s[i] == '[' || s[i] == '(') ++depth;
    if (s[i] == ']' || s[i] == ')') {
      if (--depth == 0) {
        const auto inner = s.substr(at + 1, i - at - 1);
        at = i + 1;
        return inner;
      }
    }
  }
  return std::nullopt;
}

bool is_alnum_(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// parse_dtype for the short names FX prints ("f32", "bf16"), compared without calls; the general
/// lookup for any other text.
std::optional<DType> short_dtype(std::string_view t) {
  struct Short {
    std::string_view name;
    DType dtype;
  };
  static constexpr Short kShort[] = {{"f32", DType::F32}, {"bf16", DType::BF16}, {"i64", DType::I64},
                                     {"f16", DType::F16}, {"b8", DType::Bool},   {"i32", DType::I32},
                                     {"f64", DType::F64}, {"u8", DType::U8}};
  for (const Short& s : kShort) {
    if (s.name.size() != t.size()) continue;
    std::size_t i = 0;
    while (i < t.size() && t[i] == s.name[i]) ++i;
    if (i == t.size()) return s.dtype;
  }
  return parse_dtype(t);
}

Dim parse_dim(std::string_view t, Graph& g) {
  Dim d;
  std::int64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (!t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size()) {
    d.value = v;
  } else {
    d.expr = g.intern(t);
  }
  return d;
}

}  // namespace

namespace fx {

Device parse_device_text(std::string_view t, Graph& g) {
  Device d;
  const auto colon = t.find(':');
  d.type = g.intern(t.substr(0, colon));
  if (colon != std::string_view::npos) {
    std::int32_t idx = -1;
    const auto s = t.substr(colon + 1);
    const auto r = std::from_chars(s.data(), s.data() + s.size(), idx);
    d.index = (r.ec == std::errc() && r.ptr == s.data() + s.size()) ? idx : -1;
    if (d.index < 0) d.type = g.intern(t);  // keep an unparseable device verbatim
  }
  return d;
}
}  // namespace fx

namespace {

/// The common annotation "f32[4, 64][64, 1]cuda:0" (concrete sizes and strides, a dtype of
/// letters and digits) in one pass; nullopt for anything else, which the general path reads.
std::optional<TensorMeta> plain_annotation(std::string_view a, Graph& g) {
  std::size_t p = 0;
  while (p < a.size() && is_alnum_(a[p])) ++p;
  if (p == 0 || p >= a.size() || a[p] != '[') return std::nullopt;
  const std::optional<DType> dt = short_dtype(a.substr(0, p));
  if (!dt) return std::nullopt;
  TensorMeta m;
  m.kind = TensorMeta::Kind::Tensor;
  m.dtype = *dt;
  // One bracketed list of non-negative integers (at most 18 digits each) at a[p] == '['.
  const auto dims = [&](std::vector<Dim>& out) {
    std::array<std::int64_t, 16> v{};
    std::size_t count = 0;
    ++p;
    while (p < a.size() && a[p] == ' ') ++p;
    if (p < a.size() && a[p] == ']') {
      ++p;
      return true;
    }
    while (true) {
      const std::size_t start = p;
      std::int64_t x = 0;
      // Stops at the 19th digit, before x could overflow; the general path reads the rest.
      while (p < a.size() && a[p] >= '0' && a[p] <= '9') {
        if (p - start == 18) return false;
        x = x * 10 + (a[p++] - '0');
      }
      if (p == start || count == v.size()) return false;
      v[count++] = x;
      while (p < a.size() && a[p] == ' ') ++p;
      if (p >= a.size()) return false;
      if (a[p] == ']') break;
      if (a[p] != ',') return false;
      ++p;
      while (p < a.size() && a[p] == ' ') ++p;
    }
    ++p;
    out.resize(count);
    for (std::size_t i = 0; i < count; ++i) out[i].value = v[i];
    return true;
  };
  if (!dims(m.sizes)) return std::nullopt;
  if (p < a.size() && a[p] == '[') {
    if (!dims(m.strides)) return std::nullopt;
    m.has_strides = true;
  }
  if (p < a.size()) m.device = fx::parse_device_text(a.substr(p), g);
  return m;
}

}  // namespace

TensorMeta parse_fx_annotation(std::string_view a, Graph& g, const std::string& source, std::int64_t line) {
  if (auto m = plain_annotation(a, g)) return std::move(*m);
  TensorMeta m;
  if (a.starts_with("Sym(") && a.ends_with(")")) {
    m.kind = TensorMeta::Kind::Sym;
    m.sym = g.intern(a.substr(4, a.size() - 5));
    return m;
  }
  std::size_t p = 0;
  while (p < a.size() && is_alnum_(a[p])) ++p;
  if (p == 0 || p >= a.size() || a[p] != '[') {
    m.kind = TensorMeta::Kind::Other;
    m.sym = g.intern(a);
    return m;
  }
  const auto dt_text = a.substr(0, p);
  std::optional<DType> dt = parse_dtype(dt_text);
  if (!dt)
    throw InputError(source, line,
                     "unknown dtype '" + std::string(dt_text) + "' in annotation \"" + std::string(a) + "\"");
  m.kind = TensorMeta::Kind::Tensor;
  m.dtype = *dt;
  const auto sizes = bracket_group(a, p);
  if (!sizes) throw InputError(source, line, "unbalanced brackets in annotation \"" + std::string(a) + "\"");
  for_each_top(*sizes, [&](std::string_view s) { m.sizes.push_back(parse_dim(s, g)); });
  if (p < a.size() && a[p] == '[') {
    const auto strides = bracket_group(a, p);
    if (!strides)
      throw InputError(source, line, "unbalanced brackets in annotation \"" + std::string(a) + "\"");
    m.has_strides = true;
    for_each_top(*strides, [&](std::string_view s) { m.strides.push_back(parse_dim(s, g)); });
  }
  if (p < a.size()) m.device = fx::parse_device_text(a.substr(p), g);
  return m;
}

}  // namespace gparity::model
