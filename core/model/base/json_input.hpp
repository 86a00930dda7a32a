#pragma once
// Parsing untrusted JSON: a depth cap (hostile nesting never exhausts the stack or memory),
// Python's NaN / Infinity read as null, and errors as InputError with the source, the 1-based line
// and what is wrong.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gparity::model {

inline constexpr int kMaxJsonDepth = 256;

/// Parses a whole JSON document. `first_line` is the line of text[0] in the source, for
/// documents embedded in a larger file (one JSONL line, one TORCH_TRACE envelope).
nlohmann::json parse_json(std::string_view text, const std::string& source, std::int64_t first_line = 1,
                          int max_depth = kMaxJsonDepth);

/// As parse_json, keeping object keys in document order.
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& source,
                                          std::int64_t first_line = 1, int max_depth = kMaxJsonDepth);

/// Python's json module writes NaN, Infinity and -Infinity for non-finite floats (a diverging
/// run's loss), which JSON does not have. A copy of `text` with each such word outside strings
/// replaced by null, or nullopt when there is none. parse_json falls back to it when a document
/// does not parse, so those values read as null: gparity's own convention for a non-finite value,
/// whose bit-pattern field (where the format has one) says which it was.
std::optional<std::string> python_nonfinite_as_null(std::string_view text);

/// The integer `j` holds when it is a JSON integer that T can represent, else nullopt. Use it
/// instead of get<T>() on untrusted input: nlohmann's get<T>() static_casts whatever number it
/// finds, so a float out of T's range (1e88 as an int64) is undefined behaviour and 1.5 or 2^63
/// silently become other numbers (found by fuzz_trace_jsonl).
template <typename T, typename Json>
std::optional<T> json_integer(const Json& j) {
  if (j.is_number_unsigned()) {
    const auto v = j.template get<std::uint64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  } else if (j.is_number_integer()) {
    const auto v = j.template get<std::int64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  }
  return std::nullopt;
}

/// 1-based line of byte `offset` in text (counting '\n').
std::int64_t line_of_offset(std::string_view text, std::size_t offset) noexcept;

}  // namespace gparity::model
