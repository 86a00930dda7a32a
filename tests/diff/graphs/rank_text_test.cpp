// Ranks' payloads read by their differences (issue 35, diff/graphs/rank_text.hpp): a rank added
// from its text (RankGraphSet::add_text, else parsed whole and add()) must give the set member
// that adding its parsed graph gives — same base, patched positions, patches, fingerprint, the same
// graph back — and the same classification as classify_ranks on the whole graphs. Every case is
// FX text written here per rank: devices, rank parameters, planted constants, comments and
// strings that name devices, device literals the text spells without `index=`, renamed and added
// nodes, device normalization off, ranks on one node's devices, a payload at another log line.
// The cases where the text is taken without parsing are counted, so that a change that silently
// parses everything fails too.

#include "diff/graphs/rank_text.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/model/graph/fx_text.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "diff/graphs/rank_graph_set.hpp"
#include "tests/support/graph_test_support.hpp"

namespace {

using namespace gparity::diff;
using gparity::model::Graph;
using gparity::testing::fx_module_text;
using gparity::testing::replace_all;

struct TextCase {
  std::vector<std::string> texts;   // rank r's payload
  std::vector<std::int64_t> lines;  // the log line of each payload's first line
};

TextCase texts_of(int world, const std::function<std::string(int)>& text_of) {
  TextCase c;
  for (int r = 0; r < world; ++r) {
    c.texts.push_back(text_of(r));
    c.lines.push_back(10);
  }
  return c;
}

/// Rank r's module text of `body` on device `device`.
std::string module(const std::string& body, int device) {
  return fx_module_text(body, device);
}

/// Adds every rank both ways and compares; returns how many ranks add_text took.
std::size_t expect_same_members(const TextCase& c, const GraphNormalization& norm = {},
                                const RankLayout& layout = {}, bool parallel = false) {
  std::vector<Graph> graphs;
  for (std::size_t r = 0; r < c.texts.size(); ++r) {
    auto p = gparity::model::read_fx_text(c.texts[r], "rank.log", c.lines[r]);
    EXPECT_TRUE(p.graph && p.problems.empty()) << "rank " << r;
    graphs.push_back(std::move(*p.graph));
  }
  RankGraphSet whole(norm, layout.ranks_per_node);
  for (std::size_t r = 0; r < graphs.size(); ++r) whole.add(static_cast<std::int32_t>(r), graphs[r]);

  RankGraphSet read(norm, layout.ranks_per_node);
  std::atomic<std::size_t> taken{0};
  const auto add_one = [&](std::size_t r) {
    const RankGraphSet::PayloadText text{c.texts[r], c.lines[r]};
    if (r > 0 && read.add_text(static_cast<std::int32_t>(r), text)) {
      ++taken;
      return;
    }
    read.add(static_cast<std::int32_t>(r), graphs[r], &text);
  };
  add_one(0);
  if (parallel) {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < 2; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t r = 1 + t; r < graphs.size(); r += 2) add_one(r);
      });
    for (auto& th : pool) th.join();
  } else {
    for (std::size_t r = 1; r < graphs.size(); ++r) add_one(r);
  }

  const auto a = whole.members();
  const auto b = read.members();
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(whole.base_count(), read.base_count());
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    SCOPED_TRACE("rank " + std::to_string(a[i]->rank));
    EXPECT_EQ(a[i]->rank, b[i]->rank);
    EXPECT_EQ(a[i]->fingerprint, b[i]->fingerprint);
    EXPECT_EQ(a[i]->is_base, b[i]->is_base);
    EXPECT_EQ(a[i]->patched, b[i]->patched);
    EXPECT_TRUE(
        gparity::model::graphs_equal(read.materialize(*b[i]), graphs[static_cast<std::size_t>(b[i]->rank)]));
  }
  std::vector<RankGraph> rg;
  for (std::size_t r = 0; r < graphs.size(); ++r) rg.push_back({static_cast<std::int32_t>(r), &graphs[r]});
  const auto want = classify_ranks(rg, norm, layout);
  const auto got = classify_rank_set(read, layout);
  EXPECT_EQ(got.groups, want.groups);
  EXPECT_EQ(got.fingerprints, want.fingerprints);
  EXPECT_EQ(got.verdict, want.verdict);
  EXPECT_EQ(got.findings.size(), want.findings.size());
  return taken;
}

