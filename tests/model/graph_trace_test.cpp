// TORCH_TRACE reader and FX text parser against the real PyTorch 2.11 samples: every graph
// payload of every run and rank parses, node counts equal an independent regex count of the
// node lines, has_payload MD5s verify, and our JSON form round-trips every graph exactly.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/graph_json.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity::model;

const std::string kTraceGraphData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph";

// The test's own payload extraction: envelope line, then TAB lines, nothing shared with the reader.
struct RawPayload {
  std::string name;
  std::string text;
};

std::vector<RawPayload> raw_payloads(const std::string& path) {
  std::ifstream f(path);
  std::vector<RawPayload> out;
  std::string line;
  const std::regex name_re(R"RE(^V\S+ \S+ \d+ \S+\] \{"(\w+)": (\{"name": "(\w+)")?)RE");
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] == '\t') {
      if (!out.back().text.empty()) out.back().text += '\n';
      out.back().text += line.substr(1);
      continue;
    }
    std::smatch m;
    if (!std::regex_search(line, m, name_re)) {
      ADD_FAILURE() << "not an envelope: " << line.substr(0, 200);
      continue;
    }
    out.push_back({m[3].matched ? m[3].str() : m[1].str(), ""});
  }
  return out;
}

// Node lines counted by regex: annotated placeholders (signature parameters, or `name: "ann"`
// lines after a pytree signature), assignment lines other than Dynamo's `l_x_ = L_x_` renames,
// item assignments, and the return.
std::size_t count_node_lines(const std::string& text) {
  static const std::regex decl(R"RE(^\s+\w+: "[^"]*"\s*(#.*)?$)RE");
  static const std::regex assign(R"RE(^\s+\w+(: "[^"]*")? = )RE");
  static const std::regex rename(R"RE(^\s+\w+ = \w+$)RE");
  static const std::regex setitem(R"RE(^\s+\w+\[.*\] = )RE");
  static const std::regex ret(R"RE(^\s+return\b)RE");
  static const std::regex param(R"RE(\w+: "[^"]*")RE");
  std::istringstream in(text);
  std::string line, signature;
  std::size_t decls = 0, nodes = 0;
  bool in_sig = false;
  while (std::getline(in, line)) {
    if (line.find("def forward(") != std::string::npos) in_sig = true;
    if (in_sig) {
      signature += line;
      if (line.ends_with("):")) in_sig = false;
      continue;
    }
    if (std::regex_search(line, decl))
      ++decls;
    else if (std::regex_search(line, assign) && !std::regex_search(line, rename))
      ++nodes;
    else if (std::regex_search(line, setitem))
      ++nodes;
    else if (std::regex_search(line, ret))
      ++nodes;
  }
  const auto params = static_cast<std::size_t>(
      std::distance(std::sregex_iterator(signature.begin(), signature.end(), param), std::sregex_iterator()));
  return nodes + (decls > 0 ? decls : params);
}

std::vector<std::string> trace_files() {
  std::vector<std::string> files;
  for (const auto* run : {"compile", "compile_rankbug", "compile_tp"}) {
    for (const auto& e : fs::directory_iterator(kTraceGraphData + "/" + run)) {
      if (e.path().extension() == ".log") files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

const std::vector<std::string> kGraphNames = {
    "dynamo_output_graph",    "before_pre_grad_graph",   "after_pre_grad_graph",   "aot_joint_graph",
    "aot_forward_graph",      "aot_backward_graph",      "before_post_grad_graph", "inductor_post_grad_graph",
    "before_post_grad_graph", "inductor_post_grad_graph"};

TEST(GraphTrace, EveryGraphPayloadOfEverySampleParsesWithIndependentNodeCounts) {
  const auto files = trace_files();
  ASSERT_EQ(files.size(), 6U);
  for (const auto& file : files) {
    SCOPED_TRACE(file);
    const TorchTraceRank t = read_torch_trace(file);
    for (const auto& p : t.problems) ADD_FAILURE() << p.text();
    EXPECT_EQ(t.md5_mismatches, 0U);
    EXPECT_GE(t.rank, 0);
    std::vector<std::string> names;
    for (const auto& g : t.graphs) names.push_back(g.kind);
    EXPECT_EQ(names, kGraphNames);

    std::vector<RawPayload> expected;
    for (auto& p : raw_payloads(file)) {
      if (std::find(kGraphNames.begin(), kGraphNames.end(), p.name) != kGraphNames.end())
        expected.push_back(p);
    }
    ASSERT_EQ(expected.size(), t.graphs.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(t.graphs[i].graph.nodes.size(), count_node_lines(expected[i].text)) << expected[i].name;
      EXPECT_EQ(t.payload(t.records[t.graphs[i].record]), expected[i].text);
      EXPECT_EQ(t.graphs[i].compile.text(), "0/0");
      EXPECT_TRUE(topological_order(t.graphs[i].graph).has_value());
    }
  }
}

TEST(GraphTrace, JsonRoundTripKeepsEveryField) {
  for (const auto& file : trace_files()) {
    const TorchTraceRank t = read_torch_trace(file);
    for (const auto& tg : t.graphs) {
      const auto j = graph_to_json(tg.graph);
      const Graph back = graph_from_json(nlohmann::ordered_json::parse(j.dump()), "roundtrip");
      EXPECT_TRUE(graphs_equal(tg.graph, back)) << file << " " << tg.kind;
      EXPECT_EQ(graph_to_json(back), j);
      EXPECT_EQ(fingerprint(back), fingerprint(tg.graph));
    }
  }
}

TEST(GraphTrace, DirectoryIsOneMultiRankTraceSortedByRank) {
  const auto m = read_torch_trace_dir(kTraceGraphData + "/compile_tp", {}, 2);
  ASSERT_EQ(m.ranks.size(), 2U);
  EXPECT_EQ(m.ranks[0].rank, 0);
  EXPECT_EQ(m.ranks[1].rank, 1);
  EXPECT_EQ(m.problem_count(), 0U);
  // The tensor-parallel joint graph holds functional collectives with process group '0'.
  const auto joint = m.ranks[1].find_graphs("aot_joint_graph");
  ASSERT_EQ(joint.size(), 1U);
  const Graph& g = joint[0]->graph;
  std::size_t collectives = 0;
  for (const auto& n : g.nodes) {
    if (g.str(n.target) == "_c10d_functional.all_reduce.default") {
      ++collectives;
      const int pg = process_group_arg(g, n);
      ASSERT_EQ(pg, 2);
      EXPECT_EQ(g.str(n.args[2].s), "0");
      EXPECT_EQ(g.str(n.args[1].s), "sum");
      EXPECT_EQ(n.meta.device.index, 1);
    }
  }
  EXPECT_GT(collectives, 0U);
  EXPECT_EQ(m.ranks[0].filenames.at(1), "/workspace/train_tiny.py");
}

TEST(GraphTrace, RankbugGraphsDifferOnlyUnderDeviceNormalizationBySliceBounds) {
  const auto m = read_torch_trace_dir(kTraceGraphData + "/compile_rankbug");
  ASSERT_EQ(m.ranks.size(), 2U);
  const Graph& f0 = m.ranks[0].find_graphs("aot_forward_graph")[0]->graph;
  const Graph& f1 = m.ranks[1].find_graphs("aot_forward_graph")[0]->graph;
  // Raw fingerprints differ (cuda:0 vs cuda:1 and the slice bounds) ...
  EXPECT_NE(fingerprint(f0), fingerprint(f1));
  // ... and stay different after mapping each rank's device to "local": the slice is affine in rank.
  Normalization n0, n1;
  n0.local_device = 0;
  n1.local_device = 1;
  EXPECT_NE(fingerprint(f0, n0), fingerprint(f1, n1));
  const NodeId s0 = f0.find_node("slice_1"), s1 = f1.find_node("slice_1");
  ASSERT_NE(s0, kNoNode);
  ASSERT_NE(s1, kNoNode);
  EXPECT_EQ(f0.str(f0.node(s0).target), "aten.slice.Tensor");
  EXPECT_EQ(f0.node(s0).args[2].i, 0);
  EXPECT_EQ(f0.node(s0).args[3].i, 32);
  EXPECT_EQ(f1.node(s1).args[2].i, 32);
  EXPECT_EQ(f1.node(s1).args[3].i, 64);
  // compile (no bug): forward graphs are identical across ranks once devices are normalized.
  const auto c = read_torch_trace_dir(kTraceGraphData + "/compile");
  const Graph& c0 = c.ranks[0].find_graphs("aot_forward_graph")[0]->graph;
  const Graph& c1 = c.ranks[1].find_graphs("aot_forward_graph")[0]->graph;
  EXPECT_NE(fingerprint(c0), fingerprint(c1));
  EXPECT_EQ(fingerprint(c0, n0), fingerprint(c1, n1));
}

}  // namespace
