// gparity-view at scale: a 100,000-node graph made by repeating the sample joint graph (compile,
// rank 0) with renamed nodes. Measures layout alone, time to first paint (layout on the worker
// thread + first frame), and the frame time while panning, at 1:1 and zoomed out, with groups
// collapsed (the default above 3,000 nodes) and expanded. Goals: first paint < 2 s, frame < 16 ms.
// The verdict page (issue 27): a run pair of R ranks x S steps (8 parameters; rank 5 diverges
// from step S/2 on), from the loaded pair to the first frame of the page (grid built, page
// laid out, painted), and the grid's frame time while panning, at the opening zoom and at
// fit-all. Goals: 64 x 1,000 first paint <= 0.3 s, 256 x 1,000 <= 0.5 s; frames <= 16 ms.
// Run with QT_QPA_PLATFORM=offscreen.
#include <benchmark/benchmark.h>

#include <QApplication>
#include <QPixmap>
#include <algorithm>
#include <memory>

#include "core/model/formats/torch_trace.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/verdict.hpp"
#include "gui/verdict_page.hpp"

namespace {

using namespace gparity;

model::Value copy_value(const model::Graph& from, const model::Value& v, model::Graph& to,
                        model::NodeId offset) {
  model::Value out = v;
  out.s = to.intern(from.str(v.s));
  out.device.type = to.intern(from.str(v.device.type));
  if (v.kind == model::ValueKind::Node) out.node = v.node + offset;
  for (std::size_t i = 0; i < v.items.size(); ++i) out.items[i] = copy_value(from, v.items[i], to, offset);
  return out;
}

// Copies of `g` with names suffixed "_c<k>" until `nodes` nodes; copy k's placeholders that the
// joint graph feeds from parameters take copy k-1's output-side node instead, so the copies form
// one deep graph rather than side-by-side islands.
std::shared_ptr<gui::Document> repeated(const model::Graph& g, std::size_t nodes) {
  auto doc = std::make_shared<gui::Document>();
  auto& out = *doc->collection.owned.emplace_back(std::make_shared<model::Graph>());
  const auto n = static_cast<model::NodeId>(g.nodes.size());
  for (model::NodeId k = 0; out.nodes.size() < nodes; ++k) {
    const model::NodeId offset = k * n;
    for (model::NodeId i = 0; i < n && out.nodes.size() < nodes; ++i) {
      const auto& src = g.nodes[i];
      model::Node d = src;
      d.name = out.intern(std::string(g.str(src.name)) + "_c" + std::to_string(k));
      d.target = out.intern(g.str(src.target));
      d.module_path = out.intern(g.str(src.module_path));
      d.comment = out.intern(g.str(src.comment));
      d.source.file = out.intern(g.str(src.source.file));
      d.source.function = out.intern(g.str(src.source.function));
      d.source.code = out.intern(g.str(src.source.code));
      d.meta.device.type = out.intern(g.str(src.meta.device.type));
      d.meta.sym = out.intern(g.str(src.meta.sym));
      for (auto& dim : d.meta.sizes) dim.expr = out.intern(g.str(dim.expr));
      for (auto& dim : d.meta.strides) dim.expr = out.intern(g.str(dim.expr));
      for (std::size_t a = 0; a < src.args.size(); ++a) d.args[a] = copy_value(g, src.args[a], out, offset);
      for (std::size_t a = 0; a < src.kwargs.size(); ++a) {
        d.kwargs[a].name = out.intern(g.str(src.kwargs[a].name));
        d.kwargs[a].value = copy_value(g, src.kwargs[a].value, out, offset);
      }
      if (k > 0 && src.kind == model::NodeKind::Placeholder) {
        // Chain: the copy's input comes from the previous copy's last non-output node.
        d.kind = model::NodeKind::CallFunction;
        d.target = out.intern("aten.clone.default");
        d.args = {model::Value::ref(offset - 2)};
      }
      out.nodes.push_back(std::move(d));
    }
  }
  gui::GraphEntry e;
  e.kind = "fx_text";
  e.graph = &out;
  doc->graphs.push_back(e);
  return doc;
}

const gui::Document& big_graph() {
  static const auto doc = [] {
    const auto trace = model::read_torch_trace(
        GPARITY_SOURCE_DIR "/tests/data/graph/compile/dedicated_log_torch_trace_rank_0_vp85oaze.log");
    const auto joint = trace.find_graphs("aot_joint_graph");
    return repeated(joint.front()->graph, 100000);
  }();
  return *doc;
}

QApplication* g_app = nullptr;  // made in main, so it ends before static destruction

QApplication& app() {
  return *g_app;
}

std::vector<char> groups_state(const model::Graph& g, bool collapsed) {
  return std::vector<char>(gui::group_nodes(g).groups.size(), collapsed ? 1 : 0);
}

void BM_Layout100k(benchmark::State& state) {
  const auto& g = *big_graph().graphs[0].graph;
  const bool collapsed = state.range(0) != 0;
  for (auto _ : state) {
    auto c = gui::compute_canvas_layout(g, nullptr, nullptr, groups_state(g, collapsed), nullptr);
    benchmark::DoNotOptimize(c);
    state.counters["boxes"] = static_cast<double>(c->view.items.size());
  }
  state.counters["nodes"] = static_cast<double>(g.nodes.size());
}
BENCHMARK(BM_Layout100k)->Arg(1)->Arg(0)->ArgName("collapsed")->Unit(benchmark::kMillisecond)->Iterations(2);

// From a loaded graph to the first frame on screen: set_graph, worker layout, first paint.
void BM_FirstPaint100k(benchmark::State& state) {
  app();
  const auto& doc = big_graph();
  auto shared = std::shared_ptr<const gui::Document>(&doc, [](const gui::Document*) {});
  for (auto _ : state) {
    gui::GraphCanvas canvas;
    canvas.resize(1280, 800);
    canvas.show();
    canvas.set_graph(shared, doc.graphs[0].graph);
    canvas.wait_for_layout(60000);
    QPixmap frame = canvas.viewport()->grab();
    benchmark::DoNotOptimize(frame);
  }
}
BENCHMARK(BM_FirstPaint100k)->Unit(benchmark::kMillisecond)->Iterations(2);

// One frame per iteration while panning. Args: scale x100, groups collapsed.
void BM_PanFrame100k(benchmark::State& state) {
  app();
  const auto& doc = big_graph();
  auto shared = std::shared_ptr<const gui::Document>(&doc, [](const gui::Document*) {});
  gui::GraphCanvas canvas;
  canvas.resize(1280, 800);
  canvas.show();
  canvas.set_graph(shared, doc.graphs[0].graph);
  canvas.wait_for_layout(60000);
  if (state.range(1) == 0) canvas.set_all_groups_collapsed(false);
  canvas.wait_for_layout(60000);
  canvas.zoom_by(state.range(0) / 100.0 / canvas.scale());
  const auto* layout = canvas.current_layout();
  const auto mid = layout->view.item_of_node[layout->view.item_of_node.size() / 2];
  canvas.center_on_layout(QPointF(layout->result.x[mid], layout->result.y[mid]));
  int step = 0;
  std::size_t painted = 0;
  for (auto _ : state) {
    const int dir = (step++ / 50) % 2 ? -1 : 1;  // back and forth
    canvas.pan_by(dir * 5, dir * 23);
    QPixmap frame = canvas.viewport()->grab();
    benchmark::DoNotOptimize(frame);
    painted = std::max(painted, canvas.painted_items());
  }
  state.counters["max_boxes_painted"] = static_cast<double>(painted);
  state.counters["boxes"] = static_cast<double>(canvas.current_layout()->view.items.size());
}
BENCHMARK(BM_PanFrame100k)
    ->Args({100, 1})
    ->Args({100, 0})
    ->Args({20, 0})
    ->Args({2, 0})
    ->ArgNames({"scale%", "collapsed"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(200);

// A loaded run pair as load_run_pair gives it, made in memory: the page's input.
std::shared_ptr<gui::RunPair> synthetic_runs(int ranks, int steps) {
  auto runs = std::make_shared<gui::RunPair>();
  runs->baseline_path = "/data/jobs/baseline";
  runs->candidate_path = "/data/jobs/candidate";
  constexpr int kParams = 8;
  for (int p = 0; p < kParams; ++p) runs->params.push_back("layers." + std::to_string(p) + ".weight");
  auto report = std::make_shared<diff::CollectingConsumer>();
  for (int r = 0; r < ranks; ++r) {
    gui::RankPair rp;
    rp.rank = r;
    for (int s = 1; s <= steps; ++s) {
      const bool differs = r == 5 && s >= steps / 2;
      rp.steps.push_back(s);
      rp.differs.emplace_back(kParams, differs);
      rp.missing.emplace_back(kParams, false);
      rp.hashes.emplace_back(
          kParams, std::pair<std::uint64_t, std::uint64_t>{0x1234U + s, differs ? 0x99U : 0x1234U + s});
      if (differs && !rp.first_divergence) rp.first_divergence = std::pair{s - 1, 0};
      if (differs) {
        diff::Finding f;
        f.severity = diff::Severity::Divergence;
        f.kind = "param_hash_mismatch";
        f.where.rank = r;
        f.where.step = s;
        f.where.parameter = runs->params[0];
        f.message = "8 of 8 parameters differ";
        report->findings.push_back(std::move(f));
      }
    }
    runs->ranks.push_back(std::move(rp));
  }
  report->verdict.exit_code = 1;
  report->verdict.headline = "DIVERGENCE: the runs are not identical";
  report->verdict.summary = {"rank 5 diverges at step " + std::to_string(steps / 2)};
  runs->report = report;
  runs->exit_code = 1;
  return runs;
}

// From the loaded pair to the first frame: the grid (run_verdict), the page, its first paint.
void BM_VerdictFirstPaint(benchmark::State& state) {
  app();
  const auto runs = synthetic_runs(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    gui::VerdictPage page;
    page.resize(1400, 900);
    page.show();
    page.set_verdict(std::make_shared<const gui::JobVerdict>(gui::run_verdict(runs)));
    QPixmap frame = page.grab();
    benchmark::DoNotOptimize(frame);
  }
  state.counters["cells"] = static_cast<double>(state.range(0) * state.range(1));
}
BENCHMARK(BM_VerdictFirstPaint)
    ->Args({64, 1000})
    ->Args({256, 1000})
    ->ArgNames({"ranks", "steps"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// One grid frame per iteration while panning (or zooming, arg 2 = 2): cell size in px (0: fit-all).
void BM_VerdictPanFrame(benchmark::State& state) {
  app();
  const auto runs = synthetic_runs(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  gui::VerdictPage page;
  page.resize(1400, 900);
  page.show();
  page.set_verdict(std::make_shared<const gui::JobVerdict>(gui::run_verdict(runs)));
  auto* grid = page.grid();
  if (state.range(2) == 0)
    grid->fit_all();
  else
    grid->set_cell_size(static_cast<double>(state.range(2)));
  int step = 0;
  for (auto _ : state) {
    const int dir = (step++ / 50) % 2 ? -1 : 1;
    grid->pan_by(dir * 23, dir * 7);
    if (state.range(2) == 0) grid->zoom_by(dir > 0 ? 1.02 : 1 / 1.02);  // fit-all: zoom as well
    QPixmap frame = grid->viewport()->grab();
    benchmark::DoNotOptimize(frame);
  }
}
BENCHMARK(BM_VerdictPanFrame)
    ->Args({64, 1000, 16})
    ->Args({256, 1000, 16})
    ->Args({256, 1000, 4})
    ->Args({256, 1000, 0})
    ->ArgNames({"ranks", "steps", "cell_px"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(200);

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication a(argc, argv);
  g_app = &a;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
