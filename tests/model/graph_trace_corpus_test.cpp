// The tlparse corpus (TORCH_TRACE logs written by many PyTorch releases, copied from
// pytorch/tlparse's tests to ../shared/external/tlparse, or $GPARITY_TLPARSE_CORPUS): every
// input loads, every graph payload is imported (counted per file and kind against an independent
// line scan of the envelopes, not our reader), and >= 99% of the nodes are fully parsed.
// Skipped when the corpus is absent (the project does not ship it). docs/field-corpus.md keeps
// the figures this test prints.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/graph_load.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity::model;

fs::path corpus_dir() {
  if (const char* env = std::getenv("GPARITY_TLPARSE_CORPUS"); env && *env) return env;
  return fs::path(GPARITY_SOURCE_DIR) / ".." / "shared" / "external" / "tlparse";
}

using KindCounts = std::map<std::string, std::size_t>;

// Independent count: envelope lines (not TAB payload lines) whose event key is a graph kind and
// that announce a payload; artifacts by name (before_*/after_* passes, *_graph); graph_dump
// unless it dumps C++ code.
KindCounts scan_envelopes(const fs::path& file) {
  static const std::regex kEnvelope(R"re(^[VIWEF]\d{4} [^\]]*\] \{"([a-z_]+)": (\{"name": "([^"]*)")?)re");
  static const std::set<std::string> kGraphKinds = {
      "dynamo_output_graph",      "aot_joint_graph",          "aot_forward_graph",
      "aot_backward_graph",       "aot_inference_graph",      "inductor_pre_grad_graph",
      "inductor_post_grad_graph", "compiled_autograd_graph",  "graph_dump",
      "optimize_ddp_split_graph", "optimize_ddp_split_child", "exported_program"};
  KindCounts out;
  std::ifstream in(file, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '\t' || line.find("\"has_payload\"") == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_search(line, m, kEnvelope)) continue;
    const std::string key = m[1];
    if (key == "artifact") {
      const std::string name = m[3];
      if (name.starts_with("before_") || name.starts_with("after_") ||
          (name.size() > 6 && name.ends_with("_graph")))
        ++out[name];
    } else if (kGraphKinds.contains(key)) {
      if (key == "graph_dump" && line.find("\"type\": \"cpp\"") != std::string::npos) continue;
      ++out[key];
    }
  }
  return out;
}

std::string file_of(const std::string& source) {
  return source.substr(0, source.rfind(':'));
}

TEST(GraphTraceCorpus, EveryInputListsAndEveryGraphPayloadIsImported) {
  const fs::path root = corpus_dir();
  if (!fs::is_directory(root / "inputs")) GTEST_SKIP() << "no tlparse corpus at " << root;
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(root / "inputs")) inputs.push_back(e.path());
  inputs.push_back(root / "graph_exec_order_tests");
  std::sort(inputs.begin(), inputs.end());

  std::size_t files = 0, failing = 0, graphs = 0, nodes = 0, opaque = 0, problems = 0;
  KindCounts per_kind;
  for (const auto& input : inputs) {
    SCOPED_TRACE(input.string());
    GraphCollection c;
    try {
      c = load_graphs(input.string());
    } catch (const InputError& e) {
      ++failing;
      ADD_FAILURE() << "does not load: " << e.what();
      continue;
    }
    EXPECT_EQ(c.format, "torch_trace");
    EXPECT_TRUE(c.unparsed.empty()) << c.unparsed.front().file << ':' << c.unparsed.front().line << ": "
                                    << c.unparsed.front().problem;
    problems += c.problems.size();
    // Per file and kind: what we imported equals the envelopes announcing a graph.
    std::map<std::string, KindCounts> imported;
    for (const auto& e : c.entries) {
      ++imported[file_of(e.source)][e.kind];
      nodes += e.graph->total_nodes();
      opaque += e.graph->total_opaque();
      ++graphs;
      ++per_kind[e.kind];
    }
    std::vector<fs::path> logs;
    if (fs::is_directory(input)) {
      for (const auto& e : fs::directory_iterator(input)) {
        if (e.is_regular_file() && e.file_size() > 0) logs.push_back(e.path());
      }
    } else {
      logs.push_back(input);
    }
    for (const auto& log : logs) {
      ++files;
      EXPECT_EQ(imported[log.string()], scan_envelopes(log)) << log;
    }
  }
  const double fully =
      nodes == 0 ? 0.0 : 100.0 * static_cast<double>(nodes - opaque) / static_cast<double>(nodes);
  std::cout << "tlparse corpus: " << inputs.size() << " inputs, " << files << " log files, " << failing
            << " failing, " << graphs << " graphs, " << nodes << " nodes, " << opaque << " opaque, " << fully
            << "% fully parsed, " << problems << " problems\n";
  for (const auto& [kind, n] : per_kind) std::cout << "  " << kind << ": " << n << '\n';
  EXPECT_EQ(failing, 0U);
  EXPECT_GT(graphs, 400U);  // the corpus holds several hundred graph payloads
  EXPECT_GE(fully, 99.0);
}

}  // namespace
