// `gparity run --ring-orders` without GPUs: what the manifest records of NCCL's orders (from the
// environment and the graph file), and the refusals before any NCCL work.

#include "core/runtime/nccl_rings.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/runtime/launcher.hpp"
#include "core/runtime/runner.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::runtime {
namespace {

const std::string kDump = std::string(GPARITY_SOURCE_DIR) + "/tests/data/nccl/graph-dump-4xh200-ring.xml";

/// Sets (or, for nullopt, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(NcclGraphInfo, RecordsTheEnvironmentAndTheRingsOfTheGraphFile) {
  ScopedEnv algo("NCCL_ALGO", "Ring");
  ScopedEnv file("NCCL_GRAPH_FILE", kDump);
  RunOptions o;
  o.ring_orders = "rotate";
  o.ring_seed = 9;
  const auto n = nccl_graph_info(o);
  EXPECT_EQ(n.algo, "Ring");
  EXPECT_EQ(n.graph_file, kDump);
  ASSERT_EQ(n.rings.size(), 12U);
  EXPECT_EQ(n.rings[5], (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(n.ring_pattern, "rotate");
  EXPECT_EQ(n.ring_seed, 9U);
  EXPECT_TRUE(n.graph_error.empty());
}

TEST(NcclGraphInfo, NothingSetIsNcclsOwnGraphAndABadFileIsRecordedNotFatal) {
  ScopedEnv algo("NCCL_ALGO", std::nullopt);
  ScopedEnv file("NCCL_GRAPH_FILE", std::nullopt);
  const auto own = nccl_graph_info(RunOptions{});
  EXPECT_EQ(own.algo, "");
  EXPECT_EQ(own.graph_file, "");
  EXPECT_TRUE(own.rings.empty());
  EXPECT_FALSE(own.ring_seed);

  testing::TempDir dir;
  const auto bad = (dir.path() / "bad.xml").string();
  std::ofstream(bad) << "<graphs version=\"1\">\n<graph";
  ScopedEnv file2("NCCL_GRAPH_FILE", bad);
  const auto n = nccl_graph_info(RunOptions{});
  EXPECT_TRUE(n.rings.empty());
  EXPECT_NE(n.graph_error.find(bad + ":2:"), std::string::npos) << n.graph_error;
}

TEST(SetupRingOrders, RefusesAConflictingEnvironmentAndNonNcclRuns) {
  // The pip LibTorch on the GPU machine is built without Gloo.
  if (!comm_backend_available(CommBackend::Gloo)) GTEST_SKIP() << "this build has no Gloo";
  testing::TempDir dir;
  RankEnv env;
  env.master_port = pick_free_port();
  Comm comm(env, CommBackend::Gloo, std::chrono::seconds(10));
  RunOptions o;
  o.out_dir = dir.path();
  o.device = "cuda";
  setup_ring_orders(o, env, comm);  // no --ring-orders: nothing to do, nothing touched

  o.ring_orders = "reverse-odd";
  {
    ScopedEnv algo("NCCL_ALGO", "Tree");
    try {
      setup_ring_orders(o, env, comm);
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("needs NCCL_ALGO=Ring"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv algo("NCCL_ALGO", std::nullopt);
    ScopedEnv file("NCCL_GRAPH_FILE", kDump);
    EXPECT_THROW(setup_ring_orders(o, env, comm), std::invalid_argument);
  }
  ScopedEnv algo("NCCL_ALGO", std::nullopt);
  ScopedEnv file("NCCL_GRAPH_FILE", std::nullopt);
  ScopedEnv dump("NCCL_GRAPH_DUMP_FILE", std::nullopt);
  // Over Gloo there is no NCCL communicator to dump: refused, not silently skipped.
  EXPECT_THROW(setup_ring_orders(o, env, comm), std::invalid_argument);
  EXPECT_EQ(std::getenv("NCCL_GRAPH_FILE"), nullptr);
}

}  // namespace
}  // namespace gparity::runtime
