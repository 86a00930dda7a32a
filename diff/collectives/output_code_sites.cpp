#include "diff/collectives/output_code_sites.hpp"

#include <map>
#include <string_view>
#include <utility>

#include "core/model/base/input_error.hpp"
#include "core/model/ops/inductor_provenance.hpp"
#include "diff/collectives/collectives_internal.hpp"

namespace gparity::diff {
namespace {

std::string_view file_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

/// One rank's launch sites by (output code file name, line); the full path kept to prefer it.
struct RankSites {
  struct Site {
    std::string path;
    const model::ops::LaunchSite* launch = nullptr;
  };
  std::multimap<std::pair<std::string, std::int64_t>, Site> by_line;
};

const model::ops::LaunchSite* find_site(const RankSites& sites, const CollectiveOp& op) {
  const auto [lo, hi] = sites.by_line.equal_range({std::string(file_name(op.site_path)), op.site_line});
  const model::ops::LaunchSite* by_name = nullptr;
  int named = 0;
  for (auto it = lo; it != hi; ++it) {
    if (it->second.path == op.site_path) return it->second.launch;
    by_name = it->second.launch;
    ++named;
  }
  return named == 1 ? by_name : nullptr;  // two modules of one name elsewhere: ambiguous, unnamed
}

std::string node_text(const model::ops::LaunchSite& s) {
  std::string t = "node " + collectives::join(s.source_nodes, ", ");
  if (!s.aten.empty()) t += " (" + collectives::join(s.aten, ", ") + ")";
  return t;
}

}  // namespace

std::size_t name_output_code_nodes(CollectiveRun& run, std::span<const std::string> trace_dirs) {
  bool any_site = false;
  for (const auto& r : run.ranks)
    for (const auto& s : r.streams)
      for (const auto& op : s.ops) any_site = any_site || (s.flight_recorder() && op.site_line > 0);
  if (!any_site || trace_dirs.empty()) return 0;
  std::vector<model::ops::RunProvenance> provenance;
  for (const auto& dir : trace_dirs) {
    try {
      provenance.push_back(model::ops::read_provenance(dir));
    } catch (const model::InputError& e) {
      run.problems.push_back(std::string(e.what()));
    }
  }
  std::map<int, RankSites> ranks;
  for (const auto& p : provenance)
    for (const auto& rp : p.ranks)
      for (const auto& code : rp.codes)
        for (const auto& launch : code.launches)
          if (!launch.source_nodes.empty())
            ranks[rp.rank].by_line.insert(
                {{std::string(file_name(code.path)), launch.line}, {code.path, &launch}});
  std::size_t named = 0;
  for (auto& r : run.ranks) {
    const auto it = ranks.find(r.rank);
    if (it == ranks.end()) continue;
    for (auto& s : r.streams) {
      if (!s.flight_recorder()) continue;
      for (auto& op : s.ops) {
        if (op.site_line <= 0) continue;
        const auto* launch = find_site(it->second, op);
        if (launch == nullptr) continue;
        op.node = collectives::join(launch->source_nodes, ", ");
        op.site += ", " + node_text(*launch);
        ++named;
      }
    }
  }
  return named;
}

}  // namespace gparity::diff
