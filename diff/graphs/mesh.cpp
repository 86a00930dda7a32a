#include "diff/graphs/mesh.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/model/base/input_error.hpp"

namespace gparity::diff {
namespace {

namespace fs = std::filesystem;

struct Cursor {
  std::string_view s;
  std::size_t p = 0;
  void ws() {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
  }
  bool eat(std::string_view w) {
    ws();
    if (s.substr(p, w.size()) != w) return false;
    p += w.size();
    return true;
  }
  std::optional<std::int64_t> integer() {
    ws();
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data() + p, s.data() + s.size(), v);
    if (ec != std::errc()) return std::nullopt;
    p = static_cast<std::size_t>(end - s.data());
    return v;
  }
  std::string ident() {
    ws();
    const std::size_t b = p;
    while (p < s.size() && (std::isalnum(static_cast<unsigned char>(s[p])) != 0 || s[p] == '_')) ++p;
    return std::string(s.substr(b, p - b));
  }
};

}  // namespace

std::int64_t MeshInfo::size() const noexcept {
  std::int64_t n = shape.empty() ? 0 : 1;
  for (const auto d : shape) n *= d;
  return n;
}

std::string MeshInfo::text() const {
  std::string s;
  for (const auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  bool named = false;
  for (const auto& n : names) named = named || !n.empty();
  if (named) {
    s += " (";
    for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
    s += ")";
  }
  return s;
}

MeshInfo parse_mesh_override(std::string_view text) {
  MeshInfo m;
  m.source = "--mesh";
  const auto bad = [&] {
    return model::InputError("--mesh",
                             "expected sizes like 2x4 or dp=2,tp=4, got '" + std::string(text) + "'");
  };
  const char sep = text.find_first_of(",=") != std::string_view::npos ? ',' : 'x';
  std::size_t p = 0;
  while (true) {
    const auto x = text.find(sep, p);
    std::string_view part = text.substr(p, x == std::string_view::npos ? std::string_view::npos : x - p);
    std::string name;
    if (const auto eq = part.find('='); eq != std::string_view::npos) {
      name = std::string(part.substr(0, eq));
      part = part.substr(eq + 1);
    }
    std::int32_t v = 0;
    const auto r = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size() || v <= 0) throw bad();
    m.shape.push_back(v);
    m.names.push_back(std::move(name));
    if (x == std::string_view::npos) break;
    p = x + 1;
  }
  return m;
}

std::optional<MeshSpec> parse_device_mesh(std::string_view text) {
  // DeviceMesh((dp=2, tp=2), 'cuda', stride=(2, 1))
  Cursor c{text};
  if (!c.eat("DeviceMesh(") || !c.eat("(")) return std::nullopt;
  MeshSpec m;
  while (true) {
    const auto name = c.ident();
    if (name.empty() || !c.eat("=")) return std::nullopt;
    const auto size = c.integer();
    if (!size || *size <= 0 || *size > (1 << 20)) return std::nullopt;
    m.names.push_back(name);
    m.sizes.push_back(static_cast<std::int32_t>(*size));
    if (c.eat(")")) break;
    if (!c.eat(",")) return std::nullopt;
  }
  if (!c.eat(",")) return std::nullopt;
  c.ws();
  const auto stride_at = text.find("stride=(", c.p);
  if (stride_at == std::string_view::npos || stride_at > c.p + 40) return m;  // strides are optional
  c.p = stride_at + 8;
  while (m.strides.size() < m.sizes.size()) {
    const auto v = c.integer();
    if (!v) return std::nullopt;
    m.strides.push_back(*v);
    c.eat(",");
  }
  return m;
}

