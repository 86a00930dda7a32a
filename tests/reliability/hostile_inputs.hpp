#pragma once
// The hostile inputs of docs/reliability.md, each built at test time in the row's own folder: a
// builder writes the files and returns one variant or several (a log cut at each record boundary
// is one variant per cut), each a set of {placeholders} for the row's command and expectations,
// and the limits the child runs under (a file size limit, a read-only mount). Nothing here is
// checked in: the bytes come from the bundled samples and tests/data, or are written out here.
// The builders live under hostile/, a file per input format (hostile/formats.hpp).

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/reliability/child_process.hpp"

namespace gparity::testing {

struct Variant {
  std::string label;                        // which one, for failure messages ("cut after line 3")
  std::map<std::string, std::string> vars;  // placeholder name (without braces) -> text
  ChildLimits limits;
};

struct HostileInput {
  std::string key;   // the doc's `input`
  std::string kind;  // one of hostile_kinds()
  std::function<std::vector<Variant>(const std::filesystem::path& dir)> build;
};

/// Every input the doc may name.
const std::vector<HostileInput>& hostile_inputs();

/// The kinds of hostile input issue 26 lists; each must have a row.
const std::vector<std::string>& hostile_kinds();

/// The placeholders every row has: {tmp} (its folder), {out} (a path in it, not created), the
/// bundled runs {eager}, {eager_repeat}, {compile}, {samples} and {data} (tests/data).
std::map<std::string, std::string> standard_vars(const std::filesystem::path& dir);

}  // namespace gparity::testing
