// model::DType <-> ScalarType (core/runtime/dtype_map).

#include "core/runtime/dtype_map.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gparity::runtime {
namespace {

TEST(DtypeMap, EveryMappedDtypeComesBackAndNoTwoShareAScalarType) {
  std::set<c10::ScalarType> seen;
  int mapped = 0;
  for (int i = 0; i <= static_cast<int>(model::DType::C64); ++i) {
    const auto d = static_cast<model::DType>(i);
    const auto s = to_scalar_type(d);
    if (!s) continue;
    ++mapped;
    EXPECT_TRUE(seen.insert(*s).second) << model::dtype_name(d);
    EXPECT_EQ(to_dtype(*s), d) << model::dtype_name(d);
    EXPECT_EQ(static_cast<std::size_t>(c10::elementSize(*s)), model::dtype_size(d)) << model::dtype_name(d);
  }
  EXPECT_GE(mapped, 11);  // every LibTorch has bool .. complex64; newer ones more
  EXPECT_EQ(to_scalar_type(model::DType::BF16), c10::kBFloat16);
  EXPECT_EQ(to_dtype(c10::kComplexHalf), std::nullopt);
}

}  // namespace
}  // namespace gparity::runtime