std::string body(int lo, int hi, int c, int dev) {
  return gparity::testing::planted_body(gparity::testing::kPlantedRankBody, lo, hi, c, dev);
}

TEST(RankText, DevicesRankParametersAndConstantsAsFromGraphs) {
  // Ranks on their own devices: every rank but the first is taken as text.
  EXPECT_EQ(expect_same_members(texts_of(6, [](int r) { return module(body(0, 16, 1, r), r); })), 5U);
  // Every rank on device 0: under the device mapping nothing is the rank's own device, every node
  // differs from the base's (add() makes each rank a base of its own), so each is read whole.
  EXPECT_EQ(expect_same_members(texts_of(4, [](int) { return module(body(0, 16, 1, 0), 0); })), 0U);
  GraphNormalization no_local;
  no_local.map_local_device = false;  // without it, the same text is the same graph: taken
  EXPECT_EQ(expect_same_members(texts_of(4, [](int) { return module(body(0, 16, 1, 0), 0); }), no_local), 3U);
  // Rank parameters and a planted constant: the differing statements are parsed alone.
  EXPECT_EQ(
      expect_same_members(texts_of(8, [](int r) { return module(body(16 * r, 16 * r + 16, 1, r), r); })), 7U);
  EXPECT_EQ(expect_same_members(texts_of(4, [](int r) { return module(body(0, 16, r == 2 ? 7 : 1, r), r); })),
            3U);
  // A device literal left on device 1 on rank 3, and one on rank 0's device on rank 2.
  expect_same_members(texts_of(4, [](int r) { return module(body(0, 16, 1, r == 3 ? 1 : r), r); }));
  expect_same_members(texts_of(4, [](int r) { return module(body(0, 16, 1, r == 2 ? 0 : r), r); }));
  // From two threads.
  EXPECT_EQ(expect_same_members(texts_of(9, [](int r) { return module(body(16 * r, 16 * r + 16, 1, r), r); }),
                                {}, {}, true),
            8U);
}

TEST(RankText, ChangedTargetsAddedRenamedAndMovedNodesAsFromGraphs) {
  const auto base = [](int r) { return body(0, 16, 1, r); };
  expect_same_members(texts_of(4, [&](int r) {
    return module(r == 1 ? replace_all(base(r), "aten.sin.default", "aten.tanh.default") : base(r), r);
  }));
  expect_same_members(texts_of(4, [&](int r) {
    return module(r == 2 ? replace_all(base(r), "return (add, sin, cos)",
                                       "neg: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.neg.default(x)\n"
                                       "return (add, sin, cos)")
                         : base(r),
                  r);
  }));
  expect_same_members(texts_of(4, [&](int r) {
    return module(r == 3 ? replace_all(replace_all(base(r), "sin", "sine"), "cos", "cosine") : base(r), r);
  }));
  expect_same_members(texts_of(4, [&](int r) {
    if (r != 1) return module(base(r), r);
    const std::string sin = "sin: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.sin.default(x)\n";
    const std::string cos = "cos: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.cos.default(w)\n";
    return module(replace_all(base(r), sin + cos, cos + sin), r);
  }));
  // One rank's payload at another line of its log: read whole (node lines are part of a node).
  auto moved = texts_of(4, [&](int r) { return module(base(r), r); });
  moved.lines[2] = 11;
  EXPECT_EQ(expect_same_members(moved), 2U);
}

