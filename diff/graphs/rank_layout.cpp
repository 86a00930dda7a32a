#include "diff/graphs/rank_layout.hpp"

namespace gparity::diff {

std::string RankLayout::dim_name(std::size_t d) const {
  if (d < mesh_names.size() && !mesh_names[d].empty()) return mesh_names[d];
  return "mesh[" + std::to_string(d) + "]";
}

std::int32_t RankLayout::local_device(std::int32_t rank) const noexcept {
  return ranks_per_node > 0 ? rank % ranks_per_node : rank;
}

std::vector<std::int32_t> RankLayout::coordinates(std::int32_t rank) const {
  std::vector<std::int32_t> c(mesh.size());
  std::int32_t rest = rank;
  for (std::size_t d = mesh.size(); d-- > 0;) {
    c[d] = mesh[d] > 0 ? rest % mesh[d] : 0;
    rest = mesh[d] > 0 ? rest / mesh[d] : rest;
  }
  return c;
}

namespace {

std::string term(std::int64_t a, const std::string& x, bool first) {
  std::string s = a < 0 ? (first ? "-" : " - ") : (first ? "" : " + ");
  const std::int64_t m = a < 0 ? -a : a;
  return s + (m == 1 ? x : std::to_string(m) + "*" + x);
}

}  // namespace

std::string AffineFunction::text() const {
  // One variable keeps the compact form ("32*rank+32"); mesh terms read "32*tp + 32".
  if (more.empty() && variable.find_first_of("[") == std::string::npos && variable != "rank" &&
      variable != "local_rank") {
    std::string out = term(a, variable, true);
    if (b > 0) out += " + " + std::to_string(b);
    if (b < 0) out += " - " + std::to_string(-b);
    return out;
  }
  std::string out;
  if (a == -1) {
    out = "-" + variable;
  } else if (a != 1) {
    out = std::to_string(a) + "*" + variable;
  } else {
    out = variable;
  }
  for (const auto& [x, k] : more) out += term(k, x, false);
  if (!more.empty()) {
    if (b > 0) out += " + " + std::to_string(b);
    if (b < 0) out += " - " + std::to_string(-b);
    return out;
  }
  if (b > 0) out += "+" + std::to_string(b);
  if (b < 0) out += std::to_string(b);
  return out;
}

namespace {

std::optional<AffineFunction> fit_one(const std::string& name, std::span<const std::int64_t> xs,
                                      std::span<const std::int64_t> values) {
  std::size_t j = 1;
  while (j < xs.size() && xs[j] == xs[0]) ++j;
  if (j == xs.size()) return std::nullopt;  // the variable does not vary over these ranks
  const std::int64_t dv = values[j] - values[0];
  const std::int64_t dx = xs[j] - xs[0];
  if (dv % dx != 0) return std::nullopt;
  const std::int64_t a = dv / dx;
  const std::int64_t b = values[0] - a * xs[0];
  bool ok = a != 0;
  for (std::size_t i = 0; ok && i < xs.size(); ++i) ok = values[i] == a * xs[i] + b;
  if (ok) return AffineFunction{name, a, b, {}, {}};
  return std::nullopt;
}

/// value = b + Σ a_d·coord_d over a mesh of two or more dimensions: each a_d from two ranks that
/// differ only in dimension d, then checked on every rank.
std::optional<AffineFunction> fit_mesh(std::span<const std::int32_t> ranks,
                                       std::span<const std::int64_t> values, const RankLayout& layout) {
  const std::size_t dims = layout.mesh.size();
  if (dims < 2 || ranks.empty()) return std::nullopt;
  std::vector<std::vector<std::int32_t>> c;
  for (const auto r : ranks) c.push_back(layout.coordinates(r));
  std::vector<std::int64_t> a(dims, 0);
  for (std::size_t d = 0; d < dims; ++d) {
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      bool only_d = c[i][d] != c[0][d];
      for (std::size_t e = 0; only_d && e < dims; ++e) only_d = e == d || c[i][e] == c[0][e];
      if (!only_d) continue;
      const std::int64_t dv = values[i] - values[0], dx = c[i][d] - c[0][d];
      if (dv % dx != 0) return std::nullopt;
      a[d] = dv / dx;
      break;
    }
  }
  std::int64_t b = values[0];
  for (std::size_t d = 0; d < dims; ++d) b -= a[d] * c[0][d];
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::int64_t v = b;
    for (std::size_t d = 0; d < dims; ++d) v += a[d] * c[i][d];
    if (v != values[i]) return std::nullopt;
  }
  AffineFunction f;
  f.b = b;
  for (std::size_t d = 0; d < dims; ++d) {
    if (a[d] == 0) continue;
    if (f.variable.empty()) {
      f.variable = layout.dim_name(d);
      f.a = a[d];
    } else {
      f.more.emplace_back(layout.dim_name(d), a[d]);
    }
  }
  if (f.variable.empty()) return std::nullopt;
  return f;
}

std::optional<AffineFunction> fit_known(std::span<const std::int32_t> ranks,
                                        std::span<const std::int64_t> values, const RankLayout& layout) {
  std::vector<std::int64_t> x(ranks.begin(), ranks.end());
  if (auto f = fit_one("rank", x, values)) return f;
  if (layout.ranks_per_node > 0) {
    for (std::size_t i = 0; i < ranks.size(); ++i) x[i] = layout.local_device(ranks[i]);
    if (auto f = fit_one("local_rank", x, values)) return f;
  }
  for (std::size_t d = 0; d < layout.mesh.size(); ++d) {
    for (std::size_t i = 0; i < ranks.size(); ++i) x[i] = layout.coordinates(ranks[i])[d];
    if (auto f = fit_one(layout.dim_name(d), x, values)) return f;
  }
  return fit_mesh(ranks, values, layout);
}

}  // namespace

std::string mesh_shape_text(std::span<const std::int32_t> shape) {
  std::string s;
  for (const auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

std::string inferred_mesh_text(std::span<const std::int32_t> shape, std::int32_t world) {
  return mesh_shape_text(shape) + " inferred from world size " + std::to_string(world);
}

std::optional<AffineFunction> fit_affine(std::span<const std::int32_t> ranks,
                                         std::span<const std::int64_t> values, const RankLayout& layout) {
  if (auto f = fit_known(ranks, values, layout)) return f;
  if (!layout.mesh.empty() || layout.infer_world <= 1) return std::nullopt;
  // No mesh known: the shapes the world size factors into, the first that explains the values.
  for (const auto& shape : mesh_factorizations(layout.infer_world)) {
    RankLayout l = layout;
    l.mesh = shape;
    l.infer_world = 0;
    if (auto f = fit_known(ranks, values, l); f && f->variable != "rank" && f->variable != "local_rank") {
      f->inferred_mesh = inferred_mesh_text(shape, layout.infer_world);
      return f;
    }
  }
  return std::nullopt;
}

void adopt_mesh(RankLayout& layout, const MeshInfo& mesh) {
  layout.mesh = mesh.shape;
  layout.mesh_names = mesh.names;
  layout.mesh_source = mesh.source;
}

RankLayout mesh_override_layout(std::string_view spec, std::int32_t ranks_per_node) {
  RankLayout layout;
  layout.ranks_per_node = ranks_per_node;
  if (!spec.empty()) adopt_mesh(layout, parse_mesh_override(spec));
  return layout;
}

}  // namespace gparity::diff
