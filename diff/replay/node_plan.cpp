#include "diff/replay/node_plan.hpp"

#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/graph_load.hpp"
#include "diff/graphs/graph_align.hpp"
#include "diff/graphs/graph_normalize.hpp"

namespace gparity::diff {

using json = nlohmann::json;
using model::Graph;
using model::NodeId;

namespace {

std::string_view match_name(MatchHow h) {
  switch (h) {
    case MatchHow::Name: return "name";
    case MatchHow::Structure: return "structure";
    case MatchHow::Sequence: return "sequence";
    case MatchHow::None: return "none";
  }
  return "none";
}

std::string ref_label(const model::GraphRef& ref) {
  return ref.compile_id.empty() ? ref.kind : ref.kind + " " + ref.compile_id;
}

/// By the record's `name` (an extra field), else "kind compile_id", else kind.
const model::GraphRef* find_ref(const std::vector<model::GraphRef>& refs, const std::string& label) {
  for (const auto& r : refs) {
    if (const auto it = r.extra.find("name"); it != r.extra.end() && it->is_string() && *it == label)
      return &r;
  }
  for (const auto& r : refs) {
    if (ref_label(r) == label) return &r;
  }
  for (const auto& r : refs) {
    if (r.kind == label) return &r;
  }
  return nullptr;
}

std::optional<std::int64_t> int_extra(const json& extra, const char* key) {
  const auto it = extra.find(key);
  if (it == extra.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

}  // namespace

NodePlan plan_by_graph(const Graph& ga, const Graph& gb) {
  NodePlan p;
  p.by_graph = true;
  GraphNormalization norm;
  norm.map_local_device = false;
  norm.ignore_process_groups = true;  // alignment only: an unhoisted group name must not unpair nodes
  const NormalizedGraph na(ga, norm, std::nullopt);
  const NormalizedGraph nb(gb, norm, std::nullopt);
  const auto al = align_graphs(na, nb);
  auto topo = model::topological_order(ga);
  if (!topo) {  // a cycle: graph order
    topo.emplace(ga.nodes.size());
    for (NodeId i = 0; i < ga.nodes.size(); ++i) (*topo)[i] = i;
  }
  std::vector<std::size_t> pos(ga.nodes.size());
  for (std::size_t i = 0; i < topo->size(); ++i) pos[(*topo)[i]] = i;
  const model::UseEdges edges(ga);
  for (const NodeId n : *topo) {
    p.order_a.emplace_back(ga.node_name(n));
    const NodeId m = al.a_to_b[n];
    p.partner.push_back(m == model::kNoNode ? std::string() : std::string(gb.node_name(m)));
    p.how.emplace_back(match_name(m == model::kNoNode ? MatchHow::None : al.how[n]));
    std::vector<std::size_t> in;
    for (const NodeId i : edges.inputs(n)) in.push_back(pos[i]);
    p.inputs.push_back(std::move(in));
    p.placeholder.push_back(ga.node(n).kind == model::NodeKind::Placeholder);
  }
  return p;
}

bool declares_graph(const std::vector<model::GraphRef>& refs, const std::string& label) {
  return find_ref(refs, label) != nullptr;
}

std::optional<Graph> load_ref_graph(const std::string& run_dir, const std::vector<model::GraphRef>& refs,
                                    int rank, const std::string& label, std::string& path,
                                    std::string& problem) {
  const auto* ref = find_ref(refs, label);
  if (ref == nullptr) {
    problem = "no \"graph\" record names graph \"" + label + "\"";
    return std::nullopt;
  }
  namespace fs = std::filesystem;
  const fs::path p = fs::path(ref->path).is_absolute() ? fs::path(ref->path) : fs::path(run_dir) / ref->path;
  path = p.string();
  try {
    const auto c = model::load_graphs(p.string());
    model::GraphSelector s;
    if (c.format == "torch_trace") {
      s.kind = ref->kind;
      s.compile = model::CompileId::parse(ref->compile_id);
      if (const auto r = int_extra(ref->extra, "rank")) {
        s.rank = static_cast<std::int32_t>(*r);
      } else if (c.ranks.size() > 1) {
        s.rank = rank;
      }
    }
    if (const auto i = int_extra(ref->extra, "index"); i && *i >= 0)
      s.occurrence = static_cast<std::size_t>(*i);
    const auto found = model::select_graphs(c, s);
    if (found.empty()) {
      problem = p.string() + ": no graph " + ref_label(*ref) + " in it";
      return std::nullopt;
    }
    return *found.front()->graph;
  } catch (const model::InputError& e) {
    problem = e.what();
    return std::nullopt;
  }
}

}  // namespace gparity::diff
