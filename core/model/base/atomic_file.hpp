#pragma once
// Output files written atomically and checked (RAII). An AtomicFile writes to a temporary file
// in the final file's folder (".<name>.tmp.<pid>.<random>"); commit() flushes it, fsyncs it,
// closes it with the error checked and renames it over the final name (then fsyncs the folder,
// best effort). A reader therefore sees the old file or the whole new one, never a part. Every
// failure (a write, the flush, fsync, close or the rename) throws OutputError naming the final
// file and the OS error (strerror), and leaves nothing under the final name; destroying an
// AtomicFile that was not committed removes its temporary.
//
// Writes through stream() are buffered; a failed write puts the stream in a bad state and the
// first OS error is kept, to be thrown by close() or commit(). Nothing is lost by checking late:
// nothing is renamed before every byte has reached the file.
//
// A final name that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written
// in place: there is nothing to rename over, and such a target cannot hold a partial file. A
// symbolic link to a regular file is followed: the file it points to is replaced, the link kept.

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "core/model/base/output_error.hpp"

namespace gparity::model {

class AtomicFile {
 public:
  /// Creates the temporary file beside `path` (whose folder must exist). Throws OutputError
  /// naming `path` when it cannot (no such folder, the parent is a file, no permission, ...).
  explicit AtomicFile(std::filesystem::path path);
  /// Without commit(): closes and removes the temporary. Never throws.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  AtomicFile(AtomicFile&&) = delete;
  AtomicFile& operator=(AtomicFile&&) = delete;

  /// The stream to write the content to (binary: bytes go out as they are).
  [[nodiscard]] std::ostream& stream() noexcept;
  void write(std::string_view bytes);

  /// Flushes, fsyncs and closes the temporary. Throws OutputError naming path() and the first OS
  /// error of any write so far, of the flush, fsync or close. Does nothing the second time.
  void close();
  /// close(), then renames the temporary over path(). Throws OutputError (the temporary is then
  /// removed). Does nothing the second time.
  void commit();

  /// The final name, as given.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// Where the bytes go until commit(): the temporary, or the final name itself for a target that
  /// is not a regular file.
  [[nodiscard]] const std::filesystem::path& temporary_path() const noexcept { return temporary_; }
  [[nodiscard]] bool committed() const noexcept { return committed_; }

 private:
  class Buffer;
  [[noreturn]] void fail(const std::string& what, int os_error);
  void discard() noexcept;

  std::filesystem::path path_;       // as given: what messages name
  std::filesystem::path target_;     // what is replaced (a symbolic link resolved)
  std::filesystem::path temporary_;  // == target_ when written in place
  bool in_place_ = false;
  int fd_ = -1;
  bool closed_ = false;
  bool committed_ = false;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

/// Writes `content` to `path` through an AtomicFile and commits it. Throws OutputError.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace gparity::model
