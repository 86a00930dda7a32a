// libFuzzer target: a DCP checkpoint folder whose `.metadata` is the input, beside the real data
// files of tests/data/dcp/grid (four ranks' .distcp). The folder must open or raise InputError,
// and every tensor chunk must load (both CRC modes) or raise InputError: byte ranges, sizes and
// dtypes the metadata claims are checked against the data files before anything is read.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/dcp_checkpoint.hpp"
#include "tests/fuzz/fuzz_dcp_view.hpp"
#include "tests/fuzz/fuzz_files.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* f : {"__0_0.distcp", "__1_0.distcp", "__2_0.distcp", "__3_0.distcp"})
    gparity::fuzz::copy_to_scratch(f, gparity::fuzz::source_file(std::string("tests/data/dcp/grid/") + f));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gparity::fuzz::write_scratch(".metadata", std::span(data, size));
  unsigned sum = 0;
  try {
    const gparity::model::DcpCheckpoint ckpt(gparity::fuzz::scratch_dir());
    (void)ckpt.files();
    gparity::model::DcpChunkBuffer buffer;
    for (const auto& e : ckpt.metadata().entries) {
      for (const auto& c : e.chunks) {
        for (const auto crc : {gparity::model::CrcCheck::now, gparity::model::CrcCheck::by_caller}) {
          try {
            sum += gparity::fuzz::touch_view(ckpt.load(e, c, buffer, crc));
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
