// runtime::records_not_alike (core/runtime/replay_options.hpp): how a lazy replay's second pass
// (issue 33) checks that it recorded every tensor of the first pass alike.

#include "core/runtime/replay_options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gparity::runtime {
namespace {

model::NodeRecord record(const std::string& graph, const std::string& node, std::int64_t output,
                         std::uint64_t shard) {
  model::NodeRecord r;
  r.graph = graph;
  r.node = node;
  r.output = output;
  r.shape = {4, 8};
  r.shard = shard;
  r.has_xxh3 = false;
  return r;
}

TEST(RecordsNotAlike, EveryRecordOfTheFirstPassMustComeAgainFieldForField) {
  const std::vector<model::NodeRecord> first = {record("a", "mm", 0, 1), record("a", "output", 0, 2),
                                                record("b", "mm", 0, 1)};
  // The second pass records more (every node), in its own order: alike.
  std::vector<model::NodeRecord> second = {record("b", "mm", 0, 1), record("a", "x", 0, 9),
                                           record("a", "mm", 0, 1), record("a", "output", 0, 2)};
  EXPECT_TRUE(records_not_alike(first, second).empty());
  // Another hash, another shape, a record gone: each named by graph, node and output.
  second[2].shard = 7;
  second[3].shape = {8, 4};
  second.erase(second.begin());
  const auto d = records_not_alike(first, second);
  ASSERT_EQ(d.size(), 3U);
  EXPECT_EQ(d[0].rfind("graph a, node mm output 0: ", 0), 0U) << d[0];
  EXPECT_EQ(d[1].rfind("graph a, node output output 0: ", 0), 0U) << d[1];
  EXPECT_EQ(d[2], "graph b, node mm output 0: not recorded when every node was hashed");
  // A view record is compared by where it lies, not by a hash.
  auto view = record("a", "t", 0, 0);
  view.has_shard = false;
  view.view = model::NodeView{"mm", 0, 0, {1, 4}, {8, 1}};
  auto moved = view;
  moved.view->offset = 4;
  EXPECT_EQ(records_not_alike({view}, {moved}).size(), 1U);
  EXPECT_TRUE(records_not_alike({view}, {view}).empty());
}

}  // namespace
}  // namespace gparity::runtime
