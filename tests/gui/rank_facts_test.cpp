// gparity-view's rank-diff mode with the facts of `gparity graph ranks`, offscreen: the mesh and
// process groups resolved as the CLI resolves them (diff::classify_trace), so the shown graph's
// findings name mesh coordinates (48*dp) and process-group-parametric collectives; the
// trace-level facts (compile ids, cache hit/miss groups, ...) listed first in the findings list,
// checked with QAbstractItemModelTester; a click on a fact shows a graph of its compile id.
// Data: the 2x2 mesh sample (../shared/samples, GPARITY_SAMPLES) and tlparse's multi_rank_logs
// (../shared/external/tlparse, GPARITY_TLPARSE_CORPUS), each skipped when absent; and a trace
// made here from checked-in files (tests/data/graph/compile plus tests/data/trace_facts/cache).

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "gui/models.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/shared_data.hpp"

namespace gparity::gui {
namespace {

using gparity::testing::app;
using gparity::testing::screenshot;

const std::string kSource = GPARITY_SOURCE_DIR;

class RankFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    window_ = std::make_unique<MainWindow>();
    window_->resize(1400, 860);
    window_->show();
  }
  void open(const std::string& path) {
    window_->open_path(QString::fromStdString(path), true);
    ASSERT_TRUE(window_->wait_idle()) << "load did not finish";
    ASSERT_NE(window_->document(), nullptr) << window_->messages().toStdString();
  }
  [[nodiscard]] const FindingsModel& findings() const { return *window_->findings(); }
  [[nodiscard]] QString cell(int row, int column) const {
    return findings().index(row, column).data().toString();
  }
  /// The first row whose field is `field` (and compile id `compile` when given), -1 when none.
  [[nodiscard]] int row_of(const QString& field, const QString& compile = {}) const {
    for (int r = 0; r < findings().rowCount(); ++r)
      if (cell(r, FindingsModel::Field) == field &&
          (compile.isEmpty() || cell(r, FindingsModel::Compile) == compile))
        return r;
    return -1;
  }
  std::unique_ptr<MainWindow> window_;
};

