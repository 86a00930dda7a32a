#pragma once
// What a file or folder holds, told by a cheap look at its content (at most the first 64 KiB),
// never by its name: the one place where commands ask before they pick a reader, so an input no
// reader claims is refused naming the formats tried instead of being read by a fallback reader
// as something it is not. The tests:
//  - pickle: the PROTO opcode 0x80 and a protocol byte 2..5;
//  - zip (torch.export .pt2, torch.save archives): a local file header "PK\x03\x04";
//  - safetensors: an 8-byte little-endian header length that fits in the file, then '{';
//  - TensorBoard event file: TFRecord framing, a uint64 length followed by its masked CRC-32C;
//  - TORCH_TRACE log: a glog-prefixed envelope on the first non-blank line;
//  - JSON: '{' first, then by the format's keys: a Flight Recorder dump ("entries",
//    "pg_config" or "comm_lib_version"), a gparity graph ("format": "gparity.graph"); JSON lines
//    when the first line is a whole JSON object and more lines follow. A '{' that does not parse
//    is still JSON: the JSON readers name its damage by line and column;
//  - text (UTF-8, no NUL: FX print_readable text, console logs), else binary data;
//  - a folder: a DCP checkpoint when its .metadata is a pickle (.distcp files beside it), else
//    a plain folder (whose files the command looks through).
// Never throws: a path that cannot be read is Format::Missing or Unreadable with the OS reason.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/base/input_error.hpp"

namespace gparity::model {

enum class Format : std::uint8_t {
  Missing,     // no such file or folder (or a symlink loop)
  Unreadable,  // exists but cannot be opened or read
  Folder,
  DcpCheckpoint,
  Empty,  // a file of 0 bytes
  Pickle,
  Zip,
  Safetensors,
  TensorBoard,
  TorchTrace,
  FlightRecorderJson,
  GraphJson,
  Json,       // another JSON object
  JsonLines,  // one JSON object a line (gparity traces, reference rank<r>.jsonl)
  Text,
  Binary,
};

/// "pickle", "zip archive", "TORCH_TRACE log", "Flight Recorder JSON dump", "empty file", ...
std::string_view format_name(Format f) noexcept;

struct FormatDetection {
  Format format = Format::Binary;
  /// What was seen, for messages: "0 bytes", "pickle protocol 4", "JSON object with keys
  /// \"hello\"", "TFRecord length 24 with a matching masked CRC-32C".
  std::string reason;
  /// "TORCH_TRACE log (glog envelope on line 1)": the name and the reason together.
  [[nodiscard]] std::string describe() const;
};

FormatDetection detect_format(const std::string& path);

/// The error for an input no reader of a command claims: "<path>: <what it is> (<reason>); formats
/// tried: <tried, comma-separated>".
InputError unrecognized_input(const std::string& path, const FormatDetection& d,
                              std::span<const std::string_view> tried);
inline InputError unrecognized_input(const std::string& path, const FormatDetection& d,
                                     std::initializer_list<std::string_view> tried) {
  return unrecognized_input(path, d, std::span(tried.begin(), tried.size()));
}

/// "A, B, C": the formats a command tried, for messages.
std::string formats_text(std::span<const std::string_view> tried);

}  // namespace gparity::model
