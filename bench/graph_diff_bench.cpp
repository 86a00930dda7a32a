// Graph diff at scale (graph-diff issue), a plain timed main (each case runs once; the sizes are
// what the issue asks for, so one run is the figure):
//  (a) two ranks of an 80,000-node graph made by repeating the sample aot_joint_graph (rank 0's
//      and rank 1's, so the device literals differ) with every node renamed per copy:
//      `graph diff` (normalize + align + field diff) and `graph ranks` (classify) on the pair,
//      once with the same names on both sides and once with every node of B renamed
//      (alignment by structure). Goal < 1 s for the pair.
//  (b) 64 ranks of a 100,000-node graph, each annotated with its own device, one rank (1 %)
//      with a rank-dependent constant planted: `graph ranks` (fingerprint grouping + alignment
//      of the odd group + classification). Goal < 10 s.
// Peak memory is getrusage's ru_maxrss (the whole process, inputs included). For scale: Python
// difflib takes about 17 s on the 80,000-line pair (issue figure).
// Usage: bench_graph_diff [nodes_a] [ranks] [nodes_b]   (defaults 80000 64 100000)

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/graph_diff.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/rank_classify.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::model::Graph;
using gparity::model::Node;
using gparity::model::NodeId;
using gparity::model::StrId;
using gparity::model::Value;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

template <typename F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Graph joint_graph(int rank) {
  const fs::path dir = fs::path(GPARITY_SOURCE_DIR) / "tests/data/graph/compile";
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (!name.starts_with("dedicated_log_torch_trace_rank_" + std::to_string(rank) + "_")) continue;
    auto t = gparity::model::read_torch_trace(e.path().string());
    for (auto& g : t.graphs)
      if (g.kind == "aot_joint_graph") return std::move(g.graph);
  }
  std::fprintf(stderr, "no aot_joint_graph for rank %d in %s\n", rank, dir.c_str());
  std::exit(2);
}

/// Copies `src`'s nodes (its output node last, once) until `target` nodes, renaming every node
/// "<name>_<tag><copy>", moving device index `from` to `to` everywhere.
class Repeater {
 public:
  Repeater(const Graph& src, std::int32_t from, std::int32_t to) : src_(src), from_(from), to_(to) {}

  Graph build(std::size_t target, const std::string& tag) {
    Graph g;
    g.name = g.intern(src_.str(src_.name));
    const std::size_t body = src_.nodes.size() - 1;  // FX puts the output node last
    const std::size_t copies = std::max<std::size_t>(1, (target - 1 + body - 1) / body);
    g.nodes.reserve(copies * body + 1);
    for (std::size_t c = 0; c < copies; ++c) {
      const auto base = static_cast<NodeId>(g.nodes.size());
      const std::string suffix = "_" + tag + std::to_string(c);
      for (std::size_t i = 0; i < body; ++i) g.nodes.push_back(copy(g, src_.nodes[i], base, suffix));
      if (c + 1 == copies) g.nodes.push_back(copy(g, src_.nodes.back(), base, suffix));
    }
    return g;
  }

 private:
  StrId s(Graph& g, StrId id) const { return g.intern(src_.str(id)); }
  std::int32_t dev(std::int32_t i) const { return i == from_ ? to_ : i; }

  Value value(Graph& g, const Value& v, NodeId base) const {
    Value o = v;
    o.s = s(g, v.s);
    o.device.type = s(g, v.device.type);
    o.device.index = dev(v.device.index);
    if (v.kind == gparity::model::ValueKind::Node) o.node = v.node + base;
    for (auto& item : o.items) item = value(g, item, base);
    return o;
  }

  Node copy(Graph& g, const Node& n, NodeId base, const std::string& suffix) const {
    Node o = n;
    o.name = g.intern(std::string(src_.str(n.name)) + suffix);
    o.target = n.kind == gparity::model::NodeKind::Placeholder ? o.name : s(g, n.target);
    for (auto& a : o.args) a = value(g, a, base);
    for (auto& kw : o.kwargs) {
      kw.name = s(g, kw.name);
      kw.value = value(g, kw.value, base);
    }
    o.meta.device.type = s(g, n.meta.device.type);
    o.meta.device.index = dev(n.meta.device.index);
    o.meta.sym = s(g, n.meta.sym);
    for (auto& d : o.meta.sizes) d.expr = s(g, d.expr);
    for (auto& d : o.meta.strides) d.expr = s(g, d.expr);
    o.source.file = s(g, n.source.file);
    o.source.function = s(g, n.source.function);
    o.source.code = s(g, n.source.code);
    o.module_path = s(g, n.module_path);
    o.comment = s(g, n.comment);
    return o;
  }

