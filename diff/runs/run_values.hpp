#pragma once
// Values of a run as `gparity compare` names and prints them (internal to diff/runs): scalars and
// step lists as text, the category of a hash array ("param.*" -> weights, ...) and which steps of
// a rank fall inside the step window. Shared by the engine's parts; not for other components.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "diff/report/ranges_text.hpp"
#include "diff/runs/run_compare.hpp"

namespace gparity::diff::runs {

/// Nine significant digits.
std::string fmt_double(double v);
/// The bit pattern in the scalar's own width: "0x3f800000".
std::string bits_text(const model::TraceScalar& s);
/// {"bits", "dtype", "value"} (non-finite values as text).
nlohmann::json scalar_json(const model::TraceScalar& s);
/// Steps as sorted ranges: "1-3,7".
std::string step_ranges(const std::vector<std::int64_t>& steps);

enum class Category : std::uint8_t { Weights, Grads, Optimizer, Other };
Category category_of(std::string_view array);
const char* category_name(Category c);
/// Whether the options compare arrays of this category.
bool category_enabled(Category c, const CompareOptions& o);

/// Step number -> index in t.steps, inside the window; a step written twice: the later one.
std::map<std::int64_t, std::size_t> step_index(const model::RankTrace& t, const CompareOptions& o);

}  // namespace gparity::diff::runs
