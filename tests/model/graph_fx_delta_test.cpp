// FX payloads cut into statements and statements read alone (core/model/graph/fx_delta.hpp,
// issue 35): over every graph payload of the bundled traces, the shared samples and the tlparse
// corpus (each skipped when absent), the statements cut the text exactly and hold every node once,
// and every statement that may be read alone, read alone at its place, gives the node the whole
// read gave, field for field. Statements that change more than their node are refused.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/fx_delta.hpp"
#include "core/model/graph/fx_text.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/shared_data.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity::model;

struct Counts {
  std::size_t payloads = 0, cut = 0, alone = 0;
};

StringIndex names_of(const Graph& g) {
  StringIndex names;
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    names.insert(g.node_name(static_cast<NodeId>(i)), static_cast<NodeId>(i));
  return names;
}

void check_payload(const std::string& source, const std::string& text, std::int64_t first_line, Counts& c) {
  const FxParse whole = read_fx_text(text, source, first_line);
  if (!whole.graph || !whole.problems.empty() || !whole.graph->subgraphs.empty()) return;
  ++c.payloads;
  const Graph& g = *whole.graph;
  const auto cut = fx_statements(text, g, first_line);
  if (!cut) return;
  ++c.cut;
  ASSERT_FALSE(cut->empty()) << source;
  EXPECT_EQ(cut->front().begin, 0U) << source;
  EXPECT_EQ(cut->back().end, text.size()) << source;
  NodeId next = 0;
  for (std::size_t i = 0; i < cut->size(); ++i) {
    const FxStatement& s = (*cut)[i];
    if (i > 0) {
      EXPECT_EQ(s.begin, (*cut)[i - 1].end) << source << " statement " << i;
    }
    EXPECT_EQ(s.node_begin, next) << source << " statement " << i;
    next = s.node_end;
  }
  EXPECT_EQ(next, g.nodes.size()) << source;
  const StringIndex names = names_of(g);
  for (const FxStatement& s : *cut) {
    if (!s.alone) continue;
    ++c.alone;
    FxStatementContext ctx;
    ctx.graph = &g;
    ctx.names = &names;
    ctx.at = s.node_begin;
    ctx.source = g.nodes[s.node_begin].source;
    Graph into;
    const auto n = parse_fx_node_statement(std::string_view(text).substr(s.begin, s.end - s.begin),
                                           first_line + s.line - 1, ctx, into);
    ASSERT_TRUE(n.has_value()) << source << " line " << first_line + s.line - 1;
    EXPECT_TRUE(nodes_equal(into, *n, g, g.nodes[s.node_begin]))
        << source << " line " << first_line + s.line - 1;
  }
}

void check_logs(const fs::path& root, Counts& c) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string head(256, '\0');
    if (FILE* f = std::fopen(it->path().c_str(), "rb")) {
      head.resize(std::fread(head.data(), 1, head.size(), f));
      std::fclose(f);
    }
    if (!looks_like_torch_trace(head)) continue;
    TraceOptions opt;
    opt.parse_graphs = false;
    const auto rt = read_torch_trace(it->path().string(), opt);
    for (const auto& r : rt.records) {
      if (r.payload_lines == 0 || !is_graph_record_name(r.kind, r.name)) continue;
      check_payload(it->path().string(), rt.payload(r), r.line + 1, c);
    }
  }
}

TEST(FxDelta, StatementsReadAloneGiveTheWholeReadsNodes) {
  Counts c;
  check_logs(fs::path(GPARITY_SOURCE_DIR) / "tests/data/graph", c);
  EXPECT_GT(c.payloads, 10U);
  EXPECT_GT(c.alone, 500U);
  EXPECT_GE(c.cut * 10, c.payloads * 9);  // nearly every payload cuts into statements
  for (const auto& extra : {gparity::testing::samples_dir(), gparity::testing::tlparse_corpus()}) {
    if (extra) check_logs(*extra, c);
  }
  std::cout << "payloads " << c.payloads << ", cut " << c.cut << ", statements read alone " << c.alone
            << '\n';
}

TEST(FxDelta, StatementsThatChangeMoreThanTheirNodeAreNotReadAlone) {
  const std::string text = gparity::testing::fx_module_text(
      "# File: /w/m.py:3 in forward, code: y = x\n"
      "mm: \"f32[8, 64][64, 1]cuda:0\" = torch.ops.aten.mm.default(x, w)\n"
      "sin: \"f32[8, 64][64, 1]cuda:0\" = torch.ops.aten.sin.default(mm)\n"
      "return (sin,)");
  const Graph g = parse_fx_text(text, "m.py");
  const auto cut = fx_statements(text, g, 1);
  ASSERT_TRUE(cut.has_value());
  std::vector<FxStatementKind> kinds;
  for (const auto& s : *cut) kinds.push_back(s.kind);
  EXPECT_EQ(kinds, (std::vector<FxStatementKind>{FxStatementKind::Module, FxStatementKind::Module,
                                                 FxStatementKind::Comment, FxStatementKind::Node,
                                                 FxStatementKind::Node, FxStatementKind::Return}));
  const StringIndex names = names_of(g);
  FxStatementContext ctx;
  ctx.graph = &g;
  ctx.names = &names;
  ctx.at = 3;  // sin
  ctx.source = g.nodes[3].source;
  Graph into;
  const auto read = [&](std::string_view line) { return parse_fx_node_statement(line, 6, ctx, into); };
  const auto sin = read("        sin: \"f32[8, 64][64, 1]cuda:1\" = torch.ops.aten.sin.default(mm)\n");
  ASSERT_TRUE(sin.has_value());
  EXPECT_EQ(sin->line, 6);
  EXPECT_EQ(sin->args.size(), 1U);
  EXPECT_EQ(sin->args[0].node, 2U);  // mm, by position
  // A name defined after the statement's place does not resolve there (a symbol, as the whole read).
  const auto later = read("        sin: \"f32[8, 64][64, 1]cuda:0\" = torch.ops.aten.sin.default(output)\n");
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->args[0].kind, ValueKind::Symbolic);
  // A setitem line: its node, named by the statement after it.
  const auto set = read("        mm[0] = x;  sin = mm;  x = sin = None\n");
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(into.str(set->target), "operator.setitem");
  EXPECT_EQ(into.str(set->name), "sin");
  // Refused: a comment, a rename, two statements, a return, a pytree placeholder, a damaged line,
  // a statement the reader makes opaque, a name defined before.
  EXPECT_FALSE(read("        # File: /w/m.py:4 in forward, code: z = y\n"));
  EXPECT_FALSE(read("        sin = mm\n"));
  EXPECT_FALSE(
      read("        sin = torch.ops.aten.sin.default(mm)\n        cos = torch.ops.aten.cos.default(mm)\n"));
  EXPECT_FALSE(read("        return (mm,)\n"));
  EXPECT_FALSE(read("        sin: \"f32[8, 64][64, 1]cuda:0\"\n"));
  EXPECT_FALSE(read("        sin = torch.ops.aten.sin.default(mm\n"));
  EXPECT_FALSE(read("        sin = lambda v: v\n"));
  EXPECT_FALSE(read("        mm = torch.ops.aten.sin.default(x)\n"));
}

}  // namespace
