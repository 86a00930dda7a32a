// `gparity graph hoist SOURCE --out FILE --to-rank T`: device hoisting for compile-on-one-rank
// (core/model/graph/hoist.hpp). Writes the hoisted graph as gparity graph JSON and reports what
// changed. Exit 0 when everything that names a rank's device or group was mapped, 1 when
// something was left as it is (listed; the file is still written), 2 for bad input.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/group_options.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/atomic_file.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/graph/graph_json.hpp"
#include "core/model/graph/graph_load.hpp"
#include "core/model/graph/hoist.hpp"
#include "diff/graphs/device_check.hpp"

namespace gparity::cli {
namespace {

// Text output shows every string read from the input through display_text; --json keeps them exact.
using model::display_text;
using model::shown;

struct HoistArgs {
  std::string path;
  std::optional<std::int32_t> rank;
  std::string kind;
  std::optional<std::size_t> occurrence;
  std::string compile;
  std::string out;
  std::int32_t to_rank = 0;
  std::int32_t ranks_per_node = 0;
  GroupOptions groups;
  bool json = false;
  bool verbose = false;
};

struct Picked {
  const model::Graph* graph = nullptr;
  std::int32_t rank = 0;
  std::string label;
};

/// One graph of the source: by rank (default: the lowest), kind, compile id and index; more
/// than one match is bad input that lists the candidates.
Picked pick(const model::GraphCollection& c, const HoistArgs& a) {
  model::GraphSelector s;
  s.rank = a.rank;
  if (!s.rank && !c.ranks.empty()) s.rank = c.ranks.front();
  s.kind = a.kind;
  s.occurrence = a.occurrence;
  if (!a.compile.empty()) {
    s.compile = model::CompileId::parse(a.compile);
    if (!s.compile) throw model::InputError("--compile-id", "malformed compile id '" + a.compile + "'");
  }
  const auto found = model::select_graphs(c, s);
  if (found.empty())
    throw model::InputError(a.path, "no graph matches the selection (see `gparity graph list`)");
  if (found.size() > 1) {
    std::string which;
    for (const auto* e : found) {
      which += "\n  --rank " + std::to_string(e->rank) + " --compile-id " + e->compile.text() + " --graph " +
               e->kind + " --index " + std::to_string(e->occurrence);
    }
    throw model::InputError(a.path,
                            std::to_string(found.size()) + " graphs match; narrow the selection:" + which);
  }
  const auto& e = *found.front();
  std::string label = a.path;
  if (e.rank >= 0) label += " rank " + std::to_string(e.rank);
  if (c.format == "torch_trace") {
    label +=
        " " + e.kind + (e.occurrence > 0 ? " #" + std::to_string(e.occurrence) : "") + " " + e.compile.text();
  }
  return {e.graph, e.rank >= 0 ? e.rank : a.rank.value_or(0), label};
}

int run_hoist(const HoistArgs& a) {
  if (a.to_rank < 0) throw model::InputError("--to-rank", "must be a rank (>= 0)");
  if (a.ranks_per_node < 0) throw model::InputError("--ranks-per-node", "must be positive");
  const auto c = model::load_graphs(a.path);
  for (const auto& p : c.problems) std::cerr << "gparity: error: " << shown(p.text()) << '\n';
  const auto g = pick(c, a);
  const std::int32_t from = g.rank;
  std::vector<std::string> dumps;
  const auto table = a.groups.load(a.path, dumps);
  model::HoistOptions o;
  o.source_rank = from;
  o.target_rank = a.to_rank;
  o.source_device = a.ranks_per_node > 0 ? from % a.ranks_per_node : from;
  o.target_device = a.ranks_per_node > 0 ? a.to_rank % a.ranks_per_node : a.to_rank;
  o.groups = &table;
  const auto r = model::hoist_graph(*g.graph, o);

  const std::string text = model::json_output(model::graph_to_json(r.graph)) + "\n";
  if (a.out == "-") {
    std::cout << text;
  } else {
    model::write_file_atomically(a.out, text);
  }
  // Damage elsewhere in the source is bad input even when the chosen graph was intact.
  const int rc = !c.problems.empty() ? kExitBadInput : r.unresolved.empty() ? kExitParity : kExitDivergence;
  if (a.json) {
    auto j = diff::hoist_to_json(r.changes, r.unresolved);
    j["graph"] = g.label;
    j["from_rank"] = from;
    j["to_rank"] = a.to_rank;
    j["from_device"] = o.source_device;
    j["to_device"] = o.target_device;
    j["out"] = a.out;
    j["flight_recorder"] = dumps;
    j["groups"] = table.groups().size();
    (a.out == "-" ? std::cerr : std::cout) << model::json_output(j) << '\n';
    return rc;
  }
  std::ostream& os = a.out == "-" ? std::cerr : std::cout;
  const bool colour = colour_enabled(a.out == "-" ? stderr : stdout);
  os << paint(display_text(g.label), Colour::Bold, colour) << ": rank " << from << " (device "
     << o.source_device << ") -> rank " << a.to_rank << " (device " << o.target_device << "); "
     << r.count(model::HoistChangeKind::DeviceLiteral) << " device literals, "
     << r.count(model::HoistChangeKind::Annotation) << " annotations, "
     << r.count(model::HoistChangeKind::ProcessGroup) << " process-group names remapped; "
     << table.groups().size() << " known groups"
     << (dumps.empty() ? "" : " (" + std::to_string(dumps.size()) + " Flight Recorder dumps)") << '\n';
  for (const auto& ch : r.changes) {
    if (ch.kind == model::HoistChangeKind::Annotation && !a.verbose) continue;
    os << "  " << paint(model::hoist_change_kind_name(ch.kind), Colour::Green, colour) << "  "
       << shown(ch.graph.empty() ? "" : ch.graph + ".") << shown(ch.node) << " (" << shown(ch.target) << ") "
       << shown(ch.field) << ": " << shown(ch.from) << " -> " << shown(ch.to);
    if (!ch.source.empty()) os << "  [" << shown(ch.source) << "]";
    os << '\n';
  }
  for (const auto& p : r.unresolved) {
    os << "  " << paint("unresolved", Colour::Red, colour) << "  "
       << shown(p.graph.empty() ? "" : p.graph + ".") << shown(p.node) << " (" << shown(p.target) << ") "
       << shown(p.field) << ": " << shown(p.text) << ": " << shown(p.message) << '\n';
  }
  if (a.out != "-") os << "wrote " << shown(a.out) << '\n';
  return rc;
}

}  // namespace

void register_graph_hoist(CLI::App& graph, Action& action) {
  auto a = std::make_shared<HoistArgs>();
  CLI::App* cmd = graph.add_subcommand(
      "hoist",
      "Device hoisting for compile-on-one-rank: rewrite a graph captured on one rank for another rank "
      "(device literals, annotations, process-group names) and write it as gparity graph JSON. Exit 0 when "
      "everything was mapped, 1 when something was left as it is (listed), 2 for bad input.");
  cmd->add_option("SOURCE", a->path,
                  "TORCH_TRACE directory or .log, FX text, .pt2 archive, or gparity graph JSON")
      ->required();
  cmd->add_option("-o,--out", a->out, "Output file for the hoisted graph JSON ('-': stdout)")->required();
  cmd->add_option(
      "--rank", a->rank,
      "Rank the graph was captured on (TORCH_TRACE: which rank's graph; default: the lowest, or 0)");
  cmd->add_option("--to-rank", a->to_rank, "Rank to hoist the graph to")->required();
  cmd->add_option("--graph", a->kind, "Graph kind to pick, e.g. aot_forward_graph");
  cmd->add_option("--index", a->occurrence, "Which one when the kind occurs several times (0-based)");
  cmd->add_option("--compile-id", a->compile, "Compile id to pick, e.g. 0/0");
  cmd->add_option("--ranks-per-node", a->ranks_per_node, "Local device = rank % N (default: the rank)");
  a->groups.add_to(cmd);
  cmd->add_flag("--json", a->json, "Machine-readable report (stdout, or stderr with --out -)");
  cmd->add_flag("-v,--verbose", a->verbose, "List annotation changes too");
  cmd->callback([a, &action] { action = [a] { return run_hoist(*a); }; });
}

}  // namespace gparity::cli
