#pragma once
// A strided block of fixed-size elements in host memory: the one shape of input every hash in
// hash/ takes. No ownership, no dtype semantics: only element size, shape and strides.

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace gparity::hash {

/// Thrown when a block description is inconsistent (bad element size, rank mismatch, a block
/// that does not fit inside its global shape). Callers turn it into a bad-input report.
class BlockError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct BlockView {
  /// Address of local element [0, ..., 0]. May be null only when the block is empty.
  const std::byte* data = nullptr;
  /// Bytes per element: 1, 2, 4 or 8.
  std::size_t elem_size = 0;
  /// Local extent per dimension. Rank 0 means a scalar (one element).
  std::span<const std::int64_t> shape;
  /// Local stride per dimension, in elements (may be any non-negative value; an empty span
  /// means contiguous row-major).
  std::span<const std::int64_t> strides;
};

/// Number of elements (product of shape; 1 for rank 0).
std::int64_t element_count(std::span<const std::int64_t> shape);

/// Checks elem_size, strides rank and non-negative sizes; throws BlockError.
void validate(const BlockView& block);

}  // namespace gparity::hash
