// `gparity graph list|show|export`: the graphs of a TORCH_TRACE directory or log, FX text, a
// .pt2 archive or our JSON form. Importing and selecting live in core/model/graph/graph_load.hpp.

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/atomic_file.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/graph/graph_json.hpp"
#include "core/model/graph/graph_load.hpp"
#include "hash/xxh3.hpp"

namespace gparity::cli {
namespace {

// Text output shows every string read from the input through display_text (no control
// character reaches the terminal); --json keeps them exact.
using model::display_text;
using model::shown;

struct GraphOptions {
  std::string path;
  bool json = false;
  std::optional<std::int32_t> rank;
  std::string compile_id;
  std::string kind;
  std::optional<std::size_t> occurrence;
  std::string format = "json";
  std::string output;
};

std::string pad(std::string s, std::size_t w) {
  s.resize(std::max(w, s.size()), ' ');
  return s;
}

/// Prints the importer's problems to stderr; true when there were any.
bool report_problems(const model::GraphCollection& c) {
  for (const auto& p : c.problems) std::cerr << "gparity: error: " << shown(p.text()) << '\n';
  if (c.md5_mismatches > 0) {
    std::cerr << "gparity: warning: " << c.md5_mismatches
              << " payload(s) do not match their has_payload MD5 (used anyway)\n";
  }
  return !c.problems.empty();
}

std::string fingerprint_hex(const model::Graph& g) {
  return hash::to_hex(model::fingerprint(g));
}

int list(const GraphOptions& o) {
  const auto c = model::load_graphs(o.path);
  if (o.json) {
    nlohmann::ordered_json out = {
        {"path", c.path}, {"format", c.format}, {"md5_mismatches", c.md5_mismatches}};
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < c.ranks.size(); ++i) {
      nlohmann::ordered_json ids = nlohmann::ordered_json::array();
      for (const auto& id : c.compile_ids[i]) ids.push_back(id.text());
      ranks.push_back({{"rank", c.ranks[i]}, {"compile_ids", ids}});
    }
    out["ranks"] = ranks;
    nlohmann::ordered_json graphs = nlohmann::ordered_json::array();
    for (const auto& e : c.entries) {
      graphs.push_back({{"rank", e.rank},
                        {"compile_id", e.compile.text()},
                        {"kind", e.kind},
                        {"index", e.occurrence},
                        {"nodes", e.graph->total_nodes()},
                        {"opaque_nodes", e.graph->total_opaque()},
                        {"problems", e.problems},
                        {"fingerprint", fingerprint_hex(*e.graph)},
                        {"source", e.source}});
    }
    out["graphs"] = graphs;
    nlohmann::ordered_json unparsed = nlohmann::ordered_json::array();
    for (const auto& u : c.unparsed) {
      unparsed.push_back({{"rank", u.rank},
                          {"compile_id", u.compile.text()},
                          {"kind", u.kind},
                          {"source", u.file + ":" + std::to_string(u.line)},
                          {"problem", u.problem}});
    }
    out["unparsed"] = unparsed;
    nlohmann::ordered_json problems = nlohmann::ordered_json::array();
    for (const auto& p : c.problems) problems.push_back(p.text());
    out["problems"] = problems;
    std::cout << model::json_output(out) << '\n';
  } else {
    const bool colour = colour_enabled(stdout);
    std::cout << paint(display_text(c.path), Colour::Bold, colour) << " (" << c.format << ", "
              << c.entries.size() << (c.entries.size() == 1 ? " graph" : " graphs") << ")\n";
    for (std::size_t i = 0; i < c.ranks.size(); ++i) {
      std::cout << "  rank " << c.ranks[i] << ": compile ids";
      for (const auto& id : c.compile_ids[i]) std::cout << ' ' << shown(id.text());
      std::cout << '\n';
    }
    std::cout << "  " << pad("rank", 5) << "  " << pad("compile", 8) << "  " << pad("graph", 28) << "  "
              << pad("nodes", 6) << "  fingerprint\n";
    for (const auto& e : c.entries) {
      const std::string kind =
          display_text(e.kind) + (e.occurrence > 0 ? " #" + std::to_string(e.occurrence) : "");
      std::cout << "  " << pad(e.rank >= 0 ? std::to_string(e.rank) : "-", 5) << "  "
                << pad(display_text(e.compile.text()), 8) << "  " << pad(kind, 28) << "  "
                << pad(std::to_string(e.graph->total_nodes()), 6) << "  " << fingerprint_hex(*e.graph);
      if (const auto opaque = e.graph->total_opaque(); opaque > 0) std::cout << "  " << opaque << " opaque";
      if (e.problems > 0)
        std::cout << "  " << paint(std::to_string(e.problems) + " problem(s)", Colour::Red, colour);
      std::cout << '\n';
    }
    for (const auto& u : c.unparsed) {
      std::cout << "  " << pad(u.rank >= 0 ? std::to_string(u.rank) : "-", 5) << "  "
                << pad(display_text(u.compile.text()), 8) << "  " << pad(display_text(u.kind), 28) << "  "
                << paint("unparsable", Colour::Red, colour) << "  " << shown(u.file) << ':' << u.line << ": "
                << shown(u.problem) << '\n';
    }
  }
  // Damage inside a readable input is reported and the rest listed: exit 1, never 2.
  return report_problems(c) || !c.unparsed.empty() ? kExitDivergence : kExitParity;
}

const model::GraphEntry& select_one(const model::GraphCollection& c, const GraphOptions& o) {
  model::GraphSelector s;
  s.rank = o.rank;
  s.kind = o.kind;
  s.occurrence = o.occurrence;
  if (!o.compile_id.empty()) {
    s.compile = model::CompileId::parse(o.compile_id);
    if (!s.compile) throw model::InputError(o.compile_id, "not a compile id (expected e.g. 0/0 or 0/0_1)");
  }
  const auto found = model::select_graphs(c, s);
  if (found.empty())
    throw model::InputError(o.path, "no graph matches the selection (see `gparity graph list`)");
  if (found.size() > 1) {
    std::string which;
    for (const auto* e : found) {
      which += "\n  --rank " + std::to_string(e->rank) + " --compile-id " + e->compile.text() + " --graph " +
               e->kind + " --index " + std::to_string(e->occurrence);
    }
    throw model::InputError(o.path,
                            std::to_string(found.size()) + " graphs match; narrow the selection:" + which);
  }
  return *found.front();
}

void print_table(const model::Graph& g, const std::string& indent) {
  // Widths of the names as shown (an escaped byte takes four columns).
  std::size_t name_w = 4, target_w = 6;
  for (const auto& n : g.nodes) {
    name_w = std::max(name_w, display_text(g.str(n.name)).size());
    target_w = std::min<std::size_t>(60, std::max(target_w, display_text(g.str(n.target)).size()));
  }
  std::cout << indent << pad("name", name_w) << "  " << pad("op", 13) << "  " << pad("target", target_w)
            << "  annotation / args\n";
  for (const auto& n : g.nodes) {
    std::string args;
    for (const auto& a : n.args) args += (args.empty() ? "" : ", ") + model::value_text(g, a);
    for (const auto& k : n.kwargs) {
      args += (args.empty() ? "" : ", ") + std::string(g.str(k.name)) + "=" + model::value_text(g, k.value);
    }
    const auto meta = model::meta_text(g, n.meta);
    std::cout << indent << pad(display_text(g.str(n.name)), name_w) << "  "
              << pad(std::string(model::node_kind_name(n.kind)), 13) << "  "
              << pad(display_text(g.str(n.target)), target_w) << "  "
              << (meta.empty() ? "" : display_text(meta) + "  ") << "(" << shown(args) << ")";
    if (n.source.known()) std::cout << "  # " << shown(g.str(n.source.file)) << ':' << n.source.line;
    std::cout << '\n';
  }
  for (const auto& s : g.subgraphs) {
    std::cout << indent << "subgraph " << shown(s.str(s.name)) << ":\n";
    print_table(s, indent + "  ");
  }
}

int show(const GraphOptions& o) {
  const auto c = model::load_graphs(o.path);
  const auto& e = select_one(c, o);
  if (o.json) {
    std::cout << model::json_output(model::graph_to_json(*e.graph)) << '\n';
  } else {
    const bool colour = colour_enabled(stdout);
    std::cout << paint(display_text(e.kind), Colour::Bold, colour) << " rank " << e.rank << " compile "
              << shown(e.compile.text()) << " (" << e.graph->nodes.size() << " nodes, fingerprint "
              << fingerprint_hex(*e.graph) << ", " << shown(e.source) << ")\n";
    print_table(*e.graph, "  ");
  }
  return report_problems(c) ? kExitBadInput : kExitParity;
}

int export_graph(const GraphOptions& o) {
  const auto c = model::load_graphs(o.path);
  const auto& e = select_one(c, o);
  const std::string text = o.format == "dot" ? model::graph_to_dot(*e.graph)
                                             : model::json_output(model::graph_to_json(*e.graph)) + "\n";
  if (o.output.empty() || o.output == "-") {
    std::cout << text;
  } else {
    model::write_file_atomically(o.output, text);  // OutputError (exit 2) names the file and the error
  }
  return report_problems(c) ? kExitBadInput : kExitParity;
}

void add_selection(CLI::App* cmd, GraphOptions& o) {
  cmd->add_option("--rank", o.rank, "Rank of the graph (trace input)");
  cmd->add_option("--compile-id", o.compile_id, "Compile id, e.g. 0/0 or 0/0_1");
  cmd->add_option("--graph", o.kind, "Graph kind, e.g. aot_joint_graph, inductor_post_grad_graph");
  cmd->add_option("--index", o.occurrence, "Which one when the kind occurs several times (0-based)");
}

}  // namespace

