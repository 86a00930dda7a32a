#include "core/model/ops/op_run.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "core/model/base/input_error.hpp"
#include "core/model/ops/debugmode.hpp"
#include "core/model/ops/op_records.hpp"

namespace gparity::model::ops {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".debug.txt";

bool has_suffix(const std::string& name) {
  return name.size() >= kSuffix.size() &&
         name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

/// The number after `word` (optionally after '_' or '-') at a word start in `s`, or -1.
std::int64_t number_after(const std::string& s, const std::string& word) {
  for (std::size_t at = s.find(word); at != std::string::npos; at = s.find(word, at + 1)) {
    if (at > 0 && std::isalnum(static_cast<unsigned char>(s[at - 1]))) continue;
    std::size_t i = at + word.size();
    if (i < s.size() && (s[i] == '_' || s[i] == '-')) ++i;
    const std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 9) ++i;
    if (i > start) return std::stoll(s.substr(start, i - start));
  }
  return -1;
}

std::string head_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string buf(4096, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<std::size_t>(in.gcount()));
  return buf;
}

/// A trace directory of op records (python/gparity record_ops): one rank-<r>.jsonl per rank,
/// every step in it.
OpRun open_op_record_run(const std::string& path) {
  OpRun run;
  run.path = path;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || name.rfind("rank-", 0) != 0 || !name.ends_with(".jsonl")) continue;
    const std::string digits = name.substr(5, name.size() - 5 - 6);
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
      continue;
    run.files.push_back({std::stoi(digits), 0, e.path().string()});
  }
  if (ec) throw InputError(path, "cannot list the folder: " + ec.message());
  if (run.files.empty()) throw InputError(path, "a trace directory without rank-<r>.jsonl files");
  std::sort(run.files.begin(), run.files.end(),
            [](const OpRunFile& a, const OpRunFile& b) { return a.rank < b.rank; });
  return run;
}

}  // namespace

std::vector<int> OpRun::ranks() const {
  std::vector<int> out;
  for (const auto& f : files) {
    if (out.empty() || out.back() != f.rank) out.push_back(f.rank);
  }
  return out;
}

std::vector<const OpRunFile*> OpRun::files_of(int rank) const {
  std::vector<const OpRunFile*> out;
  for (const auto& f : files) {
    if (f.rank == rank) out.push_back(&f);
  }
  return out;
}

bool parse_op_log_name(const std::string& file_name, int& rank, std::int64_t& step) {
  const std::int64_t r = number_after(file_name, "rank");
  if (r < 0) return false;
  rank = static_cast<int>(r);
  const std::int64_t s = number_after(file_name, "step");
  step = s > 0 ? s : 0;
  return true;
}

bool is_op_log_path(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec) return false;
  if (fs::is_directory(st)) {
    if (is_op_record_run(path)) return true;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file(ec) && has_suffix(e.path().filename().string())) return true;
    }
    return false;
  }
  if (!fs::is_regular_file(st)) return false;
  if (has_suffix(fs::path(path).filename().string())) return true;
  return looks_like_debugmode(head_of(path));
}

OpRun open_op_run(const std::string& path) {
  OpRun run;
  run.path = path;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path, "no such file or folder");
  if (fs::is_regular_file(st)) {
    OpRunFile f{0, 0, path};
    int rank = 0;
    std::int64_t step = 0;
    if (parse_op_log_name(fs::path(path).filename().string(), rank, step)) {
      f.rank = rank;
      f.step = step;
    }
    run.files.push_back(std::move(f));
    return run;
  }
  if (!fs::is_directory(st)) throw InputError(path, "neither a file nor a folder");
  if (is_op_record_run(path)) return open_op_record_run(path);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && has_suffix(name)) names.push_back(name);
  }
  if (ec) throw InputError(path, "cannot list the folder: " + ec.message());
  std::sort(names.begin(), names.end());
  if (names.empty()) throw InputError(path, "no DebugMode logs (*.debug.txt) in this folder");
  std::map<std::pair<int, std::int64_t>, std::string> seen;
  for (const auto& name : names) {
    const std::string file = (fs::path(path) / name).string();
    int rank = 0;
    std::int64_t step = 0;
    if (!parse_op_log_name(name, rank, step)) {
      if (names.size() > 1)
        throw InputError(file, "cannot tell the rank from the name (expected rank<r>_step<s>.debug.txt)");
    }
    const auto key = std::make_pair(rank, step);
    if (const auto it = seen.find(key); it != seen.end())
      throw InputError(file, "rank " + std::to_string(rank) + (step ? " step " + std::to_string(step) : "") +
                                 " is also in " + it->second);
    seen.emplace(key, file);
    run.files.push_back({rank, step, file});
  }
  std::sort(run.files.begin(), run.files.end(), [](const OpRunFile& a, const OpRunFile& b) {
    return std::tie(a.rank, a.step) < std::tie(b.rank, b.step);
  });
  for (const int r : run.ranks()) {
    const auto files = run.files_of(r);
    if (files.size() > 1 && files.front()->step == 0)
      throw InputError(files.front()->path, "holds every step of rank " + std::to_string(r) +
                                                ", but the folder also has per-step files of that rank (" +
                                                files[1]->path + ")");
  }
  return run;
}

OpLog read_op_run_file(const OpRunFile& file) {
  if (file.path.ends_with(".jsonl")) return read_op_records(file.path, file.rank);
  return read_debugmode_log(file.path, file.rank, file.step);
}

}  // namespace gparity::model::ops
