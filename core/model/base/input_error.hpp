#pragma once
// The one exception type for untrusted input that cannot be used: it names the source (file,
// zip member, ...), the 1-based line when there is one, and what is wrong. Front ends print
// what() and exit 2.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gparity::model {

class InputError : public std::runtime_error {
 public:
  InputError(std::string source, std::int64_t line, const std::string& problem)
      : std::runtime_error(format(source, line, problem)),
        source_(std::move(source)),
        line_(line),
        problem_(problem) {}
  InputError(std::string source, const std::string& problem) : InputError(std::move(source), 0, problem) {}

  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  /// 1-based line, or 0 when the problem is not tied to a line.
  [[nodiscard]] std::int64_t line() const noexcept { return line_; }
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

 private:
  static std::string format(const std::string& source, std::int64_t line, const std::string& problem) {
    return line > 0 ? source + ":" + std::to_string(line) + ": " + problem : source + ": " + problem;
  }
  std::string source_;
  std::int64_t line_;
  std::string problem_;
};

}  // namespace gparity::model
