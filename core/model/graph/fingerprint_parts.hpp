#pragma once
// The pieces model::fingerprint (graph.hpp) hashes, for callers that hold many nearly equal
// graphs and hash one from another's bytes (diff::RankGraphSet: ranks' graphs that share most
// nodes). fingerprint(g, norm) of a graph without subgraphs equals
// fingerprint_of_parts({header bytes, node 0 bytes, node 1 bytes, ...}) for any cut of those
// bytes into parts. Node bytes depend on the nodes before them when norm.renumber_symbols is set
// (symbols are numbered in order of first appearance): not supported here.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/model/graph/graph.hpp"

namespace gparity::model {

/// Appends the bytes of g's header (name, node count) to `out`.
void fingerprint_header_bytes(const Graph& g, std::string& out);
/// Appends the bytes of node `i` under `norm` to `out`.
void fingerprint_node_bytes(const Graph& g, NodeId i, const Normalization& norm, std::string& out);
/// The fingerprint of the concatenated parts of a graph without subgraphs.
std::uint64_t fingerprint_of_parts(std::span<const std::string_view> parts);

}  // namespace gparity::model
