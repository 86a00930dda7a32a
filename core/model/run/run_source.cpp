#include "core/model/run/run_source.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/format_detect.hpp"
#include "core/model/formats/import_samples.hpp"
#include "core/model/formats/import_tensorboard.hpp"
#include "core/model/formats/import_titan.hpp"
#include "core/model/run/trace_writer.hpp"

namespace gparity::model {
namespace fs = std::filesystem;
namespace {

/// "<prefix><digits>.jsonl" -> rank, or -1.
int rank_of_file(const std::string& name, std::string_view prefix) {
  if (!name.starts_with(prefix) || !name.ends_with(".jsonl")) return -1;
  const auto digits = std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - 6);
  int r = -1;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
  // Digits only: from_chars would take "-0" (of "rank-0.jsonl", a trace file) as rank 0.
  if (digits.empty() || digits.front() < '0' || digits.front() > '9' || ec != std::errc() ||
      p != digits.data() + digits.size() || r < 0)
    return -1;
  return r;
}

/// Two entries of one folder that claim the same rank: which one is meant cannot be guessed.
[[noreturn]] void duplicate_rank(const fs::path& dir, int rank, const std::string& a, const std::string& b) {
  throw InputError(dir.string(), "rank " + std::to_string(rank) + " is in two places: " + std::min(a, b) +
                                     " and " + std::max(a, b) + " (keep one)");
}

/// Files named "<prefix><r>.jsonl", by rank. Chosen by name only: an entry that is not a readable
/// file (a dangling or looping link, a folder) is still listed, so that reading it names the
/// problem instead of the rank going silently missing.
std::map<int, std::string> rank_files(const fs::path& dir, std::string_view prefix) {
  std::map<int, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const int r = rank_of_file(e.path().filename().string(), prefix);
    if (r < 0) continue;
    if (const auto [it, added] = out.emplace(r, e.path().string()); !added)
      duplicate_rank(dir, r, it->second, e.path().string());
  }
  if (ec) throw InputError(dir.string(), "cannot list the folder: " + ec.message());
  return out;
}

RunManifest synthetic_manifest(const std::string& path, int world_size) {
  RunManifest m;
  m.run_id = path;
  m.world_size = world_size;
  m.mesh_shape = {world_size};
  m.mesh_dim_names = {"world"};
  for (int r = 0; r < world_size; ++r) m.ranks.push_back({r, r, "", ""});
  return m;
}

RunSource open_samples_dir(const std::string& dir, const std::map<int, std::string>& files) {
  RunSource run;
  run.path = dir;
  run.format = RunFormat::SampleJsonl;
  const int world = files.rbegin()->first + 1;
  run.manifest = synthetic_manifest(dir, world);
  for (int r = 0; r < world; ++r) {
    const auto it = files.find(r);
    if (it == files.end()) {
      const auto expected = (fs::path(dir) / ("rank" + std::to_string(r) + ".jsonl")).string();
      run.ranks.push_back({r, expected, false});
      run.issues.push_back(
          {TraceIssue::Kind::MissingFile, expected, 0,
           "rank " + std::to_string(r) + " file is missing (rank " + std::to_string(world - 1) + " exists)"});
    } else {
      run.ranks.push_back({r, it->second, true});
    }
  }
  run.load = [](const RankEntry& e) { return import_sample_rank(e.path, e.rank); };
  return run;
}

RunSource open_titan_log(const std::string& path) {
  auto traces = std::make_shared<std::vector<RankTrace>>(import_titan_log(path));
  RunSource run;
  run.path = path;
  run.format = RunFormat::TitanLog;
  run.rounded = true;
  const int world = traces->empty() ? 1 : traces->back().rank + 1;
  run.manifest = synthetic_manifest(path, world);
  for (const auto& t : *traces) run.ranks.push_back({t.rank, path, true});
  if (traces->empty()) {
    run.issues.push_back({TraceIssue::Kind::CorruptLine, path, 0, "no \"step: N  loss: X\" lines found"});
  }
  run.load = [traces](const RankEntry& e) {
    for (const auto& t : *traces) {
      if (t.rank == e.rank) return t;
    }
    return RankTrace{};
  };
  return run;
}

/// Event files directly inside `dir`, sorted by name (their names start with the creation time).
std::vector<std::string> event_files(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (is_tensorboard_event_file(e.path().filename().string())) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// "rank_<r>", "rank-<r>" or "rank<r>" -> r, or -1.
int rank_of_dir(std::string_view name) {
  if (!name.starts_with("rank")) return -1;
  name.remove_prefix(4);
  if (name.starts_with("_") || name.starts_with("-")) name.remove_prefix(1);
  int r = -1;
  const auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), r);
  if (name.empty() || name.front() < '0' || name.front() > '9' || ec != std::errc() ||
      p != name.data() + name.size() || r < 0)
    return -1;
  return r;
}

