#include "core/model/base/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <streambuf>
#include <system_error>

namespace gparity::model {

/// A streambuf over a file descriptor that keeps the first write error instead of losing it: an
/// ofstream's failbit says that something failed, never what.
class AtomicFile::Buffer final : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(std::make_unique<char[]>(kSize)) {
    setp(data_.get(), data_.get() + kSize);
  }
  /// The errno of the first failed write, 0 while every write succeeded.
  [[nodiscard]] int error() const noexcept { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto room = static_cast<std::streamsize>(epptr() - pptr());
    if (n > room) {
      if (!drain()) return 0;
      // Large pieces (a whole report as one string) go straight to the file.
      if (n >= static_cast<std::streamsize>(kSize)) return write_all(s, static_cast<std::size_t>(n)) ? n : 0;
    }
    std::memcpy(pptr(), s, static_cast<std::size_t>(n));
    pbump(static_cast<int>(n));
    return n;
  }

  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const auto pending = static_cast<std::size_t>(pptr() - pbase());
    setp(data_.get(), data_.get() + kSize);
    return pending == 0 || write_all(data_.get(), pending);
  }

  bool write_all(const char* p, std::size_t n) {
    if (error_ != 0) return false;
    while (n > 0) {
      const ssize_t written = ::write(fd_, p, n);
      if (written < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      if (written == 0) {
        error_ = EIO;
        return false;
      }
      p += written;
      n -= static_cast<std::size_t>(written);
    }
    return true;
  }

  static constexpr std::size_t kSize = std::size_t{1} << 16;
  int fd_;
  int error_ = 0;
  std::unique_ptr<char[]> data_;
};

namespace {

/// 64 random bits as hex, for temporary names no other writer (another process, another
/// AtomicFile of this one) picks.
std::string random_hex() {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t bits =
      counter.fetch_add(1) * 0x9E3779B97F4A7C15ULL ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  try {
    std::random_device rd;
    bits ^= (static_cast<std::uint64_t>(rd()) << 32) | rd();
  } catch (const std::exception&) {
    // No entropy source: the counter and the clock still make the name unique in this process,
    // and O_EXCL catches the rest.
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
  return text;
}

/// fsync errors that say "this file cannot be synced" rather than "the data did not get there".
bool fsync_not_supported(int error) {
  return error == EINVAL || error == EROFS || error == ENOTSUP;
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)), target_(path_) {
  if (path_.empty()) fail("no file name given", EINVAL);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("cannot write", EISDIR);
    in_place_ = !S_ISREG(st.st_mode);
    struct stat link {};
    if (!in_place_ && ::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      std::error_code ec;
      auto resolved = std::filesystem::canonical(path_, ec);
      if (!ec) target_ = std::move(resolved);
    }
  }
  if (in_place_) {
    temporary_ = path_;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open", errno);
  } else {
    if (!target_.has_filename()) fail("cannot write", EISDIR);
    std::string name = target_.filename().string();
    if (name.size() > 200) name.resize(200);  // the temporary's name must fit NAME_MAX too
    const std::string prefix = "." + name + ".tmp." + std::to_string(::getpid()) + ".";
    for (int attempt = 0; fd_ < 0; ++attempt) {
      temporary_ = target_.parent_path() / (prefix + random_hex());
      fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && (errno != EEXIST || attempt == 15)) {
        const int error = errno;
        temporary_.clear();  // not ours: nothing to remove
        fail("cannot create", error);
      }
    }
  }
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

std::ostream& AtomicFile::stream() noexcept {
  return *stream_;
}

void AtomicFile::write(std::string_view bytes) {
  stream_->write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void AtomicFile::close() {
  if (closed_) {
    // Closed already: fine after a good close, an error after a failed one (discarded).
    if (temporary_.empty() && !committed_)
      throw OutputError(path_.string(), "not written (an earlier error)");
    return;
  }
  closed_ = true;
  stream_->flush();
  int error = buffer_->error();
  std::string what = "cannot write";
  if (error == 0 && !*stream_) error = EIO;  // a failure with no OS error behind it
  if (error == 0 && ::fsync(fd_) != 0 && !fsync_not_supported(errno)) {
    error = errno;
    what = "cannot write (fsync)";
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && error == 0 && errno != EINTR) {
    error = errno;
    what = "cannot write (close)";
  }
  if (error != 0) fail(what, error);
}

void AtomicFile::commit() {
  if (committed_) return;
  close();
  if (!in_place_) {
    if (::rename(temporary_.c_str(), target_.c_str()) != 0)
      fail("cannot rename " + temporary_.filename().string() + " to it", errno);
    // The rename is durable once the folder is synced; a folder that cannot be synced still
    // holds the whole file or the old one.
    const auto folder = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      (void)::fsync(dir);
      (void)::close(dir);
    }
  }
  committed_ = true;
}

void AtomicFile::fail(const std::string& what, int os_error) {
  discard();
  throw OutputError(path_.string(), what + ": " + std::strerror(os_error), os_error);
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) {
    (void)::close(fd_);
    fd_ = -1;
  }
  closed_ = true;
  if (!in_place_ && !temporary_.empty()) (void)::unlink(temporary_.c_str());
  temporary_.clear();
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

}  // namespace gparity::model
