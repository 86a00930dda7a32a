// The JSON forms of the trace records (trace_schema.hpp): to_json and the *_from_json readers,
// which check every field they take (InputError naming source, line and field) and keep the
// fields they do not know in `extra`; and step_to_line, the writer's hand-built step record.

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/run/trace_schema.hpp"
#include "hash/xxh3.hpp"

namespace gparity::model {
namespace {

using nlohmann::json;

const json& member(const json& j, const char* key, const std::string& source, std::int64_t line) {
  const auto it = j.find(key);
  if (it == j.end()) throw InputError(source, line, std::string("missing field \"") + key + "\"");
  return *it;
}

/// The member `key` of `j`, which must be an array.
const json& array_member(const json& j, const char* key, const std::string& source, std::int64_t line) {
  const auto& a = member(j, key, source, line);
  if (!a.is_array()) throw InputError(source, line, std::string("\"") + key + "\" is not an array");
  return a;
}

template <typename T>
struct is_vector : std::false_type {};
template <typename E>
struct is_vector<std::vector<E>> : std::true_type {};

template <typename T>
T get_as(const json& j, const char* key, const std::string& source, std::int64_t line) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const auto v = json_integer<T>(j);
    if (!v) throw InputError(source, line, std::string("field \"") + key + "\" is not an integer in range");
    return *v;
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) throw InputError(source, line, std::string("field \"") + key + "\" is not an array");
    T out;
    out.reserve(j.size());
    for (const auto& e : j) out.push_back(get_as<typename T::value_type>(e, key, source, line));
    return out;
  } else {
    try {
      return j.get<T>();
    } catch (const json::exception&) {
      throw InputError(source, line, std::string("field \"") + key + "\" has the wrong type");
    }
  }
}

template <typename T>
T required(const json& j, const char* key, const std::string& source, std::int64_t line) {
  return get_as<T>(member(j, key, source, line), key, source, line);
}

template <typename T>
T optional_or(const json& j, const char* key, T fallback, const std::string& source, std::int64_t line) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return get_as<T>(*it, key, source, line);
}

DType dtype_field(const json& j, const char* key, const std::string& source, std::int64_t line) {
  const auto text = required<std::string>(j, key, source, line);
  const auto d = parse_dtype(text);
  if (!d) throw InputError(source, line, "unknown dtype \"" + text + "\"");
  return *d;
}

/// Copies every member of `j` whose key is not in `known` (and is not "type").
json extras(const json& j, std::initializer_list<std::string_view> known) {
  json out = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "type") continue;
    bool is_known = false;
    for (const auto k : known) is_known = is_known || it.key() == k;
    if (!is_known) out[it.key()] = it.value();
  }
  return out;
}

void merge_extras(json& out, const json& extra) {
  if (!extra.is_object()) return;
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
}

void require_object(const json& j, const std::string& source, std::int64_t line, const char* what) {
  if (!j.is_object()) throw InputError(source, line, std::string(what) + " is not a JSON object");
}

std::string bits_hex(std::uint64_t bits, DType dtype) {
  const std::size_t digits = 2 * dtype_size(dtype);
  std::string hex = hash::to_hex(bits);
  return hex.substr(hex.size() - std::min(digits, hex.size()));
}

}  // namespace

json to_json(const TraceScalar& s) {
  json j = {
      {"value", nullptr}, {"bits", bits_hex(s.bits, s.dtype)}, {"dtype", std::string(dtype_name(s.dtype))}};
  // JSON has no NaN or infinity: those values are null and the bits say which one it was.
  if (std::isfinite(s.value)) j["value"] = s.value;
  return j;
}

TraceScalar scalar_from_json(const json& j, const std::string& source, std::int64_t line) {
  require_object(j, source, line, "scalar");
  const DType dtype = dtype_field(j, "dtype", source, line);
  const auto hex = required<std::string>(j, "bits", source, line);
  const std::size_t digits = 2 * dtype_size(dtype);
  if (hex.empty() || hex.size() > digits) {
    throw InputError(source, line,
                     "scalar bits \"" + hex + "\" do not fit " + std::string(dtype_name(dtype)));
  }
  const auto bits = hash::from_hex(std::string(16 - hex.size(), '0') + hex);
  if (!bits) throw InputError(source, line, "scalar bits \"" + hex + "\" are not hex");
  return TraceScalar::from_bits(*bits, dtype);
}

