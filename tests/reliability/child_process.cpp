#include "tests/reliability/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace gparity::testing {
namespace {

// In the child, before exec: only async-signal-safe calls. A failure is written to `status_fd`
// and the child exits without running anything.
[[noreturn]] void setup_failed(int status_fd, const char* what) {
  const int err = errno;
  (void)!::write(status_fd, what, std::strlen(what));
  (void)!::write(status_fd, ": ", 2);
  const char* msg = std::strerror(err);
  (void)!::write(status_fd, msg, std::strlen(msg));
  ::_exit(125);
}

void apply_mounts(const std::vector<TmpfsMount>& mounts, int status_fd) {
  if (mounts.empty()) return;
  if (::unshare(CLONE_NEWNS) != 0) setup_failed(status_fd, "unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    setup_failed(status_fd, "mount --make-rprivate /");
  for (const auto& m : mounts) {
    char options[64];
    std::snprintf(options, sizeof options, "size=%llu", static_cast<unsigned long long>(m.bytes));
    if (::mount("tmpfs", m.path.c_str(), "tmpfs", m.read_only ? MS_RDONLY : 0, options) != 0)
      setup_failed(status_fd, "mount tmpfs");
    if (m.fill) {
      const std::string filler = m.path + "/.filler";
      const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) setup_failed(status_fd, "create the filler");
      static char block[4096];
      while (::write(fd, block, sizeof block) > 0) {
      }
      ::close(fd);
    }
  }
}

}  // namespace

ChildResult run_child(const std::string& exe, const std::vector<std::string>& args,
                      const ChildLimits& limits) {
  std::vector<std::string> argv_storage{exe};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2], err[2], status[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(status, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    apply_mounts(limits.mounts, status[1]);
    if (limits.file_size_bytes) {
      std::signal(SIGXFSZ, SIG_IGN);  // inherited through exec: writes fail with EFBIG instead
      const rlimit lim{*limits.file_size_bytes, *limits.file_size_bytes};
      if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) setup_failed(status[1], "setrlimit(RLIMIT_FSIZE)");
    }
    ::execv(exe.c_str(), argv.data());
    setup_failed(status[1], "exec");
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before a kill
  ::close(out[1]);
  ::close(err[1]);
  ::close(status[1]);

  ChildResult r;
  const auto deadline = std::chrono::steady_clock::now() + limits.hang_guard;
  pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {status[0], POLLIN, 0}};
  std::string status_text;
  std::string* sinks[3] = {&r.out, &r.err, &status_text};
  int open_fds = 3;
  char buf[65536];
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    const int n = ::poll(fds, 3, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 3; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else if (sinks[i]->size() < kMaxCaptured) {
        sinks[i]->append(
            buf, std::min<std::size_t>(static_cast<std::size_t>(got), kMaxCaptured - sinks[i]->size()));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);  // whatever the child left behind in its group
  if (WIFEXITED(wstatus)) r.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus) && !r.timed_out) r.signal = WTERMSIG(wstatus);
  r.setup_error = status_text;
  return r;
}

std::string tmpfs_unavailable_reason() {
  static const std::string reason = [] {
    char dir[] = "/tmp/gparity-mount-probe-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return std::string("cannot make a probe folder");
    ChildLimits limits;
    limits.mounts.push_back({dir, 1 << 16, true, false});
    const auto r = run_child("/bin/true", {}, limits);
    ::rmdir(dir);
    if (!r.setup_error.empty()) return "cannot mount a tmpfs here (" + r.setup_error + ")";
    if (r.exit_code != 0) return std::string("/bin/true failed under a tmpfs mount");
    return std::string();
  }();
  return reason;
}

}  // namespace gparity::testing
