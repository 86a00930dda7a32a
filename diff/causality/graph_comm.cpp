#include "diff/causality/graph_comm.hpp"

#include <algorithm>

namespace gparity::diff::causality {

std::optional<Comm> comm_of_node(const model::Graph& g, model::NodeId id) {
  const auto& n = g.node(id);
  if (n.kind != model::NodeKind::CallFunction) return std::nullopt;
  const auto target = g.str(n.target);
  if (!model::is_functional_collective(target) || target.find(".wait_tensor") != std::string_view::npos)
    return std::nullopt;
  Comm c;
  const int pg = model::process_group_arg(g, n);
  if (target.starts_with("c10d_functional.")) {
    // Legacy (input, ..., tag, ranks, group_size): the rank list after the tag names the group.
    const auto p = static_cast<std::size_t>(pg + 1);
    if (pg >= 0 && p < n.args.size() && n.args[p].kind == model::ValueKind::List) {
      std::string key;
      for (const auto& item : n.args[p].items) {
        if (item.kind != model::ValueKind::Int) {
          key.clear();
          break;
        }
        key += (key.empty() ? "ranks:" : ",") + std::to_string(item.i);
      }
      c.group = key;
    }
  } else {
    if (pg >= 0) c.group = std::string(g.str(n.args[static_cast<std::size_t>(pg)].s));
    for (const auto& kw : n.kwargs) {
      if (g.str(kw.name) == "group_name" && kw.value.kind == model::ValueKind::String)
        c.group = std::string(g.str(kw.value.s));
    }
  }
  if (c.group.empty()) return std::nullopt;  // no group named: nothing to match it by
  return c;
}

GroupTable group_table(const model::ProcessGroupTable& t) {
  GroupTable out;
  for (const auto& g : t.groups()) {
    Group grp;
    for (const auto r : g.ranks) grp.ranks.push_back(static_cast<int>(r));
    std::sort(grp.ranks.begin(), grp.ranks.end());
    grp.desc = g.desc;
    out[g.name] = std::move(grp);
  }
  return out;
}

}  // namespace gparity::diff::causality
