#pragma once
// Reads the two extreme elements of a loaded DCP chunk view (lowest and highest byte it spans),
// so ASan sees a view that reaches outside the buffer it points into.

#include <cstddef>
#include <cstdint>

#include "core/model/formats/dcp_checkpoint.hpp"

namespace gparity::fuzz {

inline unsigned touch_view(const model::DcpChunkView& v) {
  if (v.data == nullptr || v.elem_size == 0) return 0;
  std::int64_t lo = 0, hi = 0, contiguous = 1;
  for (std::size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] == 0) return 0;  // empty: nothing may be read
    const std::int64_t stride = v.strides.empty() ? contiguous : v.strides[d];
    const std::int64_t reach = (v.shape[d] - 1) * stride;
    (reach < 0 ? lo : hi) += reach;
    contiguous *= v.shape[d];
  }
  const auto* first =
      static_cast<const volatile std::byte*>(v.data + lo * static_cast<std::int64_t>(v.elem_size));
  const auto* last =
      static_cast<const volatile std::byte*>(v.data + (hi + 1) * static_cast<std::int64_t>(v.elem_size) - 1);
  return static_cast<unsigned>(*first) + static_cast<unsigned>(*last);
}

}  // namespace gparity::fuzz