std::string existing(const std::optional<std::string>& root, const char* relative) {
  if (!root) return {};
  const auto p = std::filesystem::path(*root) / relative;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

TEST_F(RankFactsTest, MeshSampleFindingsNameTheDpCoordinateAndTpGroups) {
  const auto trace = existing(gparity::testing::samples_dir(), "torch-2.11-2x2mesh-mp/compile_coor/trace");
  if (trace.empty()) GTEST_SKIP() << "2x2 mesh sample not found";
  open(trace);
  ASSERT_NE(window_->rank_report(), nullptr);
  EXPECT_EQ(window_->rank_report()->mesh, "2x2 (dp, tp) from DeviceMesh in graph payloads");
  EXPECT_TRUE(window_->messages().contains(QStringLiteral("Mesh: 2x2 (dp, tp)")));
  QAbstractItemModelTester tester(const_cast<FindingsModel*>(&findings()),
                                  QAbstractItemModelTester::FailureReportingMode::Fatal);
  const auto doc = window_->document();
  int dp_rows = 0, tp_all_reduce = 0, divergent = 0;
  bool shot = false;
  for (std::size_t i = 0; i < doc->graphs.size(); ++i) {
    if (doc->graphs[i].rank != 0) continue;
    window_->show_graph(static_cast<int>(i));
    for (int r = findings().trace_fact_rows(); r < findings().rowCount(); ++r) {
      const auto& f = findings().finding(r);
      divergent += f.cls == diff::FindingClass::Divergent ? 1 : 0;
      if (cell(r, FindingsModel::Function).contains(QStringLiteral("48*dp"))) {
        ++dp_rows;
        // A click on the row selects its node on the canvas.
        window_->jump_to_finding(r);
        const auto name = doc->graphs[i].graph->node_name(window_->canvas()->selected());
        EXPECT_EQ(gparity::gui::exact_text(name), cell(r, FindingsModel::Node));
      }
      if (cell(r, FindingsModel::Class) == QStringLiteral("process-group-parametric") &&
          f.target.find("all_reduce") != std::string::npos) {
        ++tp_all_reduce;
        EXPECT_TRUE(cell(r, FindingsModel::Function).contains(QStringLiteral("tp"))) << f.note;
      }
    }
    if (!shot && dp_rows > 0 && tp_all_reduce > 0) {
      ASSERT_TRUE(window_->canvas()->wait_for_layout());
      screenshot(*window_, "rank_facts_mesh");
      shot = true;
    }
  }
  EXPECT_GT(dp_rows, 0) << "no finding names 48*dp";
  EXPECT_GT(tp_all_reduce, 0) << "the tp all-reduce is not process-group-parametric";
  EXPECT_EQ(divergent, 0);  // as `gparity graph ranks` finds (tests/cli/cli_mesh_sample_test.cpp)
}

TEST_F(RankFactsTest, MultiRankLogsListCacheGroupsAndCompileIds) {
  const auto dir = existing(gparity::testing::tlparse_corpus(), "inputs/multi_rank_logs");
  if (dir.empty()) GTEST_SKIP() << "tlparse corpus not found";
  open(dir);
  QAbstractItemModelTester tester(const_cast<FindingsModel*>(&findings()),
                                  QAbstractItemModelTester::FailureReportingMode::Fatal);
  const int groups = row_of(QStringLiteral("cache groups"));
  ASSERT_GE(groups, 0) << window_->messages().toStdString();
  EXPECT_LT(groups, findings().trace_fact_rows());
  EXPECT_TRUE(cell(groups, FindingsModel::Function).startsWith(QStringLiteral("3 groups of ranks")))
      << cell(groups, FindingsModel::Function).toStdString();
  const int compile = row_of(QStringLiteral("compile_id"), QStringLiteral("0/7"));
  ASSERT_GE(compile, 0);
  EXPECT_TRUE(cell(compile, FindingsModel::Values).startsWith(QStringLiteral("0: absent; 1: present")))
      << cell(compile, FindingsModel::Values).toStdString();
  EXPECT_TRUE(window_->messages().contains(QStringLiteral("cache: 3 group(s) of ranks")));
  // A fact at another compile id than the shown graph's: its row shows a graph of that id and
  // stays selected; the trace facts stay listed whatever graph is shown.
  const auto doc = window_->document();
  const int facts = findings().trace_fact_rows();
  int jumped = 0;
  for (int r = 0; r < facts && jumped == 0; ++r) {
    const auto id = cell(r, FindingsModel::Compile).toStdString();
    const auto& shown = doc->graphs[static_cast<std::size_t>(window_->current_graph())];
    if (id.empty() || id == shown.compile) continue;
    bool logged = false;
    for (const auto& g : doc->graphs) logged = logged || g.compile == id;
    if (!logged) continue;
    window_->jump_to_finding(r);
    EXPECT_EQ(doc->graphs[static_cast<std::size_t>(window_->current_graph())].compile, id);
    EXPECT_EQ(findings().trace_fact_rows(), facts);
    ++jumped;
  }
  EXPECT_EQ(jumped, 1) << "no fact at a compile id another graph was logged at";
  ASSERT_TRUE(window_->canvas()->wait_for_layout());
  screenshot(*window_, "rank_facts_tlparse");
}

// Checked-in data only: the two-rank compile sample with tlparse's cache records appended (rank
// 0 logged no cache artifact, rank 1 hits): the cache splits the ranks into two groups.
TEST_F(RankFactsTest, CheckedInTraceWithCacheRecordsListsTheirGroups) {
  QTemporaryDir tmp;
  ASSERT_TRUE(tmp.isValid());
  const std::string graphs[] = {"dedicated_log_torch_trace_rank_0_vp85oaze.log",
                                "dedicated_log_torch_trace_rank_1_w98tottg.log"};
  for (int r = 0; r < 2; ++r) {
    std::ofstream out(
        tmp.path().toStdString() + "/dedicated_log_torch_trace_rank_" + std::to_string(r) + ".log",
        std::ios::binary);
    for (const auto& in : {kSource + "/tests/data/graph/compile/" + graphs[r],
                           kSource + "/tests/data/trace_facts/cache/dedicated_log_torch_trace_rank_" +
                               std::to_string(r) + ".log"}) {
      std::ifstream f(in, std::ios::binary);
      ASSERT_TRUE(f) << in;
      out << f.rdbuf();
    }
  }
  open(tmp.path().toStdString());
  QAbstractItemModelTester tester(const_cast<FindingsModel*>(&findings()),
                                  QAbstractItemModelTester::FailureReportingMode::Fatal);
  const int groups = row_of(QStringLiteral("cache groups"));
  ASSERT_GE(groups, 0) << window_->messages().toStdString();
  EXPECT_EQ(cell(groups, FindingsModel::Function), QStringLiteral("2 groups of ranks: 0 | 1"));
  EXPECT_EQ(cell(groups, FindingsModel::Class), QStringLiteral("divergent"));
  // Rank 1 hit the caches at 0/0 where rank 0 logged none: one finding per cache, at 0/0.
  const int hit = row_of(QStringLiteral("cache"), QStringLiteral("0/0"));
  ASSERT_GE(hit, 0);
  EXPECT_EQ(cell(hit, FindingsModel::Values), QStringLiteral("0: absent; 1: hit"));
  // A single-rank document has no trace facts.
  open(kSource + "/tests/data/graph/eager/tiny_export_graph.txt");
  EXPECT_EQ(window_->rank_report(), nullptr);
  EXPECT_EQ(findings().rowCount(), 0);
}

// gparity-view --mesh: the given mesh, not the one read from the trace (none here: a 2-rank
// trace whose graphs print no DeviceMesh), is what the rank report uses and names.
TEST_F(RankFactsTest, MeshOverrideIsUsedAndNamed) {
  const auto trace = kSource + "/tests/data/graph/compile";
  open(trace);
  ASSERT_NE(window_->rank_report(), nullptr);
  EXPECT_EQ(window_->rank_report()->mesh.find("--mesh"), std::string::npos) << window_->rank_report()->mesh;
  diff::RankLayout layout;
  layout.mesh = {2};
  layout.mesh_names = {"dp"};
  window_->set_mesh_override(layout);
  open(trace);
  ASSERT_NE(window_->rank_report(), nullptr);
  EXPECT_EQ(window_->rank_report()->mesh, "2 (dp) from --mesh");
  EXPECT_TRUE(window_->messages().contains(QStringLiteral("Mesh: 2 (dp) from --mesh")));
}

}  // namespace
}  // namespace gparity::gui
