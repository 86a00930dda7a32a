#pragma once
// JSON text for gparity's own output (--json, JSON reports, exported graphs). Strings are written
// exactly, except for what JSON cannot hold: JSON text is UTF-8, and a string read from an input
// (a path on a Linux file system, a name in a trace) may hold any bytes. Such a byte is written as
// U+FFFD instead of ending the command with an exception (nlohmann's default); the text report
// shows the same bytes as \xNN (display_text.hpp).

#include <nlohmann/json.hpp>
#include <string>

namespace gparity::model {

/// `doc` as JSON text, indented by `indent` spaces (-1: one line).
template <typename Json>
std::string json_output(const Json& doc, int indent = 2) {
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gparity::model