json to_json(const RunManifest& m) {
  json ranks = json::array();
  for (const auto& r : m.ranks) {
    json entry = {{"rank", r.rank}, {"local_rank", r.local_rank}, {"host", r.host}, {"device", r.device}};
    if (r.node >= 0) entry["node"] = r.node;
    ranks.push_back(std::move(entry));
  }
  json versions = json::object();
  for (const auto& [k, v] : m.framework_versions) versions[k] = v;
  json j = {{"schema_version", m.schema_version},
            {"format", "gparity-trace"},
            {"run_id", m.run_id},
            {"world_size", m.world_size},
            {"mesh_shape", m.mesh_shape},
            {"mesh_dim_names", m.mesh_dim_names},
            {"ranks", ranks},
            {"framework_versions", versions},
            {"command_line", m.command_line},
            {"config_fingerprint", m.config_fingerprint},
            {"start_time", m.start_time}};
  if (m.steps) j["steps"] = *m.steps;
  if (m.nccl) {
    const auto& n = *m.nccl;
    json nj = {{"algo", n.algo}, {"graph_file", n.graph_file}, {"rings", n.rings}};
    if (!n.ring_pattern.empty()) nj["ring_pattern"] = n.ring_pattern;
    if (n.ring_seed) nj["ring_seed"] = *n.ring_seed;
    if (!n.graph_error.empty()) nj["graph_error"] = n.graph_error;
    merge_extras(nj, n.extra);
    j["nccl"] = std::move(nj);
  }
  merge_extras(j, m.extra);
  return j;
}

RunManifest manifest_from_json(const json& j, const std::string& source) {
  constexpr std::int64_t line = 0;
  require_object(j, source, line, "manifest");
  RunManifest m;
  m.schema_version = required<int>(j, "schema_version", source, line);
  if (m.schema_version != kTraceSchemaVersion) {
    throw InputError(source, line,
                     "schema_version " + std::to_string(m.schema_version) +
                         " is not supported (this gparity reads " + std::to_string(kTraceSchemaVersion) +
                         ")");
  }
  m.run_id = optional_or<std::string>(j, "run_id", "", source, line);
  m.world_size = required<int>(j, "world_size", source, line);
  if (m.world_size < 1 || m.world_size > (1 << 20)) throw InputError(source, line, "world_size out of range");
  m.mesh_shape = optional_or<std::vector<std::int64_t>>(j, "mesh_shape", {}, source, line);
  m.mesh_dim_names = optional_or<std::vector<std::string>>(j, "mesh_dim_names", {}, source, line);
  if (const auto it = j.find("ranks"); it != j.end() && it->is_array()) {
    for (const auto& r : *it) {
      require_object(r, source, line, "ranks entry");
      m.ranks.push_back({required<int>(r, "rank", source, line),
                         optional_or<int>(r, "local_rank", 0, source, line),
                         optional_or<std::string>(r, "host", "", source, line),
                         optional_or<std::string>(r, "device", "", source, line)});
      m.ranks.back().node = optional_or<int>(r, "node", -1, source, line);
      if (m.ranks.back().node < -1) throw InputError(source, line, "ranks entry: node must be 0 or more");
    }
  }
  if (const auto it = j.find("framework_versions"); it != j.end() && it->is_object()) {
    for (auto v = it->begin(); v != it->end(); ++v) {
      m.framework_versions.emplace_back(v.key(), v->is_string() ? v->get<std::string>() : v->dump());
    }
  }
  m.command_line = optional_or<std::vector<std::string>>(j, "command_line", {}, source, line);
  m.config_fingerprint = optional_or<std::string>(j, "config_fingerprint", "", source, line);
  m.start_time = optional_or<std::string>(j, "start_time", "", source, line);
  if (const auto it = j.find("steps"); it != j.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0)
      throw InputError(source, line, "\"steps\" must be a count");
    m.steps = it->get<std::int64_t>();
  } else if (const auto t = j.find("train"); t != j.end() && t->is_object()) {
    // `gparity run` wrote the step count only under "train" before "steps" existed.
    if (const auto s = t->find("steps");
        s != t->end() && s->is_number_integer() && s->get<std::int64_t>() >= 0)
      m.steps = s->get<std::int64_t>();
  }
  if (const auto it = j.find("nccl"); it != j.end() && !it->is_null()) {
    require_object(*it, source, line, "manifest \"nccl\"");
    NcclGraphInfo n;
    n.algo = optional_or<std::string>(*it, "algo", "", source, line);
    n.graph_file = optional_or<std::string>(*it, "graph_file", "", source, line);
    n.rings = optional_or<std::vector<std::vector<std::int64_t>>>(*it, "rings", {}, source, line);
    n.ring_pattern = optional_or<std::string>(*it, "ring_pattern", "", source, line);
    if (const auto s = it->find("ring_seed"); s != it->end() && !s->is_null())
      n.ring_seed = get_as<std::uint64_t>(*s, "ring_seed", source, line);
    n.graph_error = optional_or<std::string>(*it, "graph_error", "", source, line);
    n.extra = extras(*it, {"algo", "graph_file", "rings", "ring_pattern", "ring_seed", "graph_error"});
    m.nccl = std::move(n);
  }
  m.extra =
      extras(j, {"schema_version", "format", "run_id", "world_size", "mesh_shape", "mesh_dim_names", "ranks",
                 "framework_versions", "command_line", "config_fingerprint", "start_time", "nccl"});
  m.extra.erase("steps");
  return m;
}

