#pragma once
// Terminal output for the CLI: colour only when the stream is a TTY (and NO_COLOR is unset),
// and a progress bar that draws on a TTY and stays silent otherwise.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace gparity::cli {

enum class Colour { Red, Green, Yellow, Bold, Dim };

/// True when `stream` is a terminal and the user did not ask for no colour.
bool colour_enabled(std::FILE* stream);

/// Wraps text in an ANSI colour when `enabled`.
std::string paint(std::string_view text, Colour c, bool enabled);

/// A one-line progress bar on stderr, redrawn at most ~20 times a second. Draws nothing when
/// stderr is not a TTY, so logs and CI output stay clean.
class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(std::uint64_t done, std::string_view detail = {});
  /// For work whose size is known only once it starts (the logs of a folder).
  void set_total(std::uint64_t total) noexcept { total_ = total; }
  void finish();

 private:
  std::string label_;
  std::uint64_t total_;
  bool active_;
  std::int64_t last_draw_ns_ = 0;
};

}  // namespace gparity::cli