TEST(RankText, DeviceNamesOutsideTheIrAsFromGraphs) {
  const std::string with_comment =
      "# File: /w/model.py:3 in forward, code: y = x.to('cuda:0')\n" + body(0, 16, 1, 0) + "";
  // A comment naming device 0 on every rank: byte for byte, taken.
  EXPECT_EQ(expect_same_members(texts_of(
                4,
                [&](int r) {
                  return module(replace_all(with_comment, "index=0", "index=" + std::to_string(r)), r);
                })),
            3U);
  // A comment naming each rank's device: comments are never rewritten, so the ranks are read whole.
  const std::string per_rank =
      "# File: /w/model.py:3 in forward, code: y = x.to('cuda:{d}')\n" + body(0, 16, 1, 0);
  EXPECT_EQ(
      expect_same_members(texts_of(
          4,
          [&](int r) { return module(replace_all(per_rank, "index=0", "index=" + std::to_string(r)), r); })),
      0U);
  // A 'cuda:k' string argument, a string naming two devices, an integer keyword named index and a
  // device literal written without `index=`.
  const std::string strings =
      "mm: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.mm.default(x, w)\n"
      "to: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten._to_copy.default(mm, device = 'cuda:{d}')\n"
      "two: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.clone.default(to, tag = 'cuda:{d},cuda:9')\n"
      "g: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.gather.default(two, 1, index={d})\n"
      "f: \"f32[8][1]cuda:{d}\" = torch.ops.aten.full.default([8], 1, device = device('cuda', {d}))\n"
      "return (g, f)";
  expect_same_members(texts_of(5, [&](int r) { return module(strings, r); }));
}

TEST(RankText, NormalizationsAndRanksPerNodeAsFromGraphs) {
  const auto c = texts_of(8, [](int r) { return module(body(16 * r, 16 * r + 16, 1, r % 4), r % 4); });
  RankLayout per_node;
  per_node.ranks_per_node = 4;
  EXPECT_EQ(expect_same_members(c, {}, per_node), 7U);
  GraphNormalization no_local;
  no_local.map_local_device = false;
  expect_same_members(c, no_local);
  GraphNormalization symbols;
  symbols.renumber_symbols = true;
  EXPECT_EQ(expect_same_members(c, symbols), 0U);  // node bytes depend on the nodes before: whole
}

TEST(RankText, PytreePlaceholdersCommentsAndRenamesAsFromGraphs) {
  // The AOT joint graph's form: pytree placeholders annotated on their own lines, `# File:`
  // comments; and Dynamo's: inputs renamed (`l_x_ = L_x_`).
  const auto joint = [](int r, int c) {
    std::string t =
        "class inner_f(torch.nn.Module):\n"
        "    def forward(\n        self,\n        primals,\n        tangents,\n    ):\n"
        "        primals_1: \"f32[4, 96][96, 1]cuda:{d}\"  # PlainAOTInput(idx=0)\n"
        "        tangents_1: \"f32[4, 96][96, 1]cuda:{d}\"  # TangentAOTInput(output=PlainAOTOutput(idx=0))\n"
        "        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)\n"
        "        # File: /w/train.py:23 in forward, code: y = x * 2\n"
        "        mul: \"f32[4, 96][96, 1]cuda:{d}\" = torch.ops.aten.mul.Tensor(primals_1, {c})\n"
        "        full: \"f32[4][1]cuda:{d}\" = torch.ops.aten.full.default([4], 0, dtype = torch.float32, "
        "layout = torch.strided, device = device(type='cuda', index={d}), pin_memory = False)\n"
        "\n"
        "        # File: /w/train.py:24 in forward, code: z = y + t\n"
        "        add: \"f32[4, 96][96, 1]cuda:{d}\" = torch.ops.aten.add.Tensor(mul, tangents_1);  mul = "
        "None\n"
        "        return pytree.tree_unflatten([\n            add,  # PlainAOTOutput(idx=0)\n"
        "            full,  # GradAOTOutput(grad_of=PlainAOTInput(idx=0))\n        ], self._out_spec)\n";
    return replace_all(replace_all(t, "{c}", std::to_string(c)), "{d}", std::to_string(r));
  };
  EXPECT_EQ(expect_same_members(texts_of(6, [&](int r) { return joint(r, r == 4 ? 3 : 2); })), 5U);
  const auto dynamo = [](int r) {
    std::string t =
        "class GraphModule(torch.nn.Module):\n"
        "    def forward(self, L_x_: \"f32[4, 96][96, 1]cuda:{d}\"):\n"
        "        l_x_ = L_x_\n"
        "        # File: /w/train.py:23 in forward, code: y = x * 2\n"
        "        y: \"f32[4, 96][96, 1]cuda:{d}\" = l_x_ * 2;  l_x_ = None\n"
        "        return (y,)\n";
    return replace_all(t, "{d}", std::to_string(r));
  };
  EXPECT_EQ(expect_same_members(texts_of(4, dynamo)), 3U);
}

}  // namespace
