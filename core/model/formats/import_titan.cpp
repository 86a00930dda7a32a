#include "core/model/formats/import_titan.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "core/model/base/mapped_file.hpp"

namespace gparity::model {
namespace {

/// Finds "<key>:" as a whole word and parses the number after it (spaces allowed).
bool number_after(std::string_view line, std::string_view key, std::string_view& text_out) {
  std::size_t at = 0;
  while ((at = line.find(key, at)) != std::string_view::npos) {
    const bool word_start = at == 0 || line[at - 1] == ' ' || line[at - 1] == '-' || line[at - 1] == ']';
    const std::size_t colon = at + key.size();
    if (word_start && colon < line.size() && line[colon] == ':') {
      std::size_t i = colon + 1;
      while (i < line.size() && line[i] == ' ') ++i;
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != ',') ++j;
      text_out = line.substr(i, j - i);
      return !text_out.empty();
    }
    at = colon;
  }
  return false;
}

bool parse_double(std::string_view text, double& out) {
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc() && p == text.data() + text.size()) return true;
  if (text == "nan" || text == "NaN") {
    out = std::nan("");
    return true;
  }
  return false;
}

}  // namespace

std::string strip_ansi(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < text.size() && !(text[j] >= 0x40 && text[j] <= 0x7e)) ++j;
      i = j;  // skip the final byte too
      continue;
    }
    out += text[i];
  }
  return out;
}

std::vector<RankTrace> import_titan_text(std::string_view text, const std::string& source) {
  std::map<int, RankTrace> ranks;
  // (rank, step) pairs already read: a log repeats steps on restarts, and a linear scan per line
  // made a long log quadratic.
  std::set<std::pair<int, std::int64_t>> seen;
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string clean = strip_ansi(text.substr(pos, end - pos));
    pos = end + 1;
    std::string_view line = clean;
    int rank = 0;
    if (line.starts_with("[rank")) {
      const auto close = line.find("]:");
      int r = 0;
      const auto [p, ec] =
          std::from_chars(line.data() + 5, line.data() + (close == std::string_view::npos ? 5 : close), r);
      if (close != std::string_view::npos && ec == std::errc() && p == line.data() + close && r >= 0) {
        rank = r;
        line.remove_prefix(close + 2);
      }
    }
    std::string_view step_text;
    if (!number_after(line, "step", step_text)) continue;
    auto& trace = ranks[rank];
    trace.rank = rank;
    trace.source = source;
    std::int64_t step = 0;
    const auto [sp, sec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
    std::string_view loss_text;
    std::string_view gn_text;
    double loss = 0;
    double gn = 0;
    if (sec != std::errc() || sp != step_text.data() + step_text.size() ||
        !number_after(line, "loss", loss_text) || !parse_double(loss_text, loss)) {
      trace.issues.push_back({TraceIssue::Kind::CorruptLine, source, line_no,
                              "step line without a readable step number and loss: " + std::string(line)});
      continue;
    }
    if (!seen.emplace(rank, step).second) {
      trace.issues.push_back({TraceIssue::Kind::Note, source, line_no,
                              "step " + std::to_string(step) + " printed again for rank " +
                                  std::to_string(rank) + "; the first line is used"});
      continue;
    }
    StepRecord r;
    r.step = step;
    r.loss = TraceScalar::from_f64(loss);
    r.extra["loss_text"] = std::string(loss_text);
    if (number_after(line, "grad_norm", gn_text) && parse_double(gn_text, gn)) {
      r.grad_norm = TraceScalar::from_f64(gn);
      r.extra["grad_norm_text"] = std::string(gn_text);
    }
    trace.steps.push_back(std::move(r));
    trace.step_table.push_back(kNoParamsTable);
  }
  std::vector<RankTrace> out;
  for (auto& [r, t] : ranks) out.push_back(std::move(t));
  return out;
}

std::vector<RankTrace> import_titan_log(const std::string& path) {
  const MappedFile file(path);
  return import_titan_text(file.text(), path);
}

}  // namespace gparity::model
