#pragma once
// Tensor element types as PyTorch, safetensors and our traces name them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gparity::model {

enum class DType : std::uint8_t {
  Bool,
  U8,
  I8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  F8E4M3,
  F8E5M2,
  F16,
  BF16,
  F32,
  F64,
  C64,
};

/// Bytes per element.
std::size_t dtype_size(DType d) noexcept;
/// Canonical name, as torch prints it without "torch.": "float32", "bfloat16", "int64", ...
std::string_view dtype_name(DType d) noexcept;
/// FX annotation prefix: "f32", "bf16", "i64", "b8", ...
std::string_view dtype_short_name(DType d) noexcept;
/// safetensors header name: "F32", "BF16", "I64", "BOOL", ...
std::string_view dtype_safetensors_name(DType d) noexcept;
/// Floating point (IEEE-like) types, whose values get ULP distances.
bool dtype_is_float(DType d) noexcept;

/// Accepts every spelling above plus a "torch." prefix ("torch.float32", "float", "half",
/// "long", "int", "double", "bool"). nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view text) noexcept;

}  // namespace gparity::model
