#pragma once
// Scratch files for fuzz targets whose readers open paths (safetensors, DCP folders, TensorBoard
// event files, .pt2 archives, trace files): one private folder per process, created on first use
// and removed at exit, so parallel fuzzers (-jobs, -fork) never share a file.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gparity::fuzz {

/// The process's scratch folder (created on first call, removed with its contents at exit).
const std::string& scratch_dir();

/// Writes `bytes` to scratch_dir()/`name` (replacing it) and returns the path. Aborts when the
/// file cannot be written: a fuzzer that silently read nothing would prove nothing.
std::string write_scratch(std::string_view name, std::span<const std::uint8_t> bytes);

/// A file of the source tree: $GPARITY_SOURCE_DIR/`relative` when that is set (a copy of the
/// tree elsewhere), else under the tree the fuzzers were built from.
std::string source_file(std::string_view relative);

/// Copies the file at `from` to scratch_dir()/`name` (a fixed companion such as a checkpoint's
/// real data files); aborts when it cannot.
std::string copy_to_scratch(std::string_view name, const std::string& from);

}  // namespace gparity::fuzz
