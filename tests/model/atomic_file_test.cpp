// AtomicFile: output written to a temporary beside the final name and renamed only when every
// byte got there. Failures are real ones: a file size limit (RLIMIT_FSIZE, in a child process),
// /dev/full, a parent that is a file. Root ignores permission bits, so read-only folders are not
// used.

#include "core/model/base/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/model/run/trace_writer.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::model::AtomicFile;
using gparity::model::OutputError;
using gparity::model::write_file_atomically;
using gparity::testing::names_in;
using gparity::testing::read_file;
using gparity::testing::TempDir;

/// Runs `body` in a child process whose files may grow to `limit` bytes at most (SIGXFSZ
/// ignored, so writes past it fail with EFBIG). The child's OutputError message, if any, comes
/// back; "" when `body` returned normally.
std::string in_child_with_file_limit(rlim_t limit, const std::function<void()>& body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(3);
    std::string message;
    int code = 0;
    try {
      body();
    } catch (const OutputError& e) {
      message = e.what();
      code = e.os_error() == EFBIG ? 1 : 4;
    } catch (...) {
      code = 5;
    }
    [[maybe_unused]] auto n = ::write(pipe_fds[1], message.data(), message.size());
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;)
    message.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  EXPECT_TRUE(code == 0 || code == 1) << "child exit " << code << ": " << message;
  return message;
}

TEST(AtomicFile, CommitPutsTheWholeFileInPlaceAndLeavesNoTemporary) {
  TempDir tmp;
  const auto path = tmp.path() / "report.json";
  std::ofstream(path) << "old";
  {
    AtomicFile f(path);
    EXPECT_EQ(f.temporary_path().parent_path(), tmp.path());
    EXPECT_TRUE(f.temporary_path().filename().string().starts_with(".report.json.tmp."));
    f.stream() << "new ";
    f.write(std::string(200000, 'x'));  // larger than the buffer: straight to the file
    f.stream() << " end";
    EXPECT_EQ(read_file(path), "old") << "nothing under the final name before commit";
    f.commit();
    EXPECT_TRUE(f.committed());
    f.commit();  // a second time does nothing
  }
  EXPECT_EQ(read_file(path), "new " + std::string(200000, 'x') + " end");
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"report.json"});
}

TEST(AtomicFile, WithoutCommitTheTemporaryIsRemovedAndTheOldFileKept) {
  TempDir tmp;
  const auto path = tmp.path() / "out.html";
  std::ofstream(path) << "old";
  {
    AtomicFile f(path);
    f.stream() << "half a report";
    f.close();  // even closed: not renamed until commit
  }
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"out.html"});
  {
    AtomicFile f(tmp.path() / "new.html");
    f.stream() << "abandoned";
  }
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"out.html"});
}

TEST(AtomicFile, FileSizeLimitFailsTheCommitNamingFileAndErrorAndLeavesNothing) {
  TempDir tmp;
  const auto path = tmp.path() / "report.html";
  const std::string message = in_child_with_file_limit(1000, [&] {
    AtomicFile f(path);
    f.stream() << std::string(5000, 'x');
    f.commit();
  });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EFBIG)), std::string::npos) << message;
  EXPECT_TRUE(names_in(tmp.path()).empty()) << "no final file, no temporary";
}

TEST(AtomicFile, FailedWriteKeepsTheOldFile) {
  TempDir tmp;
  const auto path = tmp.path() / "manifest.json";
  std::ofstream(path) << "old";
  const std::string message =
      in_child_with_file_limit(100, [&] { write_file_atomically(path, std::string(150000, 'y')); });
  EXPECT_NE(message.find("cannot write"), std::string::npos) << message;
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"manifest.json"});
}

TEST(AtomicFile, ParentThatIsAFileOrMissingFailsAtOnce) {
  TempDir tmp;
  const auto file = tmp.write("plain", "x");
  try {
    AtomicFile f(fs::path(file) / "report.md");
    FAIL() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.path(), (fs::path(file) / "report.md").string());
    EXPECT_EQ(e.os_error(), ENOTDIR);
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOTDIR)), std::string::npos) << e.what();
  }
  EXPECT_THROW(AtomicFile(tmp.path() / "no" / "such" / "dir.json"), OutputError);
  EXPECT_THROW(AtomicFile{tmp.path()}, OutputError) << "a folder is not a file";
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"plain"});
}

TEST(AtomicFile, DeviceIsWrittenInPlaceAndItsErrorsReported) {
  {
    AtomicFile f("/dev/null");
    EXPECT_EQ(f.temporary_path(), fs::path("/dev/null"));
    f.stream() << "discarded";
    f.commit();
  }
  try {
    AtomicFile f("/dev/full");
    f.stream() << "no room";
    f.commit();
    FAIL() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.os_error(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_character_file("/dev/full")) << "a device is never renamed over";
}

TEST(AtomicFile, SymbolicLinkIsFollowedAndKept) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "real");
  std::ofstream(tmp.path() / "real" / "target.json") << "old";
  fs::create_symlink(tmp.path() / "real" / "target.json", tmp.path() / "link.json");
  write_file_atomically(tmp.path() / "link.json", "new");
  EXPECT_TRUE(fs::is_symlink(tmp.path() / "link.json"));
  EXPECT_EQ(read_file(tmp.path() / "real" / "target.json"), "new");
  EXPECT_EQ(names_in(tmp.path() / "real"), std::vector<std::string>{"target.json"});
}

TEST(AtomicFile, CloseAfterAFailureThrowsAgain) {
  try {
    AtomicFile f("/dev/full");
    f.stream() << "x";
    EXPECT_THROW(f.close(), OutputError);
    EXPECT_THROW(f.close(), OutputError);
    EXPECT_THROW(f.commit(), OutputError);
  } catch (const OutputError&) {
    FAIL() << "opening /dev/full must succeed";
  }
}

TEST(AtomicFile, ManifestGoesThroughIt) {
  TempDir tmp;
  gparity::model::RunManifest m;
  m.run_id = "r";
  m.steps = 3;
  const std::string message =
      in_child_with_file_limit(50, [&] { gparity::model::write_manifest(tmp.path() / "run", m); });
  EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;
  EXPECT_TRUE(names_in(tmp.path() / "run").empty()) << "no half manifest, no temporary";
  gparity::model::write_manifest(tmp.path() / "run", m);
  EXPECT_EQ(names_in(tmp.path() / "run"), std::vector<std::string>{"manifest.json"});
}

TEST(AtomicFile, TraceWriterReportsAFullDiskOnTheRecordThatFailed) {
  // The per-rank trace is appended a line at a time (crash safety), not through AtomicFile: a
  // full disk must still stop the run with the file and the error named.
  gparity::model::TraceWriter w(fs::path("/dev/full"), true);
  try {
    w.write_raw({{"type", "event"}, {"kind", "x"}});
    FAIL() << "expected a write error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(w.lines_written(), 0);
}

}  // namespace
