#include "core/model/base/json_input.hpp"

#include <algorithm>

#include "core/model/base/input_error.hpp"

namespace gparity::model {
namespace {

struct DepthExceeded {
  std::size_t position;
};

bool is_word_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

template <typename Json>
Json parse_impl(std::string_view text, const std::string& source, std::int64_t first_line, int max_depth,
                bool retry_nonfinite = true) {
  // The callback sees each value's depth before it is built; throwing aborts at once, so a
  // hostile document costs at most max_depth levels.
  try {
    return Json::parse(
        text.begin(), text.end(), [max_depth](int depth, typename Json::parse_event_t event, Json&) {
          if (depth > max_depth &&
              (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start)) {
            throw DepthExceeded{0};
          }
          return true;
        });
  } catch (const DepthExceeded&) {
    throw InputError(source, first_line, "JSON nested deeper than " + std::to_string(max_depth) + " levels");
  } catch (const nlohmann::json::parse_error& e) {
    // Only here, on the slow path: documents without Python's non-finite words cost nothing.
    if (retry_nonfinite) {
      if (auto fixed = python_nonfinite_as_null(text))
        return parse_impl<Json>(*fixed, source, first_line, max_depth, false);
    }
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at ...".
    if (const auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    throw InputError(source, first_line + line_of_offset(text, std::min(at, text.size())) - 1,
                     "invalid JSON: " + what);
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but still bad input: a number too large for a double ("1e999999")
    // throws out_of_range.406 (found by the fuzzers; docs/fuzzing.md).
    std::string what = e.what();
    if (const auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw InputError(source, first_line, "invalid JSON: " + what);
  }
}

}  // namespace

std::optional<std::string> python_nonfinite_as_null(std::string_view text) {
  std::string out;
  std::size_t copied = 0;  // text[copied, i) still to be appended to out
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != 'N' && c != 'I' && c != '-') continue;
    if (i > 0 && is_word_char(text[i - 1])) continue;
    std::size_t len = 0;
    for (const std::string_view word : {"NaN", "Infinity", "-Infinity"}) {
      if (text.substr(i, word.size()) == word &&
          (i + word.size() == text.size() || !is_word_char(text[i + word.size()]))) {
        len = word.size();
      }
    }
    if (len == 0) continue;
    out.append(text.substr(copied, i - copied));
    out += "null";
    copied = i + len;
    i += len - 1;
  }
  if (copied == 0) return std::nullopt;
  out.append(text.substr(copied));
  return out;
}

std::int64_t line_of_offset(std::string_view text, std::size_t offset) noexcept {
  offset = std::min(offset, text.size());
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
}

nlohmann::json parse_json(std::string_view text, const std::string& source, std::int64_t first_line,
                          int max_depth) {
  return parse_impl<nlohmann::json>(text, source, first_line, max_depth);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& source,
                                          std::int64_t first_line, int max_depth) {
  return parse_impl<nlohmann::ordered_json>(text, source, first_line, max_depth);
}

}  // namespace gparity::model
