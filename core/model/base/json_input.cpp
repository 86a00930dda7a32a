#include "core/model/base/json_input.hpp"

#include <algorithm>

#include "core/model/base/input_error.hpp"

namespace gparity::model {
namespace {

struct DepthExceeded {
  std::size_t position;
};

template <typename Json>
Json parse_impl(std::string_view text, const std::string& source, std::int64_t first_line, int max_depth) {
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
