#pragma once
// Self-contained HTML page for `gparity graph ranks --html`: the mesh, the rank groups of each
// trace-level fact, every trace-level finding (compile id, operation, value per rank) and, per
// graph, its verdict and findings with their class, function or note. No scripts, no resources
// from elsewhere.

#include <string>

#include "diff/graphs/rank_classify.hpp"

namespace gparity::diff {

std::string ranks_html(const TraceRanksReport& r, const std::string& path);

}  // namespace gparity::diff
