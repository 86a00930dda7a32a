#pragma once
// The files of a multi-rank TORCH_TRACE, shared by read_torch_trace_dir (torch_trace.hpp) and the
// readers that read the same logs their own way (diff/graphs/ranks_input.hpp): which files are
// logs, and the refusal of a rank logged twice. Defined in torch_trace.cpp.

#include <span>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"

namespace gparity::model {

/// The logs of `path`, sorted by name: a directory's regular files that look like TORCH_TRACE
/// logs by content (stray files, empty logs, notes are not ranks), or the one file. InputError
/// when the directory cannot be listed or holds no log; a looping link throws, naming it.
std::vector<std::string> torch_trace_files(const std::string& path);

/// InputError naming `path` when two neighbours of `ranks` (sorted by rank) are one rank: a
/// restarted job writes a second log, and every per-rank answer would silently take one of
/// them, or count the rank twice.
void refuse_rank_in_two_logs(std::span<const TorchTraceRank> ranks, const std::string& path);

}  // namespace gparity::model
