// model::DType <-> ScalarType (dtype_map.hpp).

#include "core/runtime/dtype_map.hpp"

#include <torch/version.h>

#include <utility>

namespace gparity::runtime {
namespace {

using model::DType;

constexpr std::pair<DType, c10::ScalarType> kTable[] = {
    {DType::Bool, c10::kBool},
    {DType::U8, c10::kByte},
    {DType::I8, c10::kChar},
    {DType::I16, c10::kShort},
    {DType::I32, c10::kInt},
    {DType::I64, c10::kLong},
    {DType::F16, c10::kHalf},
    {DType::BF16, c10::kBFloat16},
    {DType::F32, c10::kFloat},
    {DType::F64, c10::kDouble},
    {DType::C64, c10::kComplexFloat},
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    // Unsigned 16-64-bit tensors arrived in 2.3 (SDPA's philox seed and offset are uint64).
    {DType::U16, c10::kUInt16},
    {DType::U32, c10::kUInt32},
    {DType::U64, c10::kUInt64},
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    {DType::F8E4M3, c10::kFloat8_e4m3fn},
    {DType::F8E5M2, c10::kFloat8_e5m2},
#endif
};

}  // namespace

std::optional<c10::ScalarType> to_scalar_type(model::DType d) noexcept {
  for (const auto& [dtype, scalar] : kTable)
    if (dtype == d) return scalar;
  return std::nullopt;
}

std::optional<model::DType> to_dtype(c10::ScalarType s) noexcept {
  for (const auto& [dtype, scalar] : kTable)
    if (scalar == s) return dtype;
  return std::nullopt;
}

}  // namespace gparity::runtime