std::optional<MeshInfo> mesh_from_specs(std::span<const MeshSpec> specs, std::int32_t world) {
  // A spec covering the world is the mesh.
  for (const auto& s : specs) {
    std::int64_t n = 1;
    for (const auto d : s.sizes) n *= d;
    if (n == world && s.sizes.size() > 1) return MeshInfo{s.sizes, s.names, "DeviceMesh in graph payloads"};
  }
  // Otherwise one-dimensional sub-meshes, ordered by stride (outer first).
  std::map<std::string, std::pair<std::int32_t, std::int64_t>> dims;
  for (const auto& s : specs) {
    if (s.sizes.size() != 1 || s.strides.size() != 1) continue;
    dims.emplace(s.names[0], std::pair{s.sizes[0], s.strides[0]});
  }
  std::vector<std::tuple<std::int64_t, std::string, std::int32_t>> order;
  std::int64_t n = 1;
  for (const auto& [name, ss] : dims) {
    order.emplace_back(ss.second, name, ss.first);
    n *= ss.first;
  }
  if (order.empty() || n != world) return std::nullopt;
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  MeshInfo m;
  m.source = "DeviceMesh in graph payloads";
  for (const auto& [stride, name, size] : order) {
    m.shape.push_back(size);
    m.names.push_back(name);
  }
  return m;
}

namespace {

std::string spec_key(const MeshSpec& m) {
  std::string key;
  for (std::size_t d = 0; d < m.sizes.size(); ++d)
    key += m.names[d] + "=" + std::to_string(m.sizes[d]) + "/" +
           (d < m.strides.size() ? std::to_string(m.strides[d]) : "?") + ";";
  return key;
}

void specs_of_rank(const model::TorchTraceRank& rt, std::set<std::string>& seen, std::vector<MeshSpec>& out) {
  for (const auto& r : rt.records) {
    if (r.payload_bytes == 0 || r.payload_offset + r.payload_bytes > rt.text.size()) continue;
    const auto body = rt.text.substr(r.payload_offset, r.payload_bytes);
    for (auto at = body.find("DeviceMesh(("); at != std::string_view::npos;
         at = body.find("DeviceMesh((", at + 12)) {
      const auto text = body.substr(at, 200);
      auto m = parse_device_mesh(text);
      if (!m) continue;
      if (!seen.insert(spec_key(*m)).second) continue;
      out.push_back(std::move(*m));
    }
  }
}

}  // namespace

std::vector<MeshSpec> mesh_specs_in_trace(const model::MultiRankTrace& trace) {
  std::set<std::string> seen;
  std::vector<MeshSpec> out;
  for (const auto& rt : trace.ranks) specs_of_rank(rt, seen, out);
  return out;
}

std::vector<MeshSpec> mesh_specs_in_rank(const model::TorchTraceRank& rank) {
  std::set<std::string> seen;
  std::vector<MeshSpec> out;
  specs_of_rank(rank, seen, out);
  return out;
}

std::vector<MeshSpec> merge_mesh_specs(const std::vector<std::vector<MeshSpec>>& per_rank) {
  std::set<std::string> seen;
  std::vector<MeshSpec> out;
  for (const auto& specs : per_rank) {
    for (const auto& m : specs) {
      if (seen.insert(spec_key(m)).second) out.push_back(m);
    }
  }
  return out;
}

std::optional<MeshInfo> mesh_from_groups(std::span<const model::ProcessGroupConfig> groups,
                                         std::int32_t world) {
  std::map<std::string, std::pair<std::size_t, std::int64_t>> dims;  // name -> size, stride
  for (const auto& g : groups) {
    if (!g.desc.starts_with("mesh_") || g.ranks.size() < 2) continue;
    auto ranks = g.ranks;
    std::sort(ranks.begin(), ranks.end());
    const std::int64_t stride = ranks[1] - ranks[0];
    for (std::size_t i = 2; i < ranks.size(); ++i)
      if (ranks[i] - ranks[i - 1] != stride) return std::nullopt;
    const auto [it, fresh] = dims.emplace(g.desc.substr(5), std::pair{ranks.size(), stride});
    if (!fresh && it->second != std::pair{ranks.size(), stride}) return std::nullopt;
  }
  std::int64_t n = 1;
  std::vector<std::tuple<std::int64_t, std::string, std::int32_t>> order;
  for (const auto& [name, ss] : dims) {
    n *= static_cast<std::int64_t>(ss.first);
    order.emplace_back(ss.second, name, static_cast<std::int32_t>(ss.first));
  }
  if (order.size() < 2 || n != world) return std::nullopt;
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  MeshInfo m;
  m.source = "Flight Recorder pg_config";
  for (const auto& [stride, name, size] : order) {
    m.shape.push_back(size);
    m.names.push_back(name);
  }
  return m;
}

