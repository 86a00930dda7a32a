// `gparity graph ranks|diff|devices`: graph comparison across ranks, between two graphs, and
// device placement. Everything is computed in diff/; this file parses options and prints.
// Exit codes: 0 when identical (no device literal for `devices`), 1 for any difference (the
// verdict says whether it is only device- or rank-parametric), 2 for bad input.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/evidence_text.hpp"
#include "cli/group_options.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/atomic_file.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/device_check.hpp"
#include "diff/graphs/graph_diff.hpp"
#include "diff/graphs/graph_report.hpp"
#include "diff/graphs/graph_source.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "diff/graphs/ranks_html.hpp"
#include "diff/graphs/report_html.hpp"

namespace gparity::cli {
namespace {

// Text output shows every string read from the inputs (node names, targets, values, file names)
// through display_text: no control character reaches the terminal. --json keeps them exact.
using model::display_text;
using model::shown;

struct NormOptions {
  bool no_local_device = false;
  bool symbols = false;
  bool process_groups = false;
  std::vector<std::string> strip_prefixes;
  [[nodiscard]] diff::GraphNormalization get() const {
    diff::GraphNormalization n;
    n.map_local_device = !no_local_device;
    n.renumber_symbols = symbols;
    n.ignore_process_groups = process_groups;
    n.strip_path_prefixes = strip_prefixes;
    return n;
  }
};

void add_norm_options(CLI::App* cmd, NormOptions& n) {
  cmd->add_flag("--no-local-device", n.no_local_device,
                "Compare device indices as they are (default: the rank's own device compares as 'local')");
  cmd->add_flag("--symbols", n.symbols, "Renumber symbols by first appearance (s77 ~ s0)");
  cmd->add_flag("--process-groups", n.process_groups, "Ignore process-group names of functional collectives");
  cmd->add_option("--strip-prefix", n.strip_prefixes, "Source path prefix to ignore (repeatable)");
}

int exit_for(diff::GraphVerdict v) {
  return v == diff::GraphVerdict::Identical ? kExitParity : kExitDivergence;
}

std::string values_text(const diff::RankFinding& f) {
  std::string s;
  for (const auto& v : f.values)
    s += (s.empty() ? "" : ", ") + std::string("r") + std::to_string(v.rank) + "=" + v.text;
  return s;
}

void print_finding(const diff::RankFinding& f, bool colour) {
  const auto cls = diff::finding_class_name(f.cls);
  const Colour c = f.cls == diff::FindingClass::Divergent ? Colour::Red : Colour::Yellow;
  std::cout << "    " << paint(cls, c, colour) << "  ";
  if (!f.compile.empty()) std::cout << "compile " << shown(f.compile) << ' ';
  if (!f.node.empty())
    std::cout << shown(f.node) << (f.target.empty() ? " " : " (" + display_text(f.target) + ") ");
  std::cout << shown(f.field) << ": " << shown(values_text(f));
  if (f.function) std::cout << "  = " << shown(f.function->text());
  if (f.function && !f.function->inferred_mesh.empty())
    std::cout << " (mesh " << shown(f.function->inferred_mesh) << ")";
  if (!f.note.empty()) std::cout << "  -- " << shown(f.note);
  if (!f.source.empty()) std::cout << "  [" << shown(f.source) << "]";
  if (f.graph_line > 0) std::cout << "  (line " << f.graph_line << ")";
  std::cout << '\n';
}

// ---- graph ranks ---------------------------------------------------------------------------

struct RanksOptions {
  std::string path;
  bool json = false;
  std::int32_t per_node = 0;
  std::string mesh;
  std::string html;
  NormOptions norm;
};

int run_ranks(const RanksOptions& o) {
  // Records carry every fact of diff/graphs/trace_facts.hpp; graphs the parser cannot read are reported
  // as problems and the rest is still classified. Each graph's rank versions are held as one graph
  // plus what differs (diff::RankGraphSet): memory grows with the differences, not ranks x size.
  const auto norm = o.norm.get();
  // Rank logs are read on every core; a terminal sees how far (stderr, nothing when redirected).
  ProgressBar progress("reading rank logs", 0);
  const auto input =
      diff::read_ranks_input(o.path, norm, o.per_node, 0, [&](std::size_t done, std::size_t total) {
        progress.set_total(total);
        progress.update(done);
      });
  progress.finish();
  if (input.trace.ranks.empty()) throw model::InputError(o.path, "no TORCH_TRACE rank logs found");
  const auto report = diff::classify_trace(input, diff::mesh_override_layout(o.mesh, o.per_node));
  if (!o.html.empty()) model::write_file_atomically(o.html, diff::ranks_html(report, o.path));
  const auto evidence = diff::rule_on(diff::ranks_evidence(report, o.path, &input.trace));
  if (o.json) {
    auto j = diff::to_json(report);
    const int code = json_evidence(evidence, exit_for(report.verdict), j);
    std::cout << model::json_output(j) << '\n';
    return code;
  }
  const bool colour = colour_enabled(stdout);
  std::cout << paint(display_text(o.path), Colour::Bold, colour) << ": " << report.ranks.size() << " ranks, "
            << report.graphs.size() << " graphs; normalizations:";
  for (const auto& n : report.normalizations) std::cout << ' ' << shown(n);
  std::cout << '\n';
  std::cout << "  mesh: "
            << (report.mesh.empty() ? "none found (world-size factorizations are tried)"
                                    : display_text(report.mesh))
            << '\n';
  for (const auto& fg : report.fact_groups) {
    std::cout << "  " << paint("divergent", Colour::Red, colour) << "  " << shown(fg.fact) << ": "
              << fg.groups.size() << " groups of ranks\n";
    for (const auto& g : fg.groups) {
      std::cout << "      ranks";
      for (std::size_t i = 0; i < g.ranks.size(); ++i) std::cout << (i ? ", " : " ") << g.ranks[i];
      std::cout << ": " << shown(g.sequence) << '\n';
    }
  }
  for (const auto& p : report.problems)
    std::cout << "  " << paint("problem", Colour::Red, colour) << "  " << shown(p) << '\n';
  for (const auto& f : report.findings) print_finding(f, colour);
  for (const auto& g : report.graphs) {
    const auto v = g.classification.verdict;
    const Colour c = v == diff::GraphVerdict::Identical   ? Colour::Green
                     : v == diff::GraphVerdict::Divergent ? Colour::Red
                                                          : Colour::Yellow;
    std::cout << "  " << shown(g.compile.text()) << ' ' << shown(g.kind);
    if (g.occurrence > 0) std::cout << " #" << g.occurrence;
    std::cout << ": " << paint(diff::verdict_name(v), c, colour) << " (" << g.classification.groups.size()
              << (g.classification.groups.size() == 1 ? " group" : " groups") << ")\n";
    for (const auto& f : g.classification.findings) print_finding(f, colour);
  }
  const int code = print_evidence(evidence, exit_for(report.verdict), std::cout, colour);
  if (code != 2) std::cout << "verdict: " << diff::verdict_name(report.verdict) << '\n';
  return code;
}

// ---- graph diff ----------------------------------------------------------------------------

struct DiffOptions {
  std::string a, b;
  std::vector<std::int32_t> ranks;
  std::vector<std::string> kinds, compiles;
  bool json = false;
  std::string html;
  NormOptions norm;
};

template <typename T>
std::optional<T> side(const std::vector<T>& v, std::size_t i) {
  if (v.empty()) return std::nullopt;
  return v[std::min(i, v.size() - 1)];
}

diff::GraphSelection selection(const DiffOptions& o, std::size_t i) {
  diff::GraphSelection s;
  s.path = i == 0 ? o.a : o.b;
  s.rank = side(o.ranks, i);
  s.kind = side(o.kinds, i).value_or("");
  if (const auto c = side(o.compiles, i)) {
    s.compile = model::CompileId::parse(*c);
    if (!s.compile)
      throw model::InputError("--compile-id", "malformed compile id '" + *c + "' (expected 0/0)");
  }
  return s;
}

void print_diff(const diff::GraphDiffResult& r, const diff::LoadedGraph& a, const diff::LoadedGraph& b) {
  const bool colour = colour_enabled(stdout);
  const auto& s = r.summary;
  std::cout << "--- " << shown(a.label) << " (" << s.nodes_a << " nodes)\n+++ " << shown(b.label) << " ("
            << s.nodes_b << " nodes)\n";
  for (const auto& c : r.changes) {
    if (c.removed()) {
      std::cout << paint("- removed ", Colour::Red, colour) << shown(a.graph.node_name(c.a)) << " ("
                << shown(a.graph.str(a.graph.node(c.a).target)) << ")\n";
    } else if (c.added()) {
      std::cout << paint("+ added   ", Colour::Green, colour) << shown(b.graph.node_name(c.b)) << " ("
                << shown(b.graph.str(b.graph.node(c.b).target)) << ")\n";
    } else {
      const char* what = c.fields.empty() ? "~ moved   " : c.moved ? "! changed+moved " : "! changed ";
      std::cout << paint(what, Colour::Yellow, colour) << shown(a.graph.node_name(c.a));
      if (a.graph.node_name(c.a) != b.graph.node_name(c.b))
        std::cout << " -> " << shown(b.graph.node_name(c.b));
      std::cout << " (" << shown(a.graph.str(a.graph.node(c.a).target)) << ")\n";
      for (const auto& f : c.fields)
        std::cout << "      " << shown(f.path) << ": " << shown(f.a_text) << " -> " << shown(f.b_text)
                  << '\n';
    }
  }
  std::cout << "summary: " << s.unchanged << " unchanged, " << s.changed << " changed, " << s.moved
            << " moved, " << s.added << " added, " << s.removed << " removed (matched by name " << s.by_name
            << ", structure " << s.by_structure << ", sequence " << s.by_sequence << "); normalizations:";
  for (const auto& n : r.normalizations) std::cout << ' ' << shown(n);
  std::cout << '\n' << (r.identical() ? "identical" : "different") << '\n';
}

int run_diff(const DiffOptions& o) {
  const auto a = diff::load_graph(selection(o, 0));
  const auto b = diff::load_graph(selection(o, 1));
  const auto norm = o.norm.get();
  const diff::NormalizedGraph na(a.graph, norm, a.rank);
  const diff::NormalizedGraph nb(b.graph, norm, b.rank);
  const auto r = diff::diff_graphs(na, nb);
  if (!o.html.empty())
    model::write_file_atomically(o.html, diff::graph_diff_html(r, a.graph, a.label, b.graph, b.label));
  const auto evidence = diff::rule_on(diff::diff_evidence(r, a.label, b.label));
  const int verdict = r.identical() ? kExitParity : kExitDivergence;
  if (o.json) {
    auto j = diff::to_json(r, a.graph, b.graph);
    j["a"] = a.label;
    j["b"] = b.label;
    const int code = json_evidence(evidence, verdict, j);
    std::cout << model::json_output(j) << '\n';
    return code;
  } else {
    print_diff(r, a, b);
  }
  return print_evidence(evidence, verdict, std::cout, colour_enabled(stdout));
}

// ---- graph devices -------------------------------------------------------------------------

struct DevicesOptions {
  diff::GraphSelection sel;
  std::string compile;
  std::optional<std::int32_t> target;
  std::int32_t ranks_per_node = 0;
  GroupOptions groups;
  bool json = false;
};

void print_hoist(const diff::DeviceReport& r, std::int32_t from, std::int32_t to, std::size_t groups,
                 bool colour) {
  std::size_t annotations = 0;
  for (const auto& c : r.hoist) annotations += c.kind == model::HoistChangeKind::Annotation ? 1 : 0;
  std::cout << "hoisting rank " << from << " -> rank " << to << ": " << r.hoist.size() - annotations
            << " literal and group changes, " << annotations << " annotations, " << r.unresolved.size()
            << " unresolved (" << groups << " known process groups)\n";
  for (const auto& c : r.hoist) {
    if (c.kind == model::HoistChangeKind::Annotation) continue;
    std::cout << "  " << paint(model::hoist_change_kind_name(c.kind), Colour::Green, colour) << "  "
              << shown(c.graph.empty() ? "" : c.graph + ".") << shown(c.node) << " (" << shown(c.target)
              << ") " << shown(c.field) << ": " << shown(c.from) << " -> " << shown(c.to) << '\n';
  }
  for (const auto& p : r.unresolved) {
    std::cout << "  " << paint("unresolved", Colour::Red, colour) << "  "
              << shown(p.graph.empty() ? "" : p.graph + ".") << shown(p.node) << " (" << shown(p.target)
              << ") " << shown(p.field) << ": " << shown(p.text) << ": " << shown(p.message) << '\n';
  }
}

int run_devices(DevicesOptions o) {
  if (!o.compile.empty()) {
    o.sel.compile = model::CompileId::parse(o.compile);
    if (!o.sel.compile) throw model::InputError("--compile-id", "malformed compile id '" + o.compile + "'");
  }
  const auto g = diff::load_graph(o.sel);
  diff::DeviceCheckOptions dco;
  dco.rank = g.rank;
  if (o.target && !dco.rank) dco.rank = 0;  // plain FX text: captured on rank 0 unless --rank says
  dco.target_rank = o.target;
  dco.ranks_per_node = o.ranks_per_node;
  std::vector<std::string> dumps;
  model::ProcessGroupTable table;
  if (o.target) table = o.groups.load(o.sel.path, dumps);
  dco.groups = &table;
  const auto r = diff::check_devices(g.graph, dco);
  const auto evidence = diff::rule_on(diff::devices_evidence(g.graph, g.label));
  const int verdict = r.findings.empty() ? kExitParity : kExitDivergence;
  if (o.json) {
    auto j = diff::to_json(r);
    j["graph"] = g.label;
    if (r.hoisted) {
      j["hoist"] = diff::hoist_to_json(r.hoist, r.unresolved);
      j["hoist"]["flight_recorder"] = dumps;
    }
    const int code = json_evidence(evidence, verdict, j);
    std::cout << model::json_output(j) << '\n';
    return code;
  } else {
    const bool colour = colour_enabled(stdout);
    std::cout << paint(display_text(g.label), Colour::Bold, colour) << ": " << r.literals
              << " device literals, " << r.foreign_annotations << " annotations on another rank's device, "
              << r.mixed_inputs << " nodes with inputs on different devices\n";
    for (const auto& f : r.findings) {
      std::cout << "  " << paint(diff::device_finding_kind_name(f.kind), Colour::Yellow, colour) << "  "
                << shown(f.node) << " (" << shown(f.target) << ") " << shown(f.field) << ": "
                << shown(f.text);
      if (!f.source.empty()) std::cout << "  [" << shown(f.source) << "]";
      std::cout << '\n';
    }
    if (r.hoisted) print_hoist(r, *dco.rank, *o.target, table.groups().size(), colour);
  }
  return print_evidence(evidence, verdict, std::cout, colour_enabled(stdout));
}

CLI::App* graph_parent(CLI::App& app) {
  const auto found = app.get_subcommands([](CLI::App* s) { return s->get_name() == "graph"; });
  if (!found.empty()) return found.front();
  CLI::App* g = app.add_subcommand("graph", "Inspect and compare FX graphs.");
  g->require_subcommand(1);
  return g;
}

}  // namespace

void register_graph_diff(CLI::App& app, Action& action) {
  CLI::App* graph = graph_parent(app);

  auto ro = std::make_shared<RanksOptions>();
  CLI::App* ranks = graph->add_subcommand(
      "ranks",
      "Is every graph the same on every rank, up to device- and rank-parametric values? Reads a TORCH_TRACE "
      "directory; exit 0 when identical, 1 for any difference (the verdict names its kind).");
  ranks->add_option("TRACE_DIR", ro->path, "TORCH_TRACE directory (or one log file)")->required();
  ranks->add_flag("--json", ro->json, "Machine-readable output");
  ranks->add_option("--ranks-per-node", ro->per_node, "Local device = rank % N (default: rank)");
  ranks->add_option(
      "--mesh", ro->mesh,
      "Device-mesh shape, row-major over ranks, e.g. 2x4 (overrides the mesh read from DeviceMesh "
      "specs in the graphs or the Flight Recorder pg_config beside the trace)");
  ranks->add_option("--html", ro->html, "Also write a self-contained HTML page here");
  add_norm_options(ranks, ro->norm);
  ranks->callback([ro, &action] { action = [ro] { return run_ranks(*ro); }; });

  auto d = std::make_shared<DiffOptions>();
  CLI::App* gd = graph->add_subcommand("diff",
                                       "Align two graphs node by node: added, removed, moved and changed "
                                       "nodes. Exit 0 identical, 1 different.");
  gd->add_option("A", d->a, "FX text, graph JSON, or TORCH_TRACE log/directory")->required();
  gd->add_option("B", d->b, "The same kinds of input")->required();
  gd->add_option("--rank", d->ranks, "Rank to pick (once for both sides, twice for A then B)");
  gd->add_option("--graph", d->kinds, "Graph kind to pick, e.g. aot_joint_graph (once or twice)");
  gd->add_option("--compile-id", d->compiles, "Compile id to pick, e.g. 0/0 (once or twice)");
  gd->add_flag("--json", d->json, "Machine-readable output");
  gd->add_option("--html", d->html, "Also write a self-contained HTML page here");
  add_norm_options(gd, d->norm);
  gd->callback([d, &action] { action = [d] { return run_diff(*d); }; });

  auto dv = std::make_shared<DevicesOptions>();
  CLI::App* dev = graph->add_subcommand(
      "devices",
      "Device literals, annotations on another rank's device, mixed-device inputs; exit 1 when any.");
  dev->add_option("PATH", dv->sel.path, "FX text, graph JSON, or TORCH_TRACE log/directory")->required();
  dev->add_option("--rank", dv->sel.rank, "Rank the graph was captured on (TORCH_TRACE: which rank to read)");
  dev->add_option("--graph", dv->sel.kind, "Graph kind to pick");
  dev->add_option("--compile-id", dv->compile, "Compile id to pick");
  dev->add_option("--target-rank,--to-rank", dv->target,
                  "Report what device hoisting (`graph hoist`) would change to load the graph on this rank");
  dev->add_option("--ranks-per-node", dv->ranks_per_node, "Local device = rank % N (default: the rank)");
  dv->groups.add_to(dev);
  dev->add_flag("--json", dv->json, "Machine-readable output");
  dev->callback([dv, &action] { action = [dv] { return run_devices(*dv); }; });
}

}  // namespace gparity::cli