json to_json(const ParamsRecord& r) {
  json params = json::array();
  for (const auto& p : r.params) {
    json placements = json::array();
    for (const auto& pl : p.placements) placements.push_back(placement_text(pl));
    params.push_back({{"fqn", p.fqn},
                      {"dtype", std::string(dtype_name(p.dtype))},
                      {"shape", p.global_shape},
                      {"offsets", p.local_offsets},
                      {"local_shape", p.local_shape},
                      {"placements", placements},
                      {"counts", p.counts}});
  }
  json j = {{"type", "params"}, {"params", params}};
  merge_extras(j, r.extra);
  return j;
}

ParamsRecord params_from_json(const json& j, const std::string& source, std::int64_t line) {
  ParamsRecord r;
  const auto& params = array_member(j, "params", source, line);
  r.params.reserve(params.size());
  for (const auto& p : params) {
    require_object(p, source, line, "params entry");
    ParamInfo info;
    info.fqn = required<std::string>(p, "fqn", source, line);
    info.dtype = dtype_field(p, "dtype", source, line);
    info.global_shape = required<std::vector<std::int64_t>>(p, "shape", source, line);
    info.local_shape =
        optional_or<std::vector<std::int64_t>>(p, "local_shape", info.global_shape, source, line);
    info.local_offsets = optional_or<std::vector<std::int64_t>>(
        p, "offsets", std::vector<std::int64_t>(info.global_shape.size(), 0), source, line);
    if (info.local_shape.size() != info.global_shape.size() ||
        info.local_offsets.size() != info.global_shape.size()) {
      throw InputError(source, line,
                       "parameter \"" + info.fqn + "\": offsets, local_shape and shape differ in rank");
    }
    for (const auto& text : optional_or<std::vector<std::string>>(p, "placements", {}, source, line)) {
      const auto pl = parse_placement(text);
      if (!pl)
        throw InputError(source, line, "parameter \"" + info.fqn + "\": unknown placement \"" + text + "\"");
      info.placements.push_back(*pl);
    }
    info.counts = optional_or<bool>(p, "counts", true, source, line);
    r.params.push_back(std::move(info));
  }
  r.extra = extras(j, {"params"});
  return r;
}

json to_json(const BucketsRecord& r) {
  json groups = json::array();
  for (const auto& g : r.groups) {
    json buckets = json::array();
    for (const auto& b : g.buckets) {
      json members = json::array();
      for (const auto& m : b.members) {
        members.push_back({{"fqn", m.fqn}, {"offset", m.offset_bytes}, {"size", m.size_bytes}});
      }
      buckets.push_back(
          {{"collective", b.collective}, {"dtype", std::string(dtype_name(b.dtype))}, {"members", members}});
    }
    groups.push_back({{"group", g.group}, {"buckets", buckets}});
  }
  json j = {{"type", "buckets"}, {"groups", groups}};
  if (r.step) j["step"] = *r.step;
  merge_extras(j, r.extra);
  return j;
}