std::vector<std::vector<std::int32_t>> mesh_factorizations(std::int32_t world) {
  std::vector<std::vector<std::int32_t>> out;
  for (std::int32_t a = 2; a <= world / 2; ++a) {
    if (world % a != 0) continue;
    out.push_back({a, world / a});
  }
  for (std::int32_t a = 2; a <= world / 4; ++a) {
    if (world % a != 0) continue;
    for (std::int32_t b = 2; b <= world / a / 2; ++b)
      if ((world / a) % b == 0) out.push_back({a, b, world / a / b});
  }
  return out;
}

namespace {

std::vector<fs::path> run_dirs(const std::string& trace_path) {
  std::error_code ec;
  fs::path dir(trace_path);
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  std::vector<fs::path> dirs{dir};
  if (dir.filename() == "trace") dirs.push_back(dir.parent_path());
  return dirs;
}

std::optional<MeshInfo> mesh_in_json(const nlohmann::json& j, std::int32_t world) {
  const nlohmann::json* shape = nullptr;
  const nlohmann::json* names = nullptr;
  if (j.contains("mesh_shape")) {
    shape = &j["mesh_shape"];
    if (j.contains("mesh_dim_names")) names = &j["mesh_dim_names"];
  } else if (j.contains("mesh") && j["mesh"].is_object() && j["mesh"].contains("shape")) {
    shape = &j["mesh"]["shape"];
    if (j["mesh"].contains("names")) names = &j["mesh"]["names"];
  }
  if (shape == nullptr || !shape->is_array() || shape->size() < 2) return std::nullopt;
  MeshInfo m;
  std::int64_t n = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_integer() || d.get<std::int64_t>() <= 0 || d.get<std::int64_t>() > (1 << 20))
      return std::nullopt;
    m.shape.push_back(d.get<std::int32_t>());
    n *= m.shape.back();
  }
  if (n != world) return std::nullopt;
  for (std::size_t d = 0; d < m.shape.size(); ++d)
    m.names.push_back(names != nullptr && names->is_array() && d < names->size() && (*names)[d].is_string()
                          ? (*names)[d].get<std::string>()
                          : "");
  return m;
}

}  // namespace

std::optional<MeshInfo> mesh_from_manifest(const std::string& trace_path, std::int32_t world,
                                           std::vector<std::string>& problems) {
  for (const auto& d : run_dirs(trace_path)) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const auto name = e.path().filename().string();
      if (name == "manifest.json" || (name.starts_with("rank") && name.ends_with("_meta.json")))
        files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const auto j = nlohmann::json::parse(text.str(), nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        problems.push_back(f.string() + ": not a JSON object; not used for the mesh");
        continue;
      }
      if (auto m = mesh_in_json(j, world)) {
        m->source = "manifest " + f.filename().string();
        return m;
      }
    }
  }
  return std::nullopt;
}

std::vector<model::ProcessGroupConfig> groups_beside_trace(const std::string& trace_path,
                                                           std::vector<std::string>& problems) {
  std::vector<model::ProcessGroupConfig> out;
  std::error_code ec;
  for (const auto& d : run_dirs(trace_path)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const auto name = e.path().filename().string();
      if (name.starts_with("rank") && name.ends_with("_flight_recorder.json")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      try {
        auto dump = model::read_flight_recorder(f.string());
        for (auto& g : dump.groups) out.push_back(std::move(g));
      } catch (const model::InputError& e) {
        problems.push_back(std::string(e.what()) + " (its process groups are not used for the mesh)");
      }
    }
  }
  return out;
}

}  // namespace gparity::diff