  const Graph& src_;
  std::int32_t from_, to_;
};

bool plant_in(Value& v, std::int64_t value) {
  if (v.kind == gparity::model::ValueKind::Int && v.i > 1) {
    v.i = value;
    return true;
  }
  for (auto& item : v.items)
    if (plant_in(item, value)) return true;
  return false;
}

/// Plants a rank-dependent constant: the first integer > 1 in the arguments of an aten node
/// (a view size, a dim, a slice bound), in the middle of the graph.
bool plant_constant(Graph& g, std::int64_t value) {
  for (std::size_t i = g.nodes.size() / 2; i < g.nodes.size(); ++i) {
    auto& n = g.nodes[i];
    if (g.str(n.target).rfind("aten.", 0) != 0) continue;
    for (auto& a : n.args)
      if (plant_in(a, value)) return true;
  }
  return false;
}

void pair_case(const Graph& a, const Graph& b, const char* label) {
  using namespace gparity::diff;
  const GraphNormalization norm;
  GraphDiffResult r;
  const double t_diff = seconds([&] {
    const NormalizedGraph na(a, norm, 0);
    const NormalizedGraph nb(b, norm, 1);
    r = diff_graphs(na, nb);
  });
  const std::vector<RankGraph> ranks{{0, &a}, {1, &b}};
  GraphClassification c;
  const double t_ranks = seconds([&] { c = classify_ranks(ranks, norm, RankLayout{}); });
  std::printf(
      "(a) %-22s %7zu nodes: graph diff %.3f s (%zu changed, %zu added, %zu removed, %zu moved; by name %zu, "
      "structure %zu, sequence %zu), graph ranks %.3f s (%s, %zu findings); peak RSS %.0f MiB\n",
      label, a.nodes.size(), t_diff, r.summary.changed, r.summary.added, r.summary.removed, r.summary.moved,
      r.summary.by_name, r.summary.by_structure, r.summary.by_sequence, t_ranks,
      std::string(verdict_name(c.verdict)).c_str(), c.findings.size(), peak_rss_mib());
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t nodes_a = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 80000;
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 64;
  const std::size_t nodes_b = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100000;
  const Graph j0 = joint_graph(0);
  const Graph j1 = joint_graph(1);
  std::printf("sample aot_joint_graph: %zu nodes; inputs RSS %.0f MiB\n", j0.nodes.size(), peak_rss_mib());

  {
    const Graph a = Repeater(j0, 0, 0).build(nodes_a, "c");
    const Graph b = Repeater(j1, 1, 1).build(nodes_a, "c");
    const Graph b_renamed = Repeater(j1, 1, 1).build(nodes_a, "other");
    std::printf("(a) built 3 graphs of %zu nodes; peak RSS %.0f MiB\n", a.nodes.size(), peak_rss_mib());
    pair_case(a, b, "same names");
    pair_case(a, b_renamed, "B renamed");
  }
  if (ranks <= 0) return 0;

  const int planted = ranks / 2 + 5 < ranks ? ranks / 2 + 5 : ranks - 1;  // 1 rank of 64: 1.6 %
  std::vector<Graph> graphs;
  graphs.reserve(static_cast<std::size_t>(ranks));
  const double t_build = seconds([&] {
    for (int r = 0; r < ranks; ++r) {
      graphs.push_back(Repeater(j0, 0, r).build(nodes_b, "c"));
      if (r == planted && !plant_constant(graphs.back(), 1000 + 32 * r)) {
        std::fprintf(stderr, "nothing to plant\n");
        std::exit(2);
      }
    }
  });
  std::printf("(b) built %d graphs of %zu nodes in %.1f s; peak RSS %.0f MiB\n", ranks,
              graphs.front().nodes.size(), t_build, peak_rss_mib());
  std::vector<gparity::diff::RankGraph> rg;
  for (int r = 0; r < ranks; ++r) rg.push_back({r, &graphs[static_cast<std::size_t>(r)]});
  gparity::diff::GraphClassification c;
  const double t = seconds([&] { c = gparity::diff::classify_ranks(rg, {}, gparity::diff::RankLayout{}); });
  std::printf(
      "(b) graph ranks, %d ranks x %zu nodes, constant planted on rank %d: %.3f s, %zu groups, verdict %s, "
      "%zu findings; peak RSS %.0f MiB\n",
      ranks, graphs.front().nodes.size(), planted, t, c.groups.size(),
      std::string(gparity::diff::verdict_name(c.verdict)).c_str(), c.findings.size(), peak_rss_mib());
  return 0;
}
