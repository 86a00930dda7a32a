#pragma once
// The exception for an output that could not be written (a report, an exported graph, a run's
// manifest): it names the file and the OS error. Front ends print what() and exit 2. Not an
// InputError: readers that turn damaged input into findings must never swallow it.

#include <stdexcept>
#include <string>

namespace gparity::model {

class OutputError : public std::runtime_error {
 public:
  /// `problem` says what failed and why, e.g. "cannot write: No space left on device".
  OutputError(std::string path, const std::string& problem, int os_error = 0)
      : std::runtime_error(path + ": " + problem), path_(std::move(path)), os_error_(os_error) {}

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The errno value behind the failure, 0 when there was none.
  [[nodiscard]] int os_error() const noexcept { return os_error_; }

 private:
  std::string path_;
  int os_error_;
};

}  // namespace gparity::model
