// libFuzzer target: zip archives as gparity reads them from untrusted files. ZipArchive (minizip
// through in-memory callbacks: .pt2 archives, deflated torch.save records) lists and reads every
// member under small caps; read_torch_save_tensor takes the bytes as a DCP chunk's torch.save
// record (its own central-directory walk for stored records, the zip library otherwise). Any
// input must give members or raise InputError; nothing may crash, leak, hang or read outside it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/dcp_record.hpp"
#include "core/model/formats/zip_archive.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  gparity::model::ZipLimits limits;
  limits.max_members = 256;
  limits.max_member_bytes = 1 << 20;
  try {
    const gparity::model::ZipArchive zip(bytes, "fuzz.zip", limits);
    for (const auto& m : zip.members()) {
      try {
        (void)zip.read(m);
      } catch (const gparity::model::InputError&) {
      }
    }
  } catch (const gparity::model::InputError&) {
  }
  std::vector<std::byte> buffer;
  for (const auto crc : {gparity::model::CrcCheck::now, gparity::model::CrcCheck::by_caller}) {
    try {
      (void)gparity::model::read_torch_save_tensor(bytes, "fuzz.distcp @ 0", buffer, crc);
    } catch (const gparity::model::InputError&) {
    }
  }
  return 0;
}
