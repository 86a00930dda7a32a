#pragma once
// Our own JSON form of the graph IR (docs/graph-format.md): exact round trip — every field of
// every node, value and annotation comes back as it went out (floats keep their printed text,
// symbolic sizes their expression). Reading it back treats the document as untrusted.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/graph/graph.hpp"

namespace gparity::model {

inline constexpr const char* kGraphJsonFormat = "gparity.graph";
inline constexpr int kGraphJsonVersion = 1;

nlohmann::ordered_json graph_to_json(const Graph& g);

/// Throws InputError(source, ...) naming the node and field that is malformed.
Graph graph_from_json(const nlohmann::ordered_json& j, const std::string& source);

/// The JSON form of one value / annotation, as used inside graph_to_json (for reports).
nlohmann::ordered_json value_to_json(const Graph& g, const Value& v);
nlohmann::ordered_json meta_to_json(const Graph& g, const TensorMeta& m);

}  // namespace gparity::model
