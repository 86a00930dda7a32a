#pragma once
// Our own JSON form of the graph IR (docs/graph-format.md): exact round trip — every field of
// every node, value and annotation comes back as it went out (floats keep their printed text,
// symbolic sizes their expression). Reading it back treats the document as untrusted.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/model/graph.hpp"
#include "core/model/input_error.hpp"
#include "core/model/json_input.hpp"

namespace gparity::model {

inline constexpr const char* kGraphJsonFormat = "gparity.graph";
inline constexpr int kGraphJsonVersion = 1;

nlohmann::ordered_json graph_to_json(const Graph& g);

/// Throws InputError(source, ...) naming the node and field that is malformed.
Graph graph_from_json(const nlohmann::ordered_json& j, const std::string& source);

/// The JSON form of one value / annotation, as used inside graph_to_json (for reports).
nlohmann::ordered_json value_to_json(const Graph& g, const Value& v);
nlohmann::ordered_json meta_to_json(const Graph& g, const TensorMeta& m);

/// parse_json that also turns nlohmann's non-syntax exceptions into InputError: a number too
/// large for a double ("1e999999") throws out_of_range.406, which parse_json lets escape
/// (found by fuzz_flight_recorder and fuzz_torch_trace; docs/fuzzing.md).
inline nlohmann::json parse_json_checked(std::string_view text, const std::string& source,
                                         std::int64_t first_line = 1) {
  try {
    return parse_json(text, source, first_line);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw InputError(source, first_line, "invalid JSON: " + what);
  }
}

inline nlohmann::ordered_json parse_ordered_json_checked(std::string_view text, const std::string& source,
                                                         std::int64_t first_line = 1) {
  try {
    return parse_ordered_json(text, source, first_line);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw InputError(source, first_line, "invalid JSON: " + what);
  }
}

}  // namespace gparity::model
