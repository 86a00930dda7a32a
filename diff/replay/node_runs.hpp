#pragma once
// Node findings of two whole runs, for viewers (gui/node_findings.hpp): a header of its own
// that includes neither the trace reader nor graph loading, so GUI code stays light. Defined in
// node_findings.cpp.

#include <string>
#include <vector>

#include "diff/report/finding.hpp"

namespace gparity::diff {

/// The "node_divergence" and "node_origin" findings of comparing two runs (paths model::open_run
/// reads) through compare_runs, as `gparity compare` reports them. Throws model::InputError for
/// input it cannot use.
std::vector<Finding> node_divergences_of_runs(const std::string& baseline, const std::string& candidate);

}  // namespace gparity::diff
