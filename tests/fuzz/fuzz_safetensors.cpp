// libFuzzer target: safetensors files (8-byte header length, JSON header, tensor bytes), read by
// path as every command does. Any input must give tensors or raise InputError; every tensor's
// byte range must lie inside the data section the input itself has (checked here independently
// of the reader, since a mapped file is not watched by ASan), and reading it must not crash.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/safetensors.hpp"
#include "tests/fuzz/fuzz_files.hpp"

namespace {

std::uint64_t le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)gparity::model::looks_like_safetensors(std::span(reinterpret_cast<const std::byte*>(data), size));
  const auto path = gparity::fuzz::write_scratch("fuzz.safetensors", std::span(data, size));
  try {
    const gparity::model::SafetensorsFile file(path);
    if (size < 8) broken("accepted a file shorter than its header length");
    const std::uint64_t header = le64(data);
    if (header > size - 8) broken("accepted a header longer than the file");
    const std::uint64_t data_size = size - 8 - header;
    unsigned sum = 0;
    for (const auto& t : file.tensors()) {
      if (t.data_begin > t.data_end || t.data_end > data_size) broken("tensor outside the data section");
      const auto bytes = file.bytes(t);
      if (bytes.size() != t.data_end - t.data_begin) broken("tensor bytes differ from its offsets");
      if (!bytes.empty()) sum += static_cast<unsigned>(bytes.front()) + static_cast<unsigned>(bytes.back());
    }
    (void)sum;
  } catch (const gparity::model::InputError&) {
  }
  return 0;
}
