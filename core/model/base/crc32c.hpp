#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and the "masked" form TFRecord files
// (TensorBoard event files) store after each length and each payload. Debian ships no C++
// CRC-32C library, so this is a small table-driven one; crc32c("123456789") == 0xE3069283.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace gparity::model {

/// CRC-32C of `data` (initial value and final xor 0xFFFFFFFF, as iSCSI and TFRecord use it).
std::uint32_t crc32c(std::span<const std::byte> data) noexcept;
std::uint32_t crc32c(std::string_view data) noexcept;

/// TFRecord's mask: rotate right by 15 and add 0xA282EAD8, so that a CRC of data that itself
/// holds CRCs does not look like one.
constexpr std::uint32_t mask_crc32c(std::uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8U;
}

}  // namespace gparity::model