BucketsRecord buckets_from_json(const json& j, const std::string& source, std::int64_t line) {
  BucketsRecord r;
  if (const auto it = j.find("step"); it != j.end() && !it->is_null())
    r.step = get_as<std::int64_t>(*it, "step", source, line);
  const auto& groups = array_member(j, "groups", source, line);
  for (const auto& g : groups) {
    require_object(g, source, line, "bucket group");
    BucketGroup group{required<std::string>(g, "group", source, line), {}};
    for (const auto& b : member(g, "buckets", source, line)) {
      require_object(b, source, line, "bucket");
      Bucket bucket{
          required<std::string>(b, "collective", source, line), dtype_field(b, "dtype", source, line), {}};
      for (const auto& m : member(b, "members", source, line)) {
        require_object(m, source, line, "bucket member");
        bucket.members.push_back({required<std::string>(m, "fqn", source, line),
                                  required<std::int64_t>(m, "offset", source, line),
                                  required<std::int64_t>(m, "size", source, line)});
      }
      group.buckets.push_back(std::move(bucket));
    }
    r.groups.push_back(std::move(group));
  }
  r.extra = extras(j, {"step", "groups"});
  return r;
}

json to_json(const DevicesRecord& r) {
  json entries = json::array();
  for (const auto& e : r.entries)
    entries.push_back({{"name", e.name}, {"kind", e.kind}, {"device", e.device}});
  json j = {{"type", "devices"}, {"entries", entries}};
  merge_extras(j, r.extra);
  return j;
}

DevicesRecord devices_from_json(const json& j, const std::string& source, std::int64_t line) {
  DevicesRecord r;
  const auto& entries = array_member(j, "entries", source, line);
  for (const auto& e : entries) {
    require_object(e, source, line, "devices entry");
    r.entries.push_back({required<std::string>(e, "name", source, line),
                         optional_or<std::string>(e, "kind", "", source, line),
                         required<std::string>(e, "device", source, line)});
  }
  r.extra = extras(j, {"entries"});
  return r;
}

json to_json(const GraphRef& r) {
  json j = {{"type", "graph"},
            {"path", r.path},
            {"kind", r.kind},
            {"compile_id", r.compile_id},
            {"fingerprint", r.fingerprint}};
  merge_extras(j, r.extra);
  return j;
}

GraphRef graph_from_json(const json& j, const std::string& source, std::int64_t line) {
  GraphRef r;
  r.path = required<std::string>(j, "path", source, line);
  r.kind = optional_or<std::string>(j, "kind", "", source, line);
  r.compile_id = optional_or<std::string>(j, "compile_id", "", source, line);
  r.fingerprint = optional_or<std::string>(j, "fingerprint", "", source, line);
  r.extra = extras(j, {"path", "kind", "compile_id", "fingerprint"});
  return r;
}

json to_json(const EventRecord& r) {
  json j = {{"type", "event"}, {"kind", r.kind}, {"message", r.message}, {"data", r.data}};
  if (r.step) j["step"] = *r.step;
  return j;
}

EventRecord event_from_json(const json& j, const std::string& source, std::int64_t line) {
  EventRecord r;
  r.kind = optional_or<std::string>(j, "kind", "", source, line);
  r.message = optional_or<std::string>(j, "message", "", source, line);
  if (const auto it = j.find("step"); it != j.end() && !it->is_null())
    r.step = get_as<std::int64_t>(*it, "step", source, line);
  if (const auto it = j.find("data"); it != j.end()) r.data = *it;
  const json rest = extras(j, {"kind", "message", "step", "data"});
  if (!rest.empty()) {
    if (!r.data.is_object()) r.data = json{{"data", r.data}};
    merge_extras(r.data, rest);
  }
  return r;
}

json to_json(const NodeRecord& r) {
  json j = {{"type", "node"},     {"graph", r.graph},
            {"node", r.node},     {"index", r.index},
            {"op", r.op},         {"source", r.source},
            {"output", r.output}, {"dtype", std::string(dtype_name(r.dtype))},
            {"shape", r.shape}};
  if (r.has_shard) j["shard"] = hash::to_hex(r.shard);
  if (r.has_xxh3) j["xxh3"] = hash::to_hex(r.xxh3);
  if (r.view)
    j["view"] = {{"base", r.view->base},
                 {"base_output", r.view->base_output},
                 {"offset", r.view->offset},
                 {"stride", r.view->stride},
                 {"base_stride", r.view->base_stride}};
  if (r.shard_spec != 1) j["shard_spec"] = r.shard_spec;
  merge_extras(j, r.extra);
  return j;
}

