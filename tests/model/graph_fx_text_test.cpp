// FX print_readable() parser on hand-written graphs covering each construct, the IR helpers
// (use edges, topological order, fingerprint normalizations) and malformed text.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"

namespace {

using namespace gparity::model;

const std::string kSample = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 64][64, 1]cuda:1", s77: "Sym(s77)", L_y_: "bf16[s77, 2*((s77//2))]"):
        l_x_ = L_x_
        # File: /workspace/train_tiny.py:23 in forward, code: y = x.view(2, -1)
        view: "f32[2, 128][128, 1]cuda:1" = l_x_.view(2, -1);  l_x_ = None
        mm: "f32[4, 4][4, 1]cuda:1" = torch.ops.aten.mm.default(view, view)
        add: "f32[4, 4][4, 1]cuda:1" = mm + 1.0e-07
        neg = -add
        # No stacktrace found for following nodes
        full: "f32[2][1]cuda:1" = torch.ops.aten.full.default([2], 0.5, dtype = torch.float32, layout = torch.strided, device = device(type='cuda', index=1), pin_memory = False, memory_format = torch.contiguous_format)
        sdpa = torch.ops.aten._scaled_dot_product_efficient_attention.default(mm, mm, mm, None, True, 0.0, True)
        getitem: "f32[4][1]cuda:1" = sdpa[0]
        sl: "f32[4][1]cuda:1" = getitem[(slice(None, None, None), slice(0, 32, None))]
        ar: "f32[4][1]cuda:1" = torch.ops._c10d_functional.all_reduce.default(getitem, 'sum', '3')
        wrap_body_0 = self.wrap_body_0
        wrap = torch.ops.higher_order.wrap(wrap_body_0, ar);  wrap_body_0 = None
        sym: "Sym(2*s77)" = 2 * s77
        return (neg, full, sym)

    class wrap_body_0(torch.nn.Module):
        def forward(self, ar: "f32[4][1]cuda:1"):
            sin: "f32[4][1]cuda:1" = torch.ops.aten.sin.default(ar);  ar = None
            return (sin,)


 # graph id: 140478491718816
)FX";

TEST(GraphFxText, ParsesEveryConstruct) {
  const Graph g = parse_fx_text(kSample, "sample.txt");
  EXPECT_EQ(g.str(g.name), "GraphModule");
  ASSERT_EQ(g.nodes.size(), 16U);
  // Placeholders: Dynamo's rename binds the node name, the target keeps the signature name.
  EXPECT_EQ(g.node_name(0), "l_x_");
  EXPECT_EQ(g.str(g.node(0).target), "L_x_");
  EXPECT_EQ(g.node(0).kind, NodeKind::Placeholder);
  EXPECT_EQ(g.node(0).meta.device.index, 1);
  EXPECT_EQ(g.str(g.node(0).meta.device.type), "cuda");
  EXPECT_EQ(g.node(1).meta.kind, TensorMeta::Kind::Sym);
  EXPECT_EQ(g.str(g.node(1).meta.sym), "s77");
  const TensorMeta& y = g.node(2).meta;
  EXPECT_EQ(y.dtype, DType::BF16);
  ASSERT_EQ(y.sizes.size(), 2U);
  EXPECT_EQ(g.str(y.sizes[0].expr), "s77");
  EXPECT_EQ(g.str(y.sizes[1].expr), "2*((s77//2))");
  EXPECT_FALSE(y.has_strides);
  // Method call.
  const Node& view = g.node(g.find_node("view"));
  EXPECT_EQ(view.kind, NodeKind::CallMethod);
  EXPECT_EQ(g.str(view.target), "view");
  ASSERT_EQ(view.args.size(), 3U);
  EXPECT_EQ(view.args[0].node, 0U);
  EXPECT_EQ(view.args[2].i, -1);
  EXPECT_EQ(g.str(view.source.file), "/workspace/train_tiny.py");
  EXPECT_EQ(view.source.line, 23);
  EXPECT_EQ(g.str(view.source.function), "forward");
  EXPECT_EQ(g.str(view.source.code), "y = x.view(2, -1)");
  EXPECT_EQ(view.line, 5);
  EXPECT_EQ(view.meta.strides[0].value, 128);
  // Operators and the exact float text.
  const Node& add = g.node(g.find_node("add"));
  EXPECT_EQ(g.str(add.target), "operator.add");
  EXPECT_EQ(add.args[1].kind, ValueKind::Float);
  EXPECT_EQ(g.str(add.args[1].s), "1.0e-07");
  EXPECT_EQ(g.str(g.node(g.find_node("neg")).target), "operator.neg");
  EXPECT_EQ(g.node(g.find_node("neg")).meta.kind, TensorMeta::Kind::None);
  // Kwargs with dtype, layout, device, memory format; the source location was reset.
  const Node& full = g.node(g.find_node("full"));
  EXPECT_FALSE(full.source.known());
  ASSERT_EQ(full.kwargs.size(), 5U);
  EXPECT_EQ(g.str(full.kwargs[0].name), "dtype");
  EXPECT_EQ(full.kwargs[0].value.kind, ValueKind::DType);
  EXPECT_EQ(static_cast<DType>(full.kwargs[0].value.i), DType::F32);
  EXPECT_EQ(full.kwargs[1].value.kind, ValueKind::Layout);
  EXPECT_EQ(full.kwargs[2].value.kind, ValueKind::Device);
  EXPECT_EQ(full.kwargs[2].value.device.index, 1);
  EXPECT_EQ(full.kwargs[3].value.kind, ValueKind::Bool);
  EXPECT_EQ(full.kwargs[4].value.kind, ValueKind::MemoryFormat);
  EXPECT_EQ(full.args[0].kind, ValueKind::List);
  // Tuple indexing with slices.
  const Node& sl = g.node(g.find_node("sl"));
  EXPECT_EQ(g.str(sl.target), "operator.getitem");
  ASSERT_EQ(sl.args[1].kind, ValueKind::Tuple);
  ASSERT_EQ(sl.args[1].items[1].kind, ValueKind::Slice);
  EXPECT_EQ(sl.args[1].items[1].items[1].i, 32);
  EXPECT_EQ(sl.args[1].items[1].items[2].kind, ValueKind::None);
  // Collectives: process group position.
  const Node& ar = g.node(g.find_node("ar"));
  EXPECT_EQ(process_group_arg(g, ar), 2);
  // get_attr and the nested body as a subgraph.
  const Node& attr = g.node(g.find_node("wrap_body_0"));
  EXPECT_EQ(attr.kind, NodeKind::GetAttr);
  ASSERT_NE(g.find_subgraph("wrap_body_0"), nullptr);
  EXPECT_EQ(g.find_subgraph("wrap_body_0")->nodes.size(), 3U);
  EXPECT_EQ(g.total_nodes(), 19U);
  // Symbolic operands.
  const Node& sym = g.node(g.find_node("sym"));
  EXPECT_EQ(g.str(sym.target), "operator.mul");
  EXPECT_EQ(sym.args[1].kind, ValueKind::Node);
  // Output.
  const Node& out = g.nodes.back();
  EXPECT_EQ(out.kind, NodeKind::Output);
  ASSERT_EQ(out.args[0].kind, ValueKind::Tuple);
  EXPECT_EQ(out.args[0].items.size(), 3U);
}

TEST(GraphFxText, UseEdgesAndTopologicalOrder) {
  const Graph g = parse_fx_text(kSample, "sample.txt");
  const UseEdges e(g);
  const NodeId mm = g.find_node("mm");
  const auto in = e.inputs(mm);
  ASSERT_EQ(in.size(), 1U);  // view used twice, counted once
  EXPECT_EQ(in[0], g.find_node("view"));
  const auto users = e.users(mm);
  ASSERT_EQ(users.size(), 2U);
  EXPECT_EQ(users[0], g.find_node("add"));
  EXPECT_EQ(users[1], g.find_node("sdpa"));
  const auto order = topological_order(g);
  ASSERT_TRUE(order);
  for (std::size_t i = 0; i < order->size(); ++i) EXPECT_EQ((*order)[i], i);
  // A cycle has no order.
  Graph c = g;
  c.nodes[g.find_node("view")].args[0] = Value::ref(mm);
  EXPECT_FALSE(topological_order(c));
}

TEST(GraphFxText, FingerprintNormalizations) {
  const Graph a = parse_fx_text(kSample, "a");
  std::string other = kSample;
  for (std::size_t p; (p = other.find("cuda:1")) != std::string::npos;) other.replace(p, 6, "cuda:0");
  for (std::size_t p; (p = other.find("index=1")) != std::string::npos;) other.replace(p, 7, "index=0");
  for (std::size_t p; (p = other.find("s77")) != std::string::npos;) other.replace(p, 3, "s0");
  for (std::size_t p; (p = other.find("'3')")) != std::string::npos;) other.replace(p, 4, "'7')");
  const Graph b = parse_fx_text(other, "b");
  EXPECT_NE(fingerprint(a), fingerprint(b));
  Normalization na, nb;
  na.local_device = 1;
  nb.local_device = 0;
  EXPECT_NE(fingerprint(a, na), fingerprint(b, nb));  // symbols and process group still differ
  na.renumber_symbols = nb.renumber_symbols = true;
  EXPECT_NE(fingerprint(a, na), fingerprint(b, nb));
  na.ignore_process_groups = nb.ignore_process_groups = true;
  EXPECT_EQ(fingerprint(a, na), fingerprint(b, nb));
  // Node names are ignored by default, not when asked.
  std::string renamed = kSample;
  renamed.replace(renamed.find("neg = -add"), 10, "nog = -add");
  renamed.replace(renamed.find("return (neg"), 11, "return (nog");
  const Graph r = parse_fx_text(renamed, "r");
  EXPECT_EQ(fingerprint(a), fingerprint(r));
  Normalization names;
  names.ignore_node_names = false;
  EXPECT_NE(fingerprint(a, names), fingerprint(r, names));
  // Source locations only count when included.
  std::string moved = kSample;
  moved.replace(moved.find("train_tiny.py:23"), 16, "train_tiny.py:24");
  const Graph m = parse_fx_text(moved, "m");
  EXPECT_EQ(fingerprint(a), fingerprint(m));
  Normalization src;
  src.include_source = true;
  EXPECT_NE(fingerprint(a, src), fingerprint(m, src));
}

TEST(GraphFxText, JsonRoundTripOfEveryConstruct) {
  const Graph g = parse_fx_text(kSample, "sample.txt");
  const auto j = graph_to_json(g);
  const Graph back = graph_from_json(j, "json");
  EXPECT_TRUE(graphs_equal(g, back));
  EXPECT_EQ(graph_to_json(back).dump(), j.dump());
  EXPECT_EQ(j["nodes"][5]["args"][1], (nlohmann::ordered_json{{"float", "1.0e-07"}}));
  // Changing one field is seen by the comparison.
  Graph changed = back;
  changed.nodes[3].args[1].i = 5;
  EXPECT_FALSE(graphs_equal(g, changed));
}

TEST(GraphFxText, ExportedProgramTextParses) {
  std::ifstream f(std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/eager/tiny_export_graph.txt");
  std::stringstream ss;
  ss << f.rdbuf();
  const Graph g = parse_fx_text(ss.str(), "tiny_export_graph.txt");
  // 22 inputs (21 parameters and the tokens), the output, and the op lines.
  std::size_t placeholders = 0;
  for (const auto& n : g.nodes) placeholders += n.kind == NodeKind::Placeholder;
  EXPECT_EQ(placeholders, 22U);
  EXPECT_EQ(g.node(0).meta.has_strides, false);
  EXPECT_EQ(g.str(g.node(0).meta.device.type), "");
}

// Found by fuzz_fx_text: a size of more digits than an int64 holds overflowed in the one-pass
// annotation reader. Up to 19 digits a size is a number; past what an int64 holds it is kept as text.
TEST(GraphFxText, SizesOfManyDigitsAreNumbersWhileTheyFitAndTextAfter) {
  const Graph g = parse_fx_text(
      "class G(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[1234567890123456789, 77777777777777777777][1, 1]cpu\"):\n"
      "        return (x,)\n",
      "big.txt");
  const TensorMeta& m = g.node(0).meta;
  ASSERT_EQ(m.sizes.size(), 2U);
  EXPECT_FALSE(m.sizes[0].is_symbolic());
  EXPECT_EQ(m.sizes[0].value, 1234567890123456789);
  ASSERT_TRUE(m.sizes[1].is_symbolic());
  EXPECT_EQ(g.str(m.sizes[1].expr), "77777777777777777777");
  EXPECT_EQ(m.strides[1].value, 1);
}

void expect_fx_error(const std::string& text, std::int64_t line, const std::string& what) {
  try {
    parse_fx_text(text, "bad.txt", 10);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), "bad.txt");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(e.problem().find(what), std::string::npos) << e.what();
  }
}

TEST(GraphFxText, MalformedTextNamesLineAndProblem) {
  const std::string head = "class G(torch.nn.Module):\n    def forward(self, x: \"f32[2][1]cpu\"):\n";
  expect_fx_error(head + "        a = torch.ops.aten.sin.default(x\n        return (a,)\n", 12,
                  "never closed");
  expect_fx_error(head + "        a = torch.ops.aten.sin.default(x))\n        return (a,)\n", 12,
                  "unbalanced");
  expect_fx_error(head + "        a: \"q9[2][1]cpu\" = torch.ops.aten.sin.default(x)\n        return (a,)\n",
                  12, "unknown dtype 'q9'");
  expect_fx_error(head + "        a = torch.ops.aten.sin.default(x)\n", 11, "no return");
  expect_fx_error(head + "        a = 'unterminated\n        return (a,)\n", 12, "unterminated string");
  expect_fx_error(head +
                      "        a = torch.ops.aten.sin.default(x)\n        a = torch.ops.aten.cos.default(x)\n"
                      "        return (a,)\n",
                  13, "defined twice");
  expect_fx_error(head + "        a = y\n        return (a,)\n", 12, "not an input");
  expect_fx_error("import os\n", 10, "expected 'class");
  expect_fx_error("", 10, "no FX module");
  expect_fx_error(head + "        a = " + std::string(500, '(') + "x" + std::string(500, ')') + "\n", 12,
                  "nested deeper");
  // Found by fuzz_fx_text: a long chain of unary minus signs overflowed the stack.
  std::string minus;
  for (int i = 0; i < 200000; ++i) minus += "- ";
  expect_fx_error(head + "        a = f(" + minus + "x)\n", 11, "no return");
}

}  // namespace
