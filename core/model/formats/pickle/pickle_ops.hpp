#pragma once
// Pickle opcode lexer: splits a pickle (protocols 0 to 5, as Python's Lib/pickletools.py lists
// them) into opcodes with their decoded in-line arguments and byte offsets. It only reads bytes:
// nothing is looked up, imported or called. Truncated or malformed arguments are InputErrors
// naming the source and the byte offset.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gparity::model::pickle {

/// What an opcode's in-line argument decodes to.
enum class ArgKind : std::uint8_t { None, Int, Float, Text, Bytes, TwoLines, BigInt, Bool };

struct Op {
  char code = 0;           // the opcode byte
  std::size_t offset = 0;  // of the opcode byte
  ArgKind kind = ArgKind::None;
  std::int64_t i = 0;  // Int, Bool
  double f = 0;        // Float
  std::string text;    // Text (decoded), Bytes (raw), TwoLines (first line), BigInt (decimal)
  std::string text2;   // TwoLines: the second line (GLOBAL/INST name)
};

/// Reads opcodes one by one from `bytes`.
class OpReader {
 public:
  OpReader(std::span<const std::byte> bytes, std::string source)
      : bytes_(bytes), source_(std::move(source)) {}

  /// The next opcode; throws InputError at the end of input or on malformed arguments.
  Op next();
  [[nodiscard]] std::size_t offset() const noexcept { return pos_; }
  [[nodiscard]] bool at_end() const noexcept { return pos_ >= bytes_.size(); }
  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  /// Throws InputError "<source>: byte <offset>: <problem>".
  [[noreturn]] void fail(std::size_t offset, const std::string& problem) const;

 private:
  std::string_view take(std::size_t n, std::size_t op_offset, const char* what);
  std::uint64_t le(std::size_t n, std::size_t op_offset, const char* what);
  std::string_view line(std::size_t op_offset, const char* what);

  std::span<const std::byte> bytes_;
  std::string source_;
  std::size_t pos_ = 0;
};

/// Printable name of an opcode byte ("BINUNICODE", ...), or "" when it is not an opcode.
std::string_view op_name(char code) noexcept;

}  // namespace gparity::model::pickle
