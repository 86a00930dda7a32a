#pragma once
// model::DType and LibTorch's ScalarType, one table read both ways: the interpreter turns a
// graph's dtypes into ScalarTypes, the recorder names a tensor's dtype in its records.

#include <c10/core/ScalarType.h>

#include <optional>

#include "core/model/base/dtype.hpp"

namespace gparity::runtime {

/// The ScalarType holding `d`; nullopt where this LibTorch has none (uint16-64 before 2.3,
/// float8 before 2.1).
std::optional<c10::ScalarType> to_scalar_type(model::DType d) noexcept;

/// The DType of `s`; nullopt for one traces cannot name (complex32, quantized types, ...).
std::optional<model::DType> to_dtype(c10::ScalarType s) noexcept;

}  // namespace gparity::runtime
