#pragma once
// Self-contained HTML page for a two-graph diff: both graphs side by side (one row per node,
// as FX prints it), added / removed / changed / moved nodes highlighted, and a findings list
// whose entries link to the nodes on both sides. No scripts or resources from elsewhere.

#include <string>
#include <string_view>

#include "diff/graphs/graph_diff.hpp"

namespace gparity::diff {

std::string graph_diff_html(const GraphDiffResult& r, const model::Graph& a, std::string_view a_label,
                            const model::Graph& b, std::string_view b_label);

/// Escapes &, <, >, " and ' for HTML text and attributes.
std::string html_escape(std::string_view text);

}  // namespace gparity::diff
