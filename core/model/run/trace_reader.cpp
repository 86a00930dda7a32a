#include "core/model/run/trace_reader.hpp"

#include <cstring>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"

namespace gparity::model {
namespace {

using nlohmann::json;

// ---- A minimal scanner for the top level of one JSON object --------------------------------
// It only finds where each member's value starts and ends; the values themselves are parsed by
// nlohmann (small fields) or decoded as base64 (hash arrays). Anything it does not understand
// makes it give up, and the caller falls back to the full parser for an exact error message.

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::size_t skip_space(std::string_view t, std::size_t i) noexcept {
  while (i < t.size() && is_space(t[i])) ++i;
  return i;
}

/// t[i] == '"'; returns the index just past the closing quote, or npos.
std::size_t skip_string(std::string_view t, std::size_t i) noexcept {
  ++i;
  while (i < t.size()) {
    const void* q = std::memchr(t.data() + i, '"', t.size() - i);
    if (q == nullptr) return std::string_view::npos;
    const auto end = static_cast<std::size_t>(static_cast<const char*>(q) - t.data());
    std::size_t backslashes = 0;
    while (end - backslashes > i && t[end - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return end + 1;
    i = end + 1;
  }
  return std::string_view::npos;
}

/// Skips one JSON value starting at t[i]; returns the index just past it, or npos.
std::size_t skip_value(std::string_view t, std::size_t i) noexcept {
  if (i >= t.size()) return std::string_view::npos;
  if (t[i] == '"') return skip_string(t, i);
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = skip_string(t, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') {
        if (++depth > kMaxJsonDepth) return std::string_view::npos;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  const std::size_t start = i;
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_space(t[i])) ++i;
  return i == start ? std::string_view::npos : i;
}

struct RawMember {
  std::string_view key;  // without quotes; never contains escapes
  std::string_view value;
};

/// Splits the object `t` (exactly one object plus whitespace) into raw members.
bool scan_object(std::string_view t, std::vector<RawMember>& out) {
  out.clear();
  std::size_t i = skip_space(t, 0);
  if (i >= t.size() || t[i] != '{') return false;
  i = skip_space(t, i + 1);
  if (i < t.size() && t[i] == '}') return skip_space(t, i + 1) == t.size();
  while (i < t.size()) {
    if (t[i] != '"') return false;
    const std::size_t key_end = skip_string(t, i);
    if (key_end == std::string_view::npos) return false;
    const std::string_view key = t.substr(i + 1, key_end - i - 2);
    if (key.find('\\') != std::string_view::npos) return false;
    i = skip_space(t, key_end);
    if (i >= t.size() || t[i] != ':') return false;
    i = skip_space(t, i + 1);
    const std::size_t value_end = skip_value(t, i);
    if (value_end == std::string_view::npos) return false;
    out.push_back({key, t.substr(i, value_end - i)});
    i = skip_space(t, value_end);
    if (i >= t.size()) return false;
    if (t[i] == '}') return skip_space(t, i + 1) == t.size();
    if (t[i] != ',') return false;
    i = skip_space(t, i + 1);
  }
  return false;
}

StepRecord step_from_json(const json& j, const std::string& source, std::int64_t line) {
  StepRecord r;
  const auto it = j.find("step");
  if (it == j.end() || !it->is_number_integer())
    throw InputError(source, line, "step record without an integer \"step\"");
  r.step = it->get<std::int64_t>();
  for (auto m = j.begin(); m != j.end(); ++m) {
    const auto& key = m.key();
    if (key == "type" || key == "step") continue;
    if (key == "loss") {
      r.loss = scalar_from_json(*m, source, line);
    } else if (key == "grad_norm") {
      r.grad_norm = scalar_from_json(*m, source, line);
    } else if (key == "scalars" && m->is_object()) {
      for (auto s = m->begin(); s != m->end(); ++s)
        r.scalars.push_back({s.key(), scalar_from_json(*s, source, line)});
    } else if (key == "shard_spec") {
      r.shard_spec = shard_spec_field(j, source, line);
    } else if (key == "hashes" && m->is_object()) {
      for (auto h = m->begin(); h != m->end(); ++h) {
        if (!h->is_string()) throw InputError(source, line, "hash array \"" + h.key() + "\" is not a string");
        auto values = decode_hash_array(h->get<std::string>());
        if (!values)
          throw InputError(source, line, "hash array \"" + h.key() + "\" is not base64 of 8-byte values");
        r.hashes.push_back({h.key(), std::move(*values)});
      }
    } else {
      r.extra[key] = *m;
    }
  }
  return r;
}

/// The fast path for step lines: hash arrays decoded from the raw text, the rest parsed as one
/// small JSON object. Returns false when the scanner cannot follow the line.
bool fast_step(std::string_view line, const std::string& source, std::int64_t line_no, StepRecord& out) {
  thread_local std::vector<RawMember> top;
  thread_local std::vector<RawMember> inner;
  if (!scan_object(line, top)) return false;
  std::string small = "{";
  std::string_view hashes;
  bool is_step = false;
  for (const auto& m : top) {
    if (m.key == "hashes") {
      hashes = m.value;
      continue;
    }
    if (m.key == "type") is_step = m.value == "\"step\"";
    if (small.size() > 1) small += ',';
    small += '"';
    small += m.key;
    small += "\":";
    small += m.value;
  }
  if (!is_step) return false;
  small += '}';
  out = step_from_json(parse_json(small, source, line_no), source, line_no);
  if (hashes.empty()) return true;
  if (!scan_object(hashes, inner)) return false;
  out.hashes.reserve(inner.size());
  for (const auto& m : inner) {
    if (m.value.size() < 2 || m.value.front() != '"') {
      throw InputError(source, line_no, "hash array \"" + std::string(m.key) + "\" is not a string");
    }
    auto values = decode_hash_array(m.value.substr(1, m.value.size() - 2));
    if (!values)
      throw InputError(source, line_no,
                       "hash array \"" + std::string(m.key) + "\" is not base64 of 8-byte values");
    out.hashes.push_back({std::string(m.key), std::move(*values)});
  }
  return true;
}

void check_alignment(const StepRecord& r, std::size_t params_size, const std::string& source,
                     std::int64_t line) {
  if (params_size == kNoParamsTable) return;
  for (const auto& h : r.hashes) {
    if (h.values.size() != params_size) {
      throw InputError(source, line,
                       "step " + std::to_string(r.step) + ": hash array \"" + h.name + "\" has " +
                           std::to_string(h.values.size()) + " values but the params table has " +
                           std::to_string(params_size));
    }
  }
}

}  // namespace

std::string TraceIssue::text() const {
  return line > 0 ? source + ":" + std::to_string(line) + ": " + problem : source + ": " + problem;
}

const ParamsRecord* RankTrace::table_of(std::size_t step_index) const noexcept {
  if (step_index >= step_table.size() || step_table[step_index] == kNoParamsTable) return nullptr;
  return &params_tables[step_table[step_index]];
}

RunRecord parse_trace_line(std::string_view line, const std::string& source, std::int64_t line_no,
                           std::size_t params_size) {
  // Step lines are by far the most and the largest: try the fast path first.
  // The writer puts "type" first; records ordered otherwise still parse, on the slow path.
  if (line.substr(0, 64).find("\"step\"") != std::string_view::npos) {
    StepRecord step;
    if (fast_step(line, source, line_no, step)) {
      check_alignment(step, params_size, source, line_no);
      return step;
    }
  }
  const json j = parse_json(line, source, line_no);
  if (!j.is_object()) throw InputError(source, line_no, "record is not a JSON object");
  const auto type_it = j.find("type");
  if (type_it == j.end() || !type_it->is_string())
    throw InputError(source, line_no, "record without a string \"type\"");
  const auto type = type_it->get<std::string>();
  if (type == "step") {
    auto step = step_from_json(j, source, line_no);
    check_alignment(step, params_size, source, line_no);
    return step;
  }
  if (type == "params") return params_from_json(j, source, line_no);
  if (type == "buckets") return buckets_from_json(j, source, line_no);
  if (type == "devices") return devices_from_json(j, source, line_no);
  if (type == "graph") return graph_from_json(j, source, line_no);
  if (type == "event") return event_from_json(j, source, line_no);
  if (type == "node") return node_from_json(j, source, line_no);
  return UnknownRecord{type, j};
}

void scan_jsonl(std::string_view text, const std::string& source,
                const std::function<void(std::string_view line, std::int64_t line_no)>& parse,
                const std::function<void(TraceIssue&&)>& on_issue) {
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    const bool complete = nl != nullptr;
    const std::size_t end =
        complete ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = complete ? end + 1 : text.size();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    try {
      parse(line, line_no);
    } catch (const InputError& e) {
      if (!complete) {
        on_issue({TraceIssue::Kind::TruncatedTail, source, line_no,
                  "truncated last line (" + std::to_string(line.size()) +
                      " bytes, no newline), ignored: " + e.problem()});
      } else {
        on_issue({TraceIssue::Kind::CorruptLine, source, line_no, "corrupt line skipped: " + e.problem()});
      }
    }
  }
}

void scan_trace_text(std::string_view text, const std::string& source,
                     const std::function<void(RunRecord&&, std::int64_t line)>& on_record,
                     const std::function<void(TraceIssue&&)>& on_issue) {
  std::size_t params_size = kNoParamsTable;
  scan_jsonl(
      text, source,
      [&](std::string_view line, std::int64_t line_no) {
        RunRecord record = parse_trace_line(line, source, line_no, params_size);
        if (const auto* p = std::get_if<ParamsRecord>(&record)) params_size = p->params.size();
        on_record(std::move(record), line_no);
      },
      on_issue);
}

RankTrace read_rank_trace(const std::string& path, int rank) {
  const MappedFile file(path);
  RankTrace out;
  out.rank = rank;
  out.source = path;
  scan_trace_text(
      file.text(), path,
      [&out](RunRecord&& record, std::int64_t) {
        std::visit(
            [&out](auto&& r) {
              using T = std::decay_t<decltype(r)>;
              if constexpr (std::is_same_v<T, ParamsRecord>) {
                out.params_tables.push_back(std::move(r));
              } else if constexpr (std::is_same_v<T, StepRecord>) {
                out.steps.push_back(std::move(r));
                out.step_table.push_back(out.params_tables.empty() ? kNoParamsTable
                                                                   : out.params_tables.size() - 1);
              } else if constexpr (std::is_same_v<T, BucketsRecord>) {
                out.buckets.push_back(std::move(r));
              } else if constexpr (std::is_same_v<T, DevicesRecord>) {
                out.devices.push_back(std::move(r));
              } else if constexpr (std::is_same_v<T, GraphRef>) {
                out.graphs.push_back(std::move(r));
              } else if constexpr (std::is_same_v<T, EventRecord>) {
                out.events.push_back(std::move(r));
              } else if constexpr (std::is_same_v<T, NodeRecord>) {
                out.nodes.push_back(std::move(r));
              } else {
                out.unknown.push_back(std::move(r));
              }
            },
            std::move(record));
      },
      [&out](TraceIssue&& issue) { out.issues.push_back(std::move(issue)); });
  return out;
}

}  // namespace gparity::model
