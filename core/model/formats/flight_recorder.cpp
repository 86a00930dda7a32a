#include "core/model/formats/flight_recorder.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

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
    if (j.contains("pg_status")) {
      const Json& st = j["pg_status"];
      if (!st.is_object()) fail("pg_status is not an object");
      for (auto it = st.begin(); it != st.end(); ++it) {
        where_ = "pg_status[\"" + it.key() + "\"]";
        if (!it.value().is_object()) fail("not an object");
        ProcessGroupStatus ps;
        ps.pg_id = number_text(it.key(), "the key");
        ps.last_enqueued = status_value(it.value(), "last_enqueued_collective");
        ps.last_started = status_value(it.value(), "last_started_collective");
        ps.last_completed = status_value(it.value(), "last_completed_collective");
        d.status.push_back(ps);
      }
    }
    where_.clear();
    // PyTorch leaves "entries" out of a dump with none (dump_json); a dump is still told by its
    // pg_config and pg_status, which it always writes.
    if (!j.contains("entries") && j.contains("pg_config") && j.contains("pg_status")) return d;
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
  std::int64_t number_text(const std::string& text, const char* what) const {
    std::int64_t v = 0;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (res.ec != std::errc() || res.ptr != text.data() + text.size())
      fail(std::string(what) + " \"" + text.substr(0, 40) + "\" is not an integer");
    return v;
  }
  // pg_status values: strings in the JSON dump ("12"), integers in the pickle.
  std::int64_t status_value(const Json& j, const char* key) const {
    if (!j.contains(key) || j[key].is_null()) return -1;
    if (j[key].is_number_integer()) return j[key].get<std::int64_t>();
    if (j[key].is_string()) return number_text(j[key].get<std::string>(), key);
    fail(std::string("\"") + key + "\" is not an integer");
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
    e.time_discovered_started_ns = integer(j, "time_discovered_started_ns", 0, true);
    e.time_discovered_completed_ns = integer(j, "time_discovered_completed_ns", 0, true);
    e.timeout_ms = integer(j, "timeout_ms", 0, true);
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

// ---- Fast path for well-formed JSON dumps ----------------------------------------------------
// A dump of a large run is thousands of entries per rank, each with its stack frames; building a
// JSON DOM for all of it costs more than everything `gparity collectives` does with it. This
// reader walks the text once and fills the entries directly. It accepts only what it fully
// understands and validates every value it skips; on anything else (an escape it cannot take
// as is, a wrong type, a number that is not a plain integer where one is due, NaN, deep nesting,
// a duplicate "entries") it gives up and the DOM reader above reads the dump, so every message
// about a malformed dump stays exactly the DOM reader's.
class FastReader {
 public:
  FastReader(std::string_view text, const std::string& source) : t_(text), source_(source) {}

  std::optional<FlightRecorderDump> dump() {
    FlightRecorderDump d;
    d.source = source_;
    if (!expect('{')) return std::nullopt;
    std::string head = "{";  // every top-level member but "entries", read by the DOM reader
    bool entries = false;
    if (!members([&](std::string_view key) {
          if (key == "entries") {
            if (entries) return false;
            entries = true;
            return entry_list(d.entries);
          }
          const std::size_t start = i_;
          if (!skip_value(0)) return false;
          if (head.size() > 1) head += ',';
          head += '"';
          head += key;
          head += "\":";
          head += t_.substr(start, i_ - start);
          return true;
        }))
      return std::nullopt;
    if (skip_ws() != t_.size() || !entries) return std::nullopt;
    head += R"(,"entries":[]})";
    try {
      FlightRecorderDump h = Reader(source_).dump(parse_json(head, source_));
      d.version = std::move(h.version);
      d.comm_lib_version = std::move(h.comm_lib_version);
      d.groups = std::move(h.groups);
      d.status = std::move(h.status);
    } catch (const InputError&) {
      return std::nullopt;
    }
    return d;
  }

 private:
  static constexpr int kMaxSkipDepth = 64;

  std::size_t skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
    return i_;
  }
  bool expect(char c) {
    if (skip_ws() >= t_.size() || t_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool peek(char c) { return skip_ws() < t_.size() && t_[i_] == c; }

  /// `{ "key": value, ... }` after the '{': calls on_member(key) with the cursor at the value.
  template <typename F>
  bool members(F&& on_member) {
    if (peek('}')) return ++i_, true;
    std::string key;
    for (;;) {
      if (!string(key) || !expect(':') || !on_member(std::string_view(key))) return false;
      if (peek(',')) {
        ++i_;
        continue;
      }
      return expect('}');
    }
  }
  /// `[ value, ... ]` after the '[': calls on_element(index) with the cursor at the element.
  template <typename F>
  bool elements(F&& on_element) {
    if (peek(']')) return ++i_, true;
    for (std::size_t k = 0;; ++k) {
      if (!on_element(k)) return false;
      if (peek(',')) {
        ++i_;
        continue;
      }
      return expect(']');
    }
  }

  bool string(std::string& out) {
    if (skip_ws() >= t_.size() || t_[i_] != '"') return false;
    const std::size_t start = ++i_;
    while (i_ < t_.size()) {
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        out.assign(t_.substr(start, i_ - start));
        ++i_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) break;  // escapes, control bytes, UTF-8: exactly
      ++i_;
    }
    // The whole string token through nlohmann, which unescapes and validates it.
    std::size_t end = i_;
    while (end < t_.size() && t_[end] != '"') end += t_[end] == '\\' ? 2 : 1;
    if (end >= t_.size()) return false;
    try {
      out = nlohmann::json::parse(t_.substr(start - 1, end + 1 - (start - 1))).get<std::string>();
    } catch (const nlohmann::json::exception&) {
      return false;
    }
    i_ = end + 1;
    return true;
  }
  /// A JSON number token's extent (strict grammar); false when there is none.
  bool number_token(std::size_t& end, bool& integral) {
    std::size_t j = skip_ws();
    const auto digit = [&](std::size_t k) { return k < t_.size() && t_[k] >= '0' && t_[k] <= '9'; };
    if (j < t_.size() && t_[j] == '-') ++j;
    if (!digit(j)) return false;
    if (t_[j] == '0') {
      ++j;
    } else {
      while (digit(j)) ++j;
    }
    integral = true;
    if (j < t_.size() && t_[j] == '.') {
      integral = false;
      if (!digit(++j)) return false;
      while (digit(j)) ++j;
    }
    if (j < t_.size() && (t_[j] == 'e' || t_[j] == 'E')) {
      integral = false;
      ++j;
      if (j < t_.size() && (t_[j] == '+' || t_[j] == '-')) ++j;
      if (!digit(j)) return false;
      while (digit(j)) ++j;
    }
    end = j;
    return true;
  }
  bool integer(std::int64_t& out) {
    std::size_t end = 0;
    bool integral = false;
    if (!number_token(end, integral) || !integral) return false;
    const auto r = std::from_chars(t_.data() + i_, t_.data() + end, out);
    if (r.ec != std::errc() || r.ptr != t_.data() + end) return false;
    i_ = end;
    return true;
  }
  bool literal(std::string_view word) {
    if (t_.substr(skip_ws(), word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool null() { return peek('n') && literal("null"); }
  bool boolean(bool& out) {
    if (peek('t') && literal("true")) return out = true, true;
    if (peek('f') && literal("false")) return out = false, true;
    return false;
  }
  /// An integer, or null for `fallback` (the DOM reader's optional integers).
  bool optional_integer(std::int64_t& out, std::int64_t fallback) {
    if (null()) return out = fallback, true;
    return integer(out);
  }
  /// Any JSON value, validated and skipped.
  bool skip_value(int depth) {
    if (depth > kMaxSkipDepth || skip_ws() >= t_.size()) return false;
    const char c = t_[i_];
    if (c == '"') {
      std::string s;
      return string(s);
    }
    if (c == '{') {
      ++i_;
      return members([&](std::string_view) { return skip_value(depth + 1); });
    }
    if (c == '[') {
      ++i_;
      return elements([&](std::size_t) { return skip_value(depth + 1); });
    }
    if (c == 't' || c == 'f') {
      bool b = false;
      return boolean(b);
    }
    if (c == 'n') return null();
    std::size_t end = 0;
    bool integral = false;
    if (!number_token(end, integral)) return false;
    i_ = end;
    return true;
  }

  bool shapes(std::vector<std::vector<std::int64_t>>& out) {
    out.clear();
    if (!expect('[')) return false;
    return elements([&](std::size_t) {
      auto& dims = out.emplace_back();
      if (!expect('[')) return false;
      return elements([&](std::size_t) { return integer(dims.emplace_back()); });
    });
  }
  bool strings(std::vector<std::string>& out) {
    out.clear();
    if (!expect('[')) return false;
    return elements([&](std::size_t) { return string(out.emplace_back()); });
  }
  bool frames(std::vector<FlightRecorderFrame>& out) {
    out.clear();
    if (!expect('[')) return false;
    return elements([&](std::size_t) {
      auto& f = out.emplace_back();
      if (!expect('{')) return false;
      return members([&](std::string_view key) {
        if (key == "name") return string(f.name);
        if (key == "filename") return string(f.filename);
        if (key == "line") return optional_integer(f.line, 0);
        return skip_value(1);
      });
    });
  }

  bool entry(FlightRecorderEntry& e) {
    if (!expect('{')) return false;
    bool has_record = false;
    bool has_name = false;
    const bool ok = members([&](std::string_view key) {
      if (key == "record_id") return has_record = true, integer(e.record_id);
      if (key == "pg_id") return optional_integer(e.pg_id, -1);
      if (key == "collective_seq_id") return optional_integer(e.collective_seq_id, 0);
      if (key == "p2p_seq_id") return optional_integer(e.p2p_seq_id, 0);
      if (key == "op_id") return optional_integer(e.op_id, -1);
      if (key == "time_created_ns") return optional_integer(e.time_created_ns, 0);
      if (key == "time_discovered_started_ns") return optional_integer(e.time_discovered_started_ns, 0);
      if (key == "time_discovered_completed_ns") return optional_integer(e.time_discovered_completed_ns, 0);
      if (key == "timeout_ms") return optional_integer(e.timeout_ms, 0);
      if (key == "is_p2p") return boolean(e.is_p2p);
      if (key == "profiling_name") return has_name = true, string(e.profiling_name);
      if (key == "state") return string(e.state);
      if (key == "input_sizes") return shapes(e.input_sizes);
      if (key == "output_sizes") return shapes(e.output_sizes);
      if (key == "input_dtypes") return strings(e.input_dtypes);
      if (key == "output_dtypes") return strings(e.output_dtypes);
      if (key == "frames") return frames(e.frames);
      if (key == "retired") {
        bool b = false;
        e.retired = false;                                   // the DOM reader keeps the last value
        if (!peek('t') && !peek('f')) return skip_value(1);  // and ignores one that is no boolean
        return boolean(b) && (e.retired = b, true);
      }
      if (key == "process_group") {
        e.pg_name.clear();
        e.pg_desc.clear();
        if (!expect('[')) return false;
        std::size_t n = 0;
        const bool read = elements([&](std::size_t k) {
          ++n;
          if (k == 0) return string(e.pg_name);
          if (k == 1) return string(e.pg_desc);
          return skip_value(1);
        });
        return read && n > 0;
      }
      return skip_value(1);
    });
    return ok && has_record && has_name;
  }
  bool entry_list(std::vector<FlightRecorderEntry>& out) {
    out.clear();
    if (!expect('[')) return false;
    return elements([&](std::size_t) { return entry(out.emplace_back()); });
  }

  std::string_view t_;
  const std::string& source_;
  std::size_t i_ = 0;
};

}  // namespace

// "rank" followed by an optional '_' or '-' and digits, anywhere in the file name; the last such
// match wins. Else PyTorch's own names: the prefix it was given, then the rank's digits.
std::int32_t rank_in_file_name(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  std::int32_t rank = -1;
  for (std::size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    std::size_t i = at + 4;
    if (i < name.size() && (name[i] == '_' || name[i] == '-')) ++i;
    std::int32_t r = -1;
    const auto res = std::from_chars(name.data() + i, name.data() + name.size(), r);
    if (res.ec == std::errc() && r >= 0) rank = r;
  }
  if (rank >= 0) return rank;
  std::string_view stem = name;
  for (const std::string_view ext : {".json", ".pkl", ".pickle"})
    if (stem.ends_with(ext)) stem.remove_suffix(ext.size());
  std::size_t digits = stem.size();
  while (digits > 0 && stem[digits - 1] >= '0' && stem[digits - 1] <= '9') --digits;
  // Digits alone ("0") or too many for a rank ("20240105") are no rank.
  if (digits == 0 || digits == stem.size() || stem.size() - digits > 7) return -1;
  std::int32_t r = -1;
  const auto res = std::from_chars(stem.data() + digits, stem.data() + stem.size(), r);
  return res.ec == std::errc() ? r : -1;
}

std::int32_t rank_from_groups(const FlightRecorderDump& d) {
  std::vector<std::int64_t> common;
  bool first = true;
  for (const auto& g : d.groups) {
    if (g.ranks.empty()) continue;
    std::vector<std::int64_t> ranks = g.ranks;
    std::sort(ranks.begin(), ranks.end());
    if (first) {
      common = std::move(ranks);
      first = false;
      continue;
    }
    std::vector<std::int64_t> both;
    std::set_intersection(common.begin(), common.end(), ranks.begin(), ranks.end(), std::back_inserter(both));
    common = std::move(both);
  }
  return common.size() == 1 && common[0] >= 0 && common[0] <= INT32_MAX ? static_cast<std::int32_t>(common[0])
                                                                        : -1;
}

FlightRecorderDump parse_flight_recorder(std::string_view text, const std::string& source) {
  auto fast = FastReader(text, source).dump();
  FlightRecorderDump d = fast ? std::move(*fast) : Reader(source).dump(parse_json(text, source));
  d.rank = rank_in_file_name(source);
  return d;
}

FlightRecorderDump read_flight_recorder(const std::string& path) {
  const MappedFile file(path);
  if (looks_like_pickle(file.bytes().first(std::min<std::size_t>(file.bytes().size(), 2))))
    return parse_flight_recorder_pickle(file.bytes(), path);  // PyTorch's default, pickled form
  return parse_flight_recorder(file.text(), path);
}

}  // namespace gparity::model
