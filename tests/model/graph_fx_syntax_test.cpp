// FX text and TORCH_TRACE syntax of PyTorch 2.1 through nightly, on excerpts of real logs
// (tests/data/graph/fx_syntax, copied from the tlparse corpus) and hand-written opaque constructs:
// `class <lambda>`, unquoted annotations, method calls, higher-order op bodies, ExportedProgram
// text, logs named *.txt, blank lines inside payloads, a bad envelope in the middle of a log, a
// last line without a newline, a payload cut short.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"
#include "core/model/graph/graph_load.hpp"

namespace {

using namespace gparity::model;

std::string data_path(const std::string& name) {
  return std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/fx_syntax/" + name;
}

std::string read(const std::string& name) {
  std::ifstream f(data_path(name), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::size_t count_kind(const Graph& g, NodeKind k) {
  std::size_t n = 0;
  for (const auto& node : g.nodes) n += node.kind == k;
  return n;
}

TEST(GraphFxSyntax, LambdaClassNameOfOlderAotGraphs) {
  const Graph g = parse_fx_text(read("aot_lambda_inference.txt"), "lambda.txt");
  EXPECT_EQ(g.str(g.name), "<lambda>");
  EXPECT_EQ(count_kind(g, NodeKind::Opaque), 0U);
  EXPECT_EQ(g.nodes.back().kind, NodeKind::Output);
  const NodeId baz = g.find_node("baz");
  ASSERT_NE(baz, kNoNode);
  EXPECT_EQ(g.str(g.node(baz).target), "test.baz.default");
}

TEST(GraphFxSyntax, UnquotedAnnotationsAndMethodCalls) {
  const Graph g = parse_fx_text(read("dynamo_method_call.txt"), "dyn.txt");
  ASSERT_EQ(g.nodes.size(), 3U);
  EXPECT_EQ(g.node(0).kind, NodeKind::Placeholder);
  EXPECT_EQ(g.str(g.node(0).name), "l_x_");
  EXPECT_EQ(g.node(0).meta.kind, TensorMeta::Kind::Other);
  EXPECT_EQ(g.str(g.node(0).meta.sym), "torch.Tensor");
  EXPECT_EQ(g.node(1).kind, NodeKind::CallMethod);
  EXPECT_EQ(g.str(g.node(1).target), "cos");
  ASSERT_EQ(g.node(1).args.size(), 1U);
  EXPECT_EQ(g.node(1).args[0].node, 0U);
  EXPECT_EQ(g.node(2).kind, NodeKind::Output);  // `return ()`
}

TEST(GraphFxSyntax, HigherOrderOpBodiesAndSubmoduleReferences) {
  const Graph g = parse_fx_text(read("dynamo_flex_attention.txt"), "flex.txt");
  EXPECT_EQ(count_kind(g, NodeKind::Opaque), 0U);
  const NodeId score = g.find_node("score_mod_0");
  ASSERT_NE(score, kNoNode);
  EXPECT_EQ(g.node(score).kind, NodeKind::GetAttr);
  const NodeId hop = g.find_node("flex_attention");
  ASSERT_NE(hop, kNoNode);
  EXPECT_EQ(g.str(g.node(hop).target), "higher_order.flex_attention");
  EXPECT_NE(g.find_subgraph("score_mod_0"), nullptr);
  EXPECT_NE(g.find_subgraph("mask_fn_0"), nullptr);
}

TEST(GraphFxSyntax, ExportedProgramTextAroundTheModule) {
  const Graph g = parse_fx_text(read("exported_program.txt"), "ep.txt");
  EXPECT_EQ(g.str(g.name), "GraphModule");
  EXPECT_EQ(count_kind(g, NodeKind::Opaque), 0U);
  const NodeId neg = g.find_node("neg");
  ASSERT_NE(neg, kNoNode);
  EXPECT_EQ(g.str(g.node(neg).target), "operator.neg");
  EXPECT_EQ(g.node(neg).meta.kind, TensorMeta::Kind::Sym);
  EXPECT_EQ(g.nodes.back().kind, NodeKind::Output);
}

TEST(GraphFxSyntax, UnknownConstructsBecomeOpaqueNodesThatKeepTextNameUsesAndLine) {
  const FxParse r = read_fx_text(read("opaque_constructs.txt"), "opaque.txt", 100);
  ASSERT_TRUE(r.graph);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front().problem;  // valid Python: no damage
  const Graph& g = *r.graph;
  EXPECT_EQ(count_kind(g, NodeKind::Opaque), 4U);
  const NodeId first = g.find_node("first");
  ASSERT_NE(first, kNoNode);
  const Node& n = g.node(first);
  EXPECT_EQ(n.kind, NodeKind::Opaque);
  EXPECT_EQ(g.str(n.target), "first, second = some_helper(cos, y)");
  EXPECT_EQ(n.line, 106);
  ASSERT_EQ(n.args.size(), 2U);
  EXPECT_EQ(g.node_name(n.args[0].node), "cos");
  EXPECT_EQ(g.node_name(n.args[1].node), "y");
  // `second` resolves to the same opaque node, so later uses stay edges.
  const Node& total = g.node(g.find_node("total"));
  EXPECT_EQ(total.kind, NodeKind::CallFunction);
  ASSERT_EQ(total.args.size(), 2U);
  EXPECT_EQ(total.args[1].node, first);
  // A statement that binds nothing gets a name from its line.
  const NodeId check = g.find_node("opaque_107");
  ASSERT_NE(check, kNoNode);
  EXPECT_EQ(g.node_name(g.node(check).args[0].node), "L_n_");
  EXPECT_EQ(g.node(g.find_node("_tensor_constant0")).kind, NodeKind::GetAttr);
  EXPECT_EQ(g.node(g.find_node("sub_out")).kind, NodeKind::CallModule);
  EXPECT_EQ(g.node(g.find_node("y")).meta.kind, TensorMeta::Kind::Tensor);  // unquoted f32[2]
  EXPECT_EQ(g.node(g.find_node("L_n_")).meta.kind, TensorMeta::Kind::Sym);
  // `def __init__` of the nested class is skipped; its forward is the subgraph.
  ASSERT_NE(g.find_subgraph("sub"), nullptr);
  EXPECT_EQ(g.find_subgraph("sub")->nodes.size(), 2U);
  // Opaque nodes survive the JSON round trip.
  EXPECT_TRUE(graphs_equal(g, graph_from_json(graph_to_json(g), "rt")));
}

TEST(GraphFxSyntax, DamagedLineCostsOnlyItselfAndCutPayloadIsUsedAsFarAsItGoes) {
  const std::string head = "class G(torch.nn.Module):\n    def forward(self, x: \"f32[2][1]cpu\"):\n";
  const FxParse r = read_fx_text(head +
                                     "        a = torch.ops.aten.sin.default(x))\n"
                                     "        b = torch.ops.aten.cos.default(a)\n"
                                     "        c: \"f32[2",
                                 "cut.txt", 1);
  ASSERT_TRUE(r.graph);
  ASSERT_EQ(r.problems.size(), 3U);
  EXPECT_EQ(r.problems[0].line, 3);
  EXPECT_NE(r.problems[0].problem.find("unbalanced"), std::string::npos);
  EXPECT_EQ(r.problems[1].line, 5);
  EXPECT_NE(r.problems[1].problem.find("unterminated"), std::string::npos);
  EXPECT_EQ(r.problems[2].line, 2);  // the def whose body was cut before its return
  EXPECT_NE(r.problems[2].problem.find("no return"), std::string::npos);
  const Graph& g = *r.graph;
  ASSERT_EQ(g.nodes.size(), 4U);  // x, a (opaque), b, c (opaque)
  EXPECT_EQ(g.node(1).kind, NodeKind::Opaque);
  EXPECT_EQ(g.str(g.node(1).name), "a");
  EXPECT_EQ(g.node(2).kind, NodeKind::CallFunction);
  EXPECT_EQ(g.node(2).args[0].node, 1U);  // b still uses a
}

TEST(GraphFxSyntax, NoModuleAtAllIsAProblemNotAGraph) {
  const FxParse r = read_fx_text("Graph signature: nothing here\n", "none.txt", 7);
  EXPECT_FALSE(r.graph);
  ASSERT_EQ(r.problems.size(), 1U);
  EXPECT_EQ(r.problems[0].line, 7);
}

TEST(GraphFxSyntax, TraceLogNamedTxtIsRecognisedByContentAndEveryGraphRead) {
  ASSERT_TRUE(looks_like_torch_trace(read("torch_trace_named.txt")));
  EXPECT_FALSE(looks_like_torch_trace(read("opaque_constructs.txt")));
  const GraphCollection c = load_graphs(data_path("torch_trace_named.txt"));
  EXPECT_EQ(c.format, "torch_trace");
  // dynamo graph, before_pre_grad artifact, the inference graph with a blank line inside its
  // payload, and the forward graph whose last line has no newline; the C++ graph_dump is no graph.
  ASSERT_EQ(c.entries.size(), 4U);
  EXPECT_EQ(c.entries[0].kind, "dynamo_output_graph");
  EXPECT_EQ(c.entries[1].kind, "before_pre_grad_graph");
  EXPECT_EQ(c.entries[2].kind, "aot_inference_graph");
  EXPECT_EQ(c.entries[3].kind, "aot_forward_graph");
  // Same payload (one with a blank stutter line): same graph, only source lines differ.
  EXPECT_EQ(fingerprint(*c.entries[2].graph), fingerprint(*c.entries[3].graph));
  EXPECT_EQ(c.entries[2].graph->nodes.size(), c.entries[3].graph->nodes.size());
  EXPECT_EQ(c.md5_mismatches, 0U);
  // The one bad envelope is reported with its line; nothing after it is lost.
  ASSERT_EQ(c.problems.size(), 1U);
  EXPECT_EQ(c.problems[0].line, 10);
  EXPECT_NE(c.problems[0].problem.find("invalid JSON"), std::string::npos);
  EXPECT_TRUE(c.unparsed.empty());
}

TEST(GraphFxSyntax, TraceGraphPayloadWithNoModuleIsListedAsUnparsed) {
  const std::string log =
      "V0403 07:28:48.061000 1 a.py:1] {\"aot_forward_graph\": {}, \"frame_id\": 2, \"frame_compile_id\": 1, "
      "\"attempt\": 0, \"has_payload\": \"x\"}\n\tnot a graph at all\n";
  const TorchTraceRank t = parse_torch_trace(log, "bad.log");
  EXPECT_TRUE(t.graphs.empty());
  ASSERT_EQ(t.unparsed.size(), 1U);
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_EQ(t.problems[0].line, 2);
  EXPECT_NE(t.problems[0].problem.find("aot_forward_graph payload"), std::string::npos);
}

}  // namespace

namespace {

TEST(GraphFxSyntax, EveryGraphBearingKindIsReadWithItsIds) {
  const std::string fx =
      "\tclass GraphModule(torch.nn.Module):\n\t    def forward(self, x: \"f32[2]\"):\n"
      "\t        sin = torch.ops.aten.sin.default(x)\n\t        return (sin,)\n";
  const auto env = [&](const std::string& key, const std::string& ids) {
    return "V0403 07:28:48.061000 1 a.py:1] {" + key + ", " + ids + ", \"has_payload\": \"0\"}\n" + fx;
  };
  const std::string ids = R"("rank": 3, "frame_id": 4, "frame_compile_id": 2, "attempt": 1)";
  const std::string log =
      env(R"("compiled_autograd_graph": {})",
          R"("rank": 3, "compiled_autograd_id": 5, "frame_id": 0, "frame_compile_id": 0)") +
      env(R"("optimize_ddp_split_graph": {})", ids) +
      env(R"("optimize_ddp_split_child": {"name": "submod_0"})", ids) +
      env(R"("graph_dump": {"name": "pre_dispatch"})", ids) + env(R"("inductor_pre_grad_graph": {})", ids) +
      env(R"("exported_program": {})", ids) +
      env(R"("artifact": {"name": "fx_graph_runnable", "encoding": "string"})", ids);
  const TorchTraceRank t = parse_torch_trace(log, "kinds.log");
  EXPECT_TRUE(t.problems.empty());
  ASSERT_EQ(t.graphs.size(), 6U);  // fx_graph_runnable is not a graph kind: indexed, skipped
  EXPECT_EQ(t.records.size(), 7U);
  EXPECT_EQ(t.graphs[0].kind, "compiled_autograd_graph");
  EXPECT_EQ(t.graphs[0].compile.text(), "!5/0/0");
  EXPECT_EQ(t.graphs[1].kind, "optimize_ddp_split_graph");
  EXPECT_EQ(t.graphs[2].kind, "optimize_ddp_split_child");
  EXPECT_EQ(t.graphs[3].kind, "graph_dump");
  EXPECT_EQ(t.graphs[4].kind, "inductor_pre_grad_graph");
  EXPECT_EQ(t.graphs[5].kind, "exported_program");
  for (std::size_t i = 1; i < t.graphs.size(); ++i) {
    EXPECT_EQ(t.graphs[i].compile.text(), "4/2_1");
    EXPECT_EQ(t.records[t.graphs[i].record].rank, 3);
    EXPECT_EQ(t.graphs[i].graph.nodes.size(), 3U);
  }
}

}  // namespace
