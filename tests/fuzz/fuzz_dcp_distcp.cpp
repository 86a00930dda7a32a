// libFuzzer target: DCP data files (`__<rank>_0.distcp`: torch.save zip records at the byte
// ranges `.metadata` names) read through DcpCheckpoint with the real `.metadata` of
// tests/data/dcp/grid. The input's first byte picks which of the four data files the rest of it
// replaces (the others stay real). Every chunk of that file must load (both CRC modes) with a
// view inside the bytes it points into, or raise InputError.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/dcp_checkpoint.hpp"
#include "tests/fuzz/fuzz_dcp_view.hpp"
#include "tests/fuzz/fuzz_files.hpp"

namespace {
constexpr const char* kFiles[] = {"__0_0.distcp", "__1_0.distcp", "__2_0.distcp", "__3_0.distcp"};
std::vector<std::uint8_t> g_real[4];  // the real data files, read once
int g_replaced = -1;                  // the file the previous input replaced, restored before the next
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gparity::fuzz::copy_to_scratch(".metadata", gparity::fuzz::source_file("tests/data/dcp/grid/.metadata"));
  for (int i = 0; i < 4; ++i) {
    const auto path = gparity::fuzz::copy_to_scratch(
        kFiles[i], gparity::fuzz::source_file(std::string("tests/data/dcp/grid/") + kFiles[i]));
    std::ifstream in(path, std::ios::binary);
    g_real[i].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 4;
  if (g_replaced >= 0 && g_replaced != which)
    gparity::fuzz::write_scratch(kFiles[g_replaced], g_real[g_replaced]);
  gparity::fuzz::write_scratch(kFiles[which], std::span(data + 1, size - 1));
  g_replaced = which;
  unsigned sum = 0;
  try {
    const gparity::model::DcpCheckpoint ckpt(gparity::fuzz::scratch_dir());
    gparity::model::DcpChunkBuffer buffer;
    for (const auto& e : ckpt.metadata().entries) {
      for (const auto& c : e.chunks) {
        if (!c.where || c.where->file != kFiles[which]) continue;
        for (const auto crc : {gparity::model::CrcCheck::now, gparity::model::CrcCheck::by_caller}) {
          try {
            const auto v = ckpt.load(e, c, buffer, crc);
            sum += gparity::fuzz::touch_view(v);
            if (v.unchecked_crc32) {
              gparity::model::check_storage_crc32(gparity::model::zip_crc32(0, v.storage), *v.unchecked_crc32,
                                                  v.crc_where);
            }
          } catch (const gparity::model::InputError&) {
          }
        }
      }
    }
  } catch (const gparity::model::InputError&) {
  }
  (void)sum;
  return 0;
}
