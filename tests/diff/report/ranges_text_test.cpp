// The one formatter of step and rank lists in reports (diff/report/ranges_text).

#include "diff/report/ranges_text.hpp"

#include <gtest/gtest.h>

namespace gparity::diff {
namespace {

TEST(RangesText, ConsecutiveValuesBecomeRanges) {
  EXPECT_EQ(ranges_text({}), "");
  EXPECT_EQ(ranges_text({7}), "7");
  EXPECT_EQ(ranges_text({1, 2, 3, 7}), "1-3,7");
  EXPECT_EQ(ranges_text({1, 3, 5}), "1,3,5");
}

TEST(RangesText, RanksAreSortedFirst) {
  EXPECT_EQ(rank_ranges({5, 0, 3, 1, 2, 7, 8}), "0-3,5,7-8");
  EXPECT_EQ(rank_ranges({2}), "2");
}

}  // namespace
}  // namespace gparity::diff