namespace {

/// A node record's "view" field: an object (issue 24), or `true` (older runs: no base named).
NodeView node_view_from_json(const json& j, const std::string& source, std::int64_t line) {
  if (j.is_boolean()) return {};
  if (!j.is_object()) throw InputError(source, line, "node \"view\" is neither an object nor true");
  NodeView v;
  v.base = required<std::string>(j, "base", source, line);
  v.base_output = optional_or<std::int64_t>(j, "base_output", 0, source, line);
  v.offset = optional_or<std::int64_t>(j, "offset", 0, source, line);
  v.stride = optional_or<std::vector<std::int64_t>>(j, "stride", {}, source, line);
  v.base_stride = optional_or<std::vector<std::int64_t>>(j, "base_stride", {}, source, line);
  return v;
}

}  // namespace

NodeRecord node_from_json(const json& j, const std::string& source, std::int64_t line) {
  NodeRecord r;
  r.graph = required<std::string>(j, "graph", source, line);
  r.node = required<std::string>(j, "node", source, line);
  r.index = optional_or<std::int64_t>(j, "index", 0, source, line);
  r.op = optional_or<std::string>(j, "op", "", source, line);
  r.source = optional_or<std::string>(j, "source", "", source, line);
  r.output = optional_or<std::int64_t>(j, "output", 0, source, line);
  r.dtype = dtype_field(j, "dtype", source, line);
  r.shape = required<std::vector<std::int64_t>>(j, "shape", source, line);
  const auto hash_field = [&](const char* key) {
    const auto text = required<std::string>(j, key, source, line);
    const auto v = text.size() == 16 ? hash::from_hex(text) : std::nullopt;
    if (!v)
      throw InputError(source, line, std::string("node ") + key + " \"" + text + "\" is not 16 hex digits");
    return *v;
  };
  if (const auto v = j.find("view"); v != j.end() && !(v->is_boolean() && !v->get<bool>()))
    r.view = node_view_from_json(*v, source, line);
  r.has_xxh3 = j.contains("xxh3");
  if (r.has_xxh3) r.xxh3 = hash_field("xxh3");
  // A view carries no hash (older runs wrote a zero shard for it); anything else has the shard hash.
  r.has_shard = !r.view;
  if (r.has_shard) r.shard = hash_field("shard");
  r.shard_spec = shard_spec_field(j, source, line);
  r.extra = extras(j, {"type", "graph", "node", "index", "op", "source", "output", "dtype", "shape", "xxh3",
                       "shard", "shard_spec", "view"});
  return r;
}

std::string step_to_line(const StepRecord& r) {
  // Small fields through nlohmann, hash arrays appended as raw strings: base64 needs no
  // escaping, and building a multi-megabyte json::string only to copy it again would double
  // the writer's cost.
  // "type" goes first: the reader's fast path looks for it at the start of the line.
  nlohmann::ordered_json head = {{"type", "step"}, {"step", r.step}};
  if (r.loss) head["loss"] = to_json(*r.loss);
  if (r.grad_norm) head["grad_norm"] = to_json(*r.grad_norm);
  if (!r.scalars.empty()) {
    nlohmann::ordered_json scalars = nlohmann::ordered_json::object();
    for (const auto& s : r.scalars) scalars[s.name] = to_json(s.value);
    head["scalars"] = scalars;
  }
  if (r.shard_spec != 1) head["shard_spec"] = r.shard_spec;
  for (auto it = r.extra.begin(); r.extra.is_object() && it != r.extra.end(); ++it) {
    if (!head.contains(it.key()) && it.key() != "hashes") head[it.key()] = it.value();
  }
  std::string line = head.dump();
  if (r.hashes.empty()) return line;
  line.pop_back();  // the closing brace
  line += ",\"hashes\":{";
  bool first = true;
  for (const auto& h : r.hashes) {
    if (!first) line += ',';
    first = false;
    line += json(h.name).dump();
    line += ":\"";
    line += encode_hash_array(h.values);
    line += '"';
  }
  line += "}}";
  return line;
}

}  // namespace gparity::model
