#pragma once
// The pickle virtual machine, restricted to building a value tree: it runs the opcode stream
// (pickle_ops) over a stack, a mark stack and a memo, and never imports, looks up or calls
// anything. Caps on input size, values, memo entries and stack depth keep hostile input bounded;
// every problem is an InputError naming the source and the byte offset.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/model/formats/pickle/pickle_value.hpp"

namespace gparity::model::pickle {

struct Limits {
  std::size_t max_bytes = std::size_t{1} << 30;
  std::size_t max_values = std::size_t{1} << 25;     // arena entries
  std::size_t max_memo = std::size_t{1} << 24;       // memo entries (and largest memo index + 1)
  std::size_t max_stack = std::size_t{1} << 20;      // stack plus mark-stack entries
  std::size_t max_container = std::size_t{1} << 26;  // items in one container
};

/// Decodes one pickle (up to its STOP; trailing bytes are ignored, as pickle.load does).
Document decode(std::span<const std::byte> bytes, const std::string& source, const Limits& limits = {});

}  // namespace gparity::model::pickle