void register_graph(CLI::App& app, Action& action) {
  CLI::App* graph = app.add_subcommand(
      "graph",
      "Import graphs: TORCH_TRACE directories or logs, FX print_readable text, torch.export .pt2 archives, "
      "gparity graph JSON (docs/graph-format.md).");
  graph->require_subcommand(1);
  const std::string path_help = "TORCH_TRACE directory or .log, FX text, .pt2 archive, or gparity graph JSON";

  auto lo = std::make_shared<GraphOptions>();
  CLI::App* list_cmd =
      graph->add_subcommand("list", "Ranks, compile ids, and graphs with kind, node count and fingerprint");
  list_cmd->add_option("PATH", lo->path, path_help)->required();
  list_cmd->add_flag("--json", lo->json, "Machine-readable output");
  list_cmd->callback([lo, &action] { action = [lo] { return list(*lo); }; });

  auto so = std::make_shared<GraphOptions>();
  CLI::App* show_cmd = graph->add_subcommand("show", "One graph as a node table, or its IR with --json");
  show_cmd->add_option("PATH", so->path, path_help)->required();
  add_selection(show_cmd, *so);
  show_cmd->add_flag("--json", so->json, "The graph in gparity's JSON form");
  show_cmd->callback([so, &action] { action = [so] { return show(*so); }; });

  auto eo = std::make_shared<GraphOptions>();
  CLI::App* export_cmd =
      graph->add_subcommand("export", "Write one graph as JSON (round-trip exact) or Graphviz DOT");
  export_cmd->add_option("PATH", eo->path, path_help)->required();
  add_selection(export_cmd, *eo);
  export_cmd->add_option("--format", eo->format, "json or dot")->check(CLI::IsMember({"json", "dot"}));
  export_cmd->add_option("-o,--output", eo->output, "Output file (default: stdout)");
  export_cmd->callback([eo, &action] { action = [eo] { return export_graph(*eo); }; });

  register_graph_hoist(*graph, action);
}

}  // namespace gparity::cli