/// A TensorBoard run: event files directly in `dir` (one rank, rank 0), or per-rank subfolders
/// rank_<r>/ of event files (torchtitan's save_for_all_ranks). Empty map: neither.
std::map<int, std::vector<std::string>> tensorboard_ranks(const fs::path& dir) {
  std::map<int, std::vector<std::string>> out;
  if (auto files = event_files(dir); !files.empty()) {
    out[0] = std::move(files);
    return out;
  }
  std::error_code ec;
  std::map<int, std::string> folders;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const int r = rank_of_dir(e.path().filename().string());
    if (r < 0 || path_kind(e.path()) != PathKind::Directory) continue;
    auto files = event_files(e.path());
    if (files.empty()) continue;
    if (const auto [it, added] = folders.emplace(r, e.path().string()); !added)
      duplicate_rank(dir, r, it->second, e.path().string());
    out[r] = std::move(files);
  }
  return out;
}

RunSource open_tensorboard(const std::string& path, std::map<int, std::vector<std::string>> files) {
  RunSource run;
  run.path = path;
  run.format = RunFormat::TensorBoard;
  const int world = files.rbegin()->first + 1;
  run.manifest = synthetic_manifest(path, world);
  auto shared = std::make_shared<std::map<int, std::vector<std::string>>>(std::move(files));
  for (int r = 0; r < world; ++r) {
    if (shared->contains(r)) {
      run.ranks.push_back({r, shared->at(r).front(), true});
    } else {
      const auto expected = (fs::path(path) / ("rank_" + std::to_string(r))).string();
      run.ranks.push_back({r, expected, false});
      run.issues.push_back(
          {TraceIssue::Kind::MissingFile, expected, 0,
           "rank " + std::to_string(r) + " has no event files (rank " + std::to_string(world - 1) + " has)"});
    }
  }
  run.load = [shared](const RankEntry& e) { return import_tensorboard_rank(shared->at(e.rank), e.rank); };
  return run;
}

}  // namespace

std::string_view run_format_name(RunFormat f) noexcept {
  switch (f) {
    case RunFormat::Trace: return "gparity trace v1";
    case RunFormat::SampleJsonl: return "reference rank<r>.jsonl";
    case RunFormat::TitanLog: return "torchtitan console log";
    case RunFormat::TensorBoard: return "TensorBoard event files";
  }
  return "unknown";
}

RunSource open_trace_dir(const std::string& dir) {
  const auto mpath = manifest_path(dir).string();
  const MappedFile mfile(mpath);
  RunSource run;
  run.path = dir;
  run.format = RunFormat::Trace;
  run.manifest = manifest_from_json(parse_json(mfile.text(), mpath), mpath);
  const auto files = rank_files(dir, "rank-");
  for (int r = 0; r < run.manifest.world_size; ++r) {
    const auto expected = rank_trace_path(dir, r).string();
    const bool present = files.contains(r);
    run.ranks.push_back({r, expected, present});
    if (!present) {
      run.issues.push_back({TraceIssue::Kind::MissingFile, expected, 0,
                            "rank " + std::to_string(r) + " file is missing (manifest world_size " +
                                std::to_string(run.manifest.world_size) + ")"});
    }
  }
  for (const auto& [r, p] : files) {
    if (r >= run.manifest.world_size) {
      run.issues.push_back({TraceIssue::Kind::Note, p, 0,
                            "rank file beyond the manifest's world_size " +
                                std::to_string(run.manifest.world_size) + ", ignored"});
    }
  }
  run.load = [](const RankEntry& e) { return read_rank_trace(e.path, e.rank); };
  return run;
}

RunSource open_run(const std::string& path) {
  const fs::path p(path);
  const PathKind kind = path_kind(p);
  if (kind == PathKind::Directory) {
    if (path_kind(manifest_path(p)) != PathKind::Missing) return open_trace_dir(path);
    const auto samples = rank_files(p, "rank");
    if (!samples.empty()) return open_samples_dir(path, samples);
    if (!rank_files(p, "rank-").empty()) throw InputError(path, "rank-<r>.jsonl files but no manifest.json");
    if (auto tb = tensorboard_ranks(p); !tb.empty()) return open_tensorboard(path, std::move(tb));
    throw InputError(path,
                     "not a run directory: no manifest.json, no rank<r>.jsonl files and no TensorBoard event "
                     "files (events.out.tfevents.*, directly or in rank_<r>/ folders)");
  }
  if (kind == PathKind::Missing) throw InputError(path, "no such file or directory");
  const auto d = detect_format(path);
  if (d.format == Format::Missing) throw InputError(path, d.reason);
  const auto name = p.filename().string();
  // An event file by name is the TensorBoard reader's (it reports damage and truncation itself);
  // by content whatever its name. Event file names end in the writer's host name, which may look
  // like a log suffix: first.
  if (is_tensorboard_event_file(name) || d.format == Format::TensorBoard)
    return open_tensorboard(path, {{0, {path}}});
  const bool log_name = name.ends_with(".log") || name.ends_with(".txt") || name.ends_with(".out");
  if (log_name && d.format == Format::Text) return open_titan_log(path);
  if (d.format == Format::TorchTrace)
    throw InputError(path,
                     "a TORCH_TRACE log holds compiled graphs, not a training run: see `gparity graph "
                     "ranks` and `gparity collectives`");
  const std::string what = !log_name && d.format == Format::Text
                               ? "text, but not named as a console log (.log, .txt, .out)"
                               : d.describe();
  throw InputError(path, "not a run: " + what + "; formats tried: " + formats_text(kRunFormats));
}

}  // namespace gparity::model
