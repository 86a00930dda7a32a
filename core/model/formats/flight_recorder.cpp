#include "core/model/formats/flight_recorder.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/flight_recorder_pickle.hpp"
#include "core/model/graph/graph_json.hpp"

namespace gparity::model {

std::string_view FlightRecorderEntry::op() const noexcept {
  const std::string_view n = profiling_name;
  const auto colon = n.find(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

std::vector<const FlightRecorderEntry*> FlightRecorderDump::sequence(std::string_view pg_name) const {
  std::vector<const FlightRecorderEntry*> out;
  for (const auto& e : entries) {
    if (e.pg_name == pg_name) out.push_back(&e);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    return std::pair(a->collective_seq_id, a->p2p_seq_id) < std::pair(b->collective_seq_id, b->p2p_seq_id);
  });
  return out;
}

namespace {

using Json = nlohmann::json;

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  FlightRecorderDump dump(const Json& j) {
    FlightRecorderDump d;
    d.source = source_;
    if (!j.is_object()) fail("a Flight Recorder dump is a JSON object");
    d.version = text(j, "version", true);
    d.comm_lib_version = text(j, "comm_lib_version", true);
    if (j.contains("pg_config")) {
      const Json& pgs = j["pg_config"];
      if (!pgs.is_object()) fail("pg_config is not an object");
      for (auto it = pgs.begin(); it != pgs.end(); ++it) {
        where_ = "pg_config[\"" + it.key() + "\"]";
        ProcessGroupConfig g;
        g.id = it.key();
        g.name = text(it.value(), "name", true);
        g.desc = text(it.value(), "desc", true);
        if (it.value().contains("ranks")) g.ranks = ranks(it.value()["ranks"]);
        d.groups.push_back(std::move(g));
      }
    }
    where_.clear();
    if (!j.contains("entries") || !j["entries"].is_array()) fail("no \"entries\" array");
    const Json& entries = j["entries"];
    d.entries.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      where_ = "entries[" + std::to_string(i) + "]";
      d.entries.push_back(entry(entries[i]));
    }
    return d;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(source_, where_.empty() ? problem : where_ + ": " + problem);
  }
  std::string text(const Json& j, const char* key, bool optional) const {
    if (!j.is_object() || !j.contains(key)) {
      if (optional) return {};
      fail(std::string("missing \"") + key + "\"");
    }
    if (!j[key].is_string()) fail(std::string("\"") + key + "\" is not a string");
    return j[key].get<std::string>();
  }
  std::int64_t integer(const Json& j, const char* key, std::int64_t fallback, bool optional) const {
    if (!j.contains(key) || j[key].is_null()) {
      if (optional) return fallback;
      fail(std::string("missing \"") + key + "\"");
    }
    if (!j[key].is_number_integer()) fail(std::string("\"") + key + "\" is not an integer");
    return j[key].get<std::int64_t>();
  }
  // pg_config ranks are written as a string "[0, 1]" (or an array in some versions).
  std::vector<std::int64_t> ranks(const Json& r) const {
    std::vector<std::int64_t> out;
    if (r.is_array()) {
      for (const auto& x : r) {
        if (!x.is_number_integer()) fail("ranks must be integers");
        out.push_back(x.get<std::int64_t>());
      }
      return out;
    }
    if (!r.is_string()) fail("ranks must be a list or a string");
    const std::string& s = r.get_ref<const std::string&>();
    for (std::size_t i = 0; i < s.size();) {
      if ((s[i] >= '0' && s[i] <= '9') || s[i] == '-') {
        std::int64_t v = 0;
        const auto res = std::from_chars(s.data() + i, s.data() + s.size(), v);
        if (res.ec != std::errc()) fail("malformed ranks \"" + s.substr(0, 40) + "\"");
        out.push_back(v);
        i = static_cast<std::size_t>(res.ptr - s.data());
      } else {
        ++i;
      }
    }
    return out;
  }
  std::vector<std::vector<std::int64_t>> shapes(const Json& j, const char* key) const {
    std::vector<std::vector<std::int64_t>> out;
    if (!j.contains(key)) return out;
    if (!j[key].is_array()) fail(std::string("\"") + key + "\" is not a list of shapes");
    for (const auto& s : j[key]) {
      if (!s.is_array()) fail(std::string("\"") + key + "\" is not a list of shapes");
      std::vector<std::int64_t> dims;
      for (const auto& d : s) {
        if (!d.is_number_integer()) fail(std::string("\"") + key + "\" holds a non-integer size");
        dims.push_back(d.get<std::int64_t>());
      }
      out.push_back(std::move(dims));
    }
    return out;
  }
  std::vector<std::string> strings(const Json& j, const char* key) const {
    std::vector<std::string> out;
    if (!j.contains(key)) return out;
    if (!j[key].is_array()) fail(std::string("\"") + key + "\" is not a list");
    for (const auto& s : j[key]) {
      if (!s.is_string()) fail(std::string("\"") + key + "\" holds a non-string");
      out.push_back(s.get<std::string>());
    }
    return out;
  }

  FlightRecorderEntry entry(const Json& j) const {
    if (!j.is_object()) fail("an entry is not an object");
    FlightRecorderEntry e;
    e.record_id = integer(j, "record_id", -1, false);
    e.pg_id = integer(j, "pg_id", -1, true);
    if (j.contains("process_group")) {
      const Json& pg = j["process_group"];
      if (!pg.is_array() || pg.empty() || !pg[0].is_string() || (pg.size() > 1 && !pg[1].is_string())) {
        fail("\"process_group\" is not [name, desc]");
      }
      e.pg_name = pg[0].get<std::string>();
      if (pg.size() > 1) e.pg_desc = pg[1].get<std::string>();
    }
    e.collective_seq_id = integer(j, "collective_seq_id", 0, true);
    e.p2p_seq_id = integer(j, "p2p_seq_id", 0, true);
    e.op_id = integer(j, "op_id", -1, true);
    if (j.contains("is_p2p")) {
      if (!j["is_p2p"].is_boolean()) fail("\"is_p2p\" is not a boolean");
      e.is_p2p = j["is_p2p"].get<bool>();
    }
    e.profiling_name = text(j, "profiling_name", false);
    e.input_sizes = shapes(j, "input_sizes");
    e.output_sizes = shapes(j, "output_sizes");
    e.input_dtypes = strings(j, "input_dtypes");
    e.output_dtypes = strings(j, "output_dtypes");
    e.state = text(j, "state", true);
    if (j.contains("retired") && j["retired"].is_boolean()) e.retired = j["retired"].get<bool>();
    e.time_created_ns = integer(j, "time_created_ns", 0, true);
    if (j.contains("frames")) {
      if (!j["frames"].is_array()) fail("\"frames\" is not a list");
      for (const auto& f : j["frames"]) {
        if (!f.is_object()) fail("a frame is not an object");
        e.frames.push_back({text(f, "name", true), text(f, "filename", true), integer(f, "line", 0, true)});
      }
    }
    return e;
  }

  const std::string& source_;
  std::string where_;
};

std::int32_t rank_of(const std::string& path) {
  const auto name = std::filesystem::path(path).filename().string();
  if (!name.starts_with("rank")) return -1;
  std::int32_t r = -1;
  const auto res = std::from_chars(name.data() + 4, name.data() + name.size(), r);
  return res.ec == std::errc() ? r : -1;
}

}  // namespace

FlightRecorderDump parse_flight_recorder(std::string_view text, const std::string& source) {
  const Json j = parse_json(text, source);
  Reader r(source);
  FlightRecorderDump d = r.dump(j);
  d.rank = rank_of(source);
  return d;
}

FlightRecorderDump read_flight_recorder(const std::string& path) {
  const MappedFile file(path);
  if (looks_like_pickle(file.bytes().first(std::min<std::size_t>(file.bytes().size(), 2))))
    return parse_flight_recorder_pickle(file.bytes(), path);  // PyTorch's default, pickled form
  return parse_flight_recorder(file.text(), path);
}

}  // namespace gparity::model
