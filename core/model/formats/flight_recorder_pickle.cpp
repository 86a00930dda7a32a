#include "core/model/formats/flight_recorder_pickle.hpp"

#include <fstream>

#include "core/model/formats/pickle/pickle_interpret.hpp"
#include "core/model/formats/pickle/pickle_machine.hpp"

namespace gparity::model {

bool looks_like_pickle(std::span<const std::byte> head) noexcept {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 &&
         static_cast<unsigned char>(head[1]) >= 2 && static_cast<unsigned char>(head[1]) <= 5;
}

bool is_flight_recorder_pickle(const std::string& path) noexcept {
  try {
    std::ifstream in(path, std::ios::binary);
    char buf[64] = {};
    in.read(buf, sizeof buf);
    const std::string_view head(buf, static_cast<std::size_t>(in.gcount()));
    if (!looks_like_pickle(std::as_bytes(std::span(buf, head.size())))) return false;
    std::size_t i = 2;
    if (head.size() > i && head[i] == '\x95') i += 9;  // FRAME
    return head.size() > i && head[i] == '}' && head.find("version") != std::string_view::npos;
  } catch (...) {
    return false;
  }
}

std::string flight_recorder_pickle_to_json(std::span<const std::byte> bytes, const std::string& source) {
  const auto doc = pickle::decode(bytes, source);
  pickle::require_allowed(doc, {});  // a dump is plain data: any global at all is refused
  if (doc.root->kind != pickle::Kind::Dict)
    pickle::fail_at(doc, *doc.root,
                    "a Flight Recorder dump is a dict, this pickle holds " + pickle::describe(*doc.root));
  // Invalid UTF-8 in a string (a mangled frame name) is replaced, not fatal.
  return pickle::to_json(doc, *doc.root).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<FlightRecorderDump> read_flight_recorder_pickle_if_dump(std::span<const std::byte> bytes,
                                                                      const std::string& source,
                                                                      std::string& holds) {
  const auto doc = pickle::decode(bytes, source);
  pickle::require_allowed(doc, {});  // plain data only, whatever it turns out to be
  const auto* items = pickle::as_dict(*doc.root);
  if (items == nullptr) {
    const std::string kind = pickle::describe(*doc.root);
    holds = kind == "None" ? kind : (kind.find_first_of("aeiou") == 0 ? "an " : "a ") + kind;
    return std::nullopt;
  }
  bool has_entries = false;
  std::string keys;
  std::size_t listed = 0;
  for (const auto& [k, v] : *items) {
    (void)v;
    if (k->kind != pickle::Kind::Str) continue;
    const std::string& name = pickle::as_str(doc, *k, "a key");
    has_entries = has_entries || name == "entries";
    if (listed++ < 5) {
      std::string shown = name.substr(0, 40);
      for (auto& c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
      keys += (keys.empty() ? "'" : ", '") + shown + "'";
    }
  }
  if (!has_entries) {
    holds = items->empty() ? "an empty dict"
                           : "a dict with keys " + keys + (listed > 5 ? ", ..." : "") + " and no 'entries'";
    return std::nullopt;
  }
  FlightRecorderDump d = parse_flight_recorder(
      pickle::to_json(doc, *doc.root).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), source);
  if (d.rank < 0) d.rank = rank_in_file_name(source);
  return d;
}

FlightRecorderDump parse_flight_recorder_pickle(std::span<const std::byte> bytes, const std::string& source) {
  FlightRecorderDump d = parse_flight_recorder(flight_recorder_pickle_to_json(bytes, source), source);
  if (d.rank < 0) d.rank = rank_in_file_name(source);
  return d;
}

}  // namespace gparity::model
