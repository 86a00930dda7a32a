#pragma once
// Importer for torchtitan-style console logs: lines such as
//   [rank1]:[titan] 2025-01-01 12:00:00,000 - root - INFO - step:  5  loss:  6.3788  grad_norm:  0.5355
//   memory: ...
// with ANSI colour codes, optional `[rankN]:` prefixes (lines without one belong to rank 0) and
// any logger prefix. The values are rounded to the printed digits: they are kept as float64 of
// the printed text, and every report on them must say that parity cannot be proven bitwise.
// Non-step lines are ignored; a step line whose numbers do not parse is reported.

#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_reader.hpp"

namespace gparity::model {

/// All ranks found in one log, sorted by rank.
std::vector<RankTrace> import_titan_log(const std::string& path);
/// Same, over text already in memory (`source` names it in issues).
std::vector<RankTrace> import_titan_text(std::string_view text, const std::string& source);

/// Removes ANSI escape sequences (ESC '[' ... final byte).
std::string strip_ansi(std::string_view text);

}  // namespace gparity::model
