#include "cli/terminal.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/model/base/display_text.hpp"

namespace gparity::cli {

bool colour_enabled(std::FILE* stream) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(::fileno(stream)) == 1;
}

std::string paint(std::string_view text, Colour c, bool enabled) {
  if (!enabled) return std::string(text);
  const char* code = "";
  switch (c) {
    case Colour::Red: code = "\033[31m"; break;
    case Colour::Green: code = "\033[32m"; break;
    case Colour::Yellow: code = "\033[33m"; break;
    case Colour::Bold: code = "\033[1m"; break;
    case Colour::Dim: code = "\033[2m"; break;
  }
  return std::string(code) + std::string(text) + "\033[0m";
}

ProgressBar::ProgressBar(std::string label, std::uint64_t total)
    : label_(std::move(label)), total_(total), active_(::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::update(std::uint64_t done, std::string_view detail) {
  if (!active_) return;
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  if (done < total_ && now - last_draw_ns_ < 50'000'000) return;
  last_draw_ns_ = now;
  constexpr int kWidth = 30;
  const double frac = total_ ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 1.0;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '-');
  const std::string shown_detail = model::display_text(detail);  // a file name: no control characters
  std::fprintf(stderr, "\r\033[K%s [%s] %llu/%llu %.*s", label_.c_str(), bar.c_str(),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_),
               static_cast<int>(shown_detail.size()), shown_detail.data());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!active_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  active_ = false;
}

}  // namespace gparity::cli
