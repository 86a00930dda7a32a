#pragma once
// torch.export .pt2 archives, both layouts: the flat zip of torch <= 2.7
// (`[<root>/]serialized_exported_program.json`) and the 2.8+ package archive
// (`<root>/archive_format` = "pt2", `<root>/models/<name>.json`). Only JSON members are read;
// pickles and weights are never opened. Nodes come from the serialized schema: target, inputs
// (positional and keyword, by name), outputs (multi-output nodes get operator.getitem nodes, as
// in FX), tensor_values metadata, stack_trace (innermost frame) and nn_module_stack metadata.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/formats/zip_archive.hpp"
#include "core/model/graph/graph.hpp"

namespace gparity::model {

struct ExportedGraph {
  std::string member;  // the zip member the program came from
  Graph graph;
};

/// Every exported program in the archive (one per model JSON).
std::vector<ExportedGraph> read_pt2(const std::string& path, ZipLimits limits = {});

/// Converts one serialized ExportedProgram document (the model JSON). `source` names it in errors.
Graph exported_program_to_graph(const nlohmann::json& program, const std::string& source);

}  // namespace gparity::model
