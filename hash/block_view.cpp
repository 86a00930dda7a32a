#include "hash/block_view.hpp"

namespace gparity::hash {

std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (const std::int64_t e : shape) n *= e;
  return n;
}

void validate(const BlockView& block) {
  const std::size_t es = block.elem_size;
  if (es != 1 && es != 2 && es != 4 && es != 8) {
    throw BlockError("element size " + std::to_string(es) + " is not 1, 2, 4 or 8 bytes");
  }
  if (!block.strides.empty() && block.strides.size() != block.shape.size()) {
    throw BlockError("shape has " + std::to_string(block.shape.size()) + " dims but strides have " +
                     std::to_string(block.strides.size()));
  }
  for (const std::int64_t e : block.shape) {
    if (e < 0) throw BlockError("negative extent " + std::to_string(e));
  }
  for (const std::int64_t s : block.strides) {
    if (s < 0) throw BlockError("negative stride " + std::to_string(s));
  }
}

}  // namespace gparity::hash
