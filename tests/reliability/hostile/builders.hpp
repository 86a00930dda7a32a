#pragma once
// What the hostile inputs of every format (formats.hpp) are built from: the source tree's
// bundled runs and test data, files written and cut at line boundaries, deep JSON, 100 MB lines
// made once per process, pickles that call os.system / eval / Popen or claim 2^40 bytes, and the
// TORCH_TRACE logs and FX text of tests/data. Nothing is checked in: the bytes are written here.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/reliability/hostile_inputs.hpp"

namespace gparity::testing::hostile {

namespace fs = std::filesystem;
using Vars = std::map<std::string, std::string>;

inline const fs::path kSource = GPARITY_SOURCE_DIR;
inline const fs::path kData = kSource / "tests" / "data";
inline const fs::path kRuns = kSource / "samples" / "runs";
inline constexpr std::size_t kMillion = 1000000;

/// Adds an input to the list: add(key, kind, build), as the doc's table names them.
struct InputAdder {
  std::vector<HostileInput>& inputs;
  template <typename Build>
  void operator()(std::string key, std::string kind, Build build) const {
    inputs.push_back({std::move(key), std::move(kind), std::move(build)});
  }
};

// ---- files ----------------------------------------------------------------------------------

std::string read_file(const fs::path& p);
/// Writes `bytes` (parent folders made); the path written.
std::string write_file(const fs::path& p, std::string_view bytes);
std::string copy_dir(const fs::path& from, const fs::path& to);
std::vector<std::string> lines_of(const std::string& text);
std::string join_lines(const std::vector<std::string>& lines);
/// `v` as `n` little-endian bytes.
std::string le_bytes(std::uint64_t v, int n);
std::string deep_json(std::size_t depth);
/// Cut points: `count` of `points`, spread evenly (all of them when there are fewer).
std::vector<std::size_t> spread(const std::vector<std::size_t>& points, std::size_t count);
/// Offsets of each line start after the first (cuts that keep whole lines).
std::vector<std::size_t> line_boundaries(const std::string& text);
/// A single variant.
Variant one(Vars vars, std::string label = "");
/// One variant per cut ("cut at byte N"): `text` up to the cut, written as `d`/cut<N>/`name`,
/// {in} naming it. A cut at 0 is skipped (an empty file is the empty-file row).
std::vector<Variant> file_cuts(const fs::path& d, const std::string& name, const std::string& text,
                               const std::vector<std::size_t>& cuts);

// ---- 100 MB lines, made once per process ----------------------------------------------------

const fs::path& shared_dir();
std::string hundred_mb_of(char c);

// ---- pickles --------------------------------------------------------------------------------

/// BINUNICODE of `s`.
std::string bin_unicode(std::string_view s);
/// An entry that calls `callable` (module.name) with a command, as pickle.loads would.
std::string reduce_call(const std::string& module, const std::string& name, const std::string& marker,
                        bool stack_global);
struct Callable {
  std::string module, name;
  bool stack_global;
};
/// os.system (GLOBAL and STACK_GLOBAL), builtins.eval, subprocess.Popen.
extern const std::vector<Callable> kCallables;
/// A pickle length claim of 2^40 bytes with 3 behind it (BINUNICODE8).
std::string length_claim();

// ---- TORCH_TRACE and FX text of tests/data ----------------------------------------------------

inline const fs::path kCompile = kData / "graph" / "compile";
inline const std::string kLog0 = "dedicated_log_torch_trace_rank_0_vp85oaze.log";
inline const std::string kLog1 = "dedicated_log_torch_trace_rank_1_w98tottg.log";

/// A GraphModule's print_readable text around `body` (which assigns y).
std::string fx_module(const std::string& body);

}  // namespace gparity::testing::hostile
