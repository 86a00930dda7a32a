// The report line for runs that reduced in different NCCL orders: from the manifests' "nccl"
// fields (written and read back through the trace format), shown by every reporter.

#include "diff/collectives/nccl_rings.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/model/run/run_source.hpp"
#include "core/model/run/trace_writer.hpp"
#include "diff/report/reporters.hpp"
#include "diff/runs/run_compare.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity;

model::NcclGraphInfo own_graph() {
  return {"Ring", "", {}, "", std::nullopt, "", nlohmann::json::object()};
}

model::NcclGraphInfo reverse_odd(const std::string& path) {
  model::NcclGraphInfo n = own_graph();
  n.graph_file = path;
  n.ring_pattern = "reverse-odd";
  n.rings = {{0, 1, 2, 3}, {0, 3, 2, 1}, {0, 1, 2, 3}, {0, 3, 2, 1}};
  return n;
}

model::RunManifest with(std::optional<model::NcclGraphInfo> n) {
  model::RunManifest m;
  m.world_size = 4;
  m.nccl = std::move(n);
  return m;
}

TEST(NcclGraphFinding, SameOrdersSayNothing) {
  EXPECT_FALSE(diff::nccl_graph_finding(with(std::nullopt), with(std::nullopt)));
  EXPECT_FALSE(diff::nccl_graph_finding(with(own_graph()), with(own_graph())));
  // The same rings from files in two run directories are the same orders.
  EXPECT_FALSE(diff::nccl_graph_finding(with(reverse_odd("/a/g.xml")), with(reverse_odd("/b/g.xml"))));
  // A run that does not say (an older trace) next to one on NCCL's own graph: nothing to tell.
  EXPECT_FALSE(diff::nccl_graph_finding(with(std::nullopt), with(own_graph())));
}

TEST(NcclGraphFinding, DifferentRingsOrGraphFileOrAlgoAreReported) {
  const auto f = diff::nccl_graph_finding(with(own_graph()), with(reverse_odd("/runs/c/nccl-graph.xml")));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "nccl_graph_differs");
  EXPECT_EQ(f->severity, diff::Severity::Warning);
  EXPECT_NE(f->message.find("baseline: NCCL's own graph, NCCL_ALGO=Ring"), std::string::npos) << f->message;
  EXPECT_NE(
      f->message.find("candidate: NCCL_GRAPH_FILE=/runs/c/nccl-graph.xml (--ring-orders reverse-odd), 2 "
                      "distinct rings over 4 channels"),
      std::string::npos)
      << f->message;
  EXPECT_EQ(f->values["candidate"]["rings"][1], (std::vector<std::int64_t>{0, 3, 2, 1}));

  auto rotated = reverse_odd("/x.xml");
  rotated.rings[1] = {0, 2, 3, 1};
  EXPECT_TRUE(diff::nccl_graph_finding(with(reverse_odd("/x.xml")), with(rotated)));
  auto tree = own_graph();
  tree.algo = "Tree";
  EXPECT_TRUE(diff::nccl_graph_finding(with(own_graph()), with(tree)));
  // One side silent, the other on a graph file: said, as "not recorded".
  const auto g = diff::nccl_graph_finding(with(std::nullopt), with(reverse_odd("/g.xml")));
  ASSERT_TRUE(g);
  EXPECT_NE(g->message.find("baseline: not recorded"), std::string::npos) << g->message;
  // Unreadable files (no rings) are told apart by name.
  auto u1 = own_graph(), u2 = own_graph();
  u1.graph_file = "/one.xml";
  u2.graph_file = "/two.xml";
  EXPECT_TRUE(diff::nccl_graph_finding(with(u1), with(u2)));
  EXPECT_FALSE(diff::nccl_graph_finding(with(u1), with(u1)));
}

TEST(NcclGraphFinding, ManifestFieldsRoundTripAndEveryReporterShowsTheLine) {
  gparity::testing::TempDir tmp;
  const auto write = [&](const std::string& name, std::optional<model::NcclGraphInfo> n) {
    auto m = with(std::move(n));
    m.world_size = 1;
    model::write_manifest(tmp.path() / name, m);
    model::TraceWriter w(tmp.path() / name, 0);
    model::StepRecord s;
    s.step = 1;
    s.loss = model::TraceScalar::from_f32(1.0F);
    w.write_step(s);
  };
  auto cand = reverse_odd("/runs/c/nccl-graph.xml");
  cand.ring_seed = 5;
  cand.extra["future"] = 1;
  write("a", own_graph());
  write("b", cand);
  const auto a = model::open_run((tmp.path() / "a").string());
  const auto b = model::open_run((tmp.path() / "b").string());
  ASSERT_TRUE(b.manifest.nccl);
  EXPECT_EQ(*b.manifest.nccl, cand);
  EXPECT_EQ(*a.manifest.nccl, own_graph());

  std::ostringstream text, json, md, junit;
  auto t = diff::make_text_reporter(text);
  auto j = diff::make_json_reporter(json);
  auto m = diff::make_markdown_reporter(md);
  auto u = diff::make_junit_reporter(junit, "gparity.compare");
  diff::FanOutConsumer all;
  diff::CollectingConsumer got;
  for (auto* c : {t.get(), j.get(), m.get(), u.get()}) all.add(*c);
  all.add(got);
  // Same losses: parity (exit 0), and still the warning that the orders differed.
  EXPECT_EQ(diff::compare_runs(a, b, {}, all), 0);
  bool seen = false;
  for (const auto& f : got.findings) seen = seen || f.kind == "nccl_graph_differs";
  EXPECT_TRUE(seen);
  for (const auto* out : {&text, &json, &md}) {
    EXPECT_NE(out->str().find("different NCCL graphs or ring orders"), std::string::npos) << out->str();
  }
}

}  // namespace
