#include "core/runtime/launcher.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>

namespace gparity::runtime {
namespace {

constexpr std::chrono::seconds kStoreGoneGrace{3};

struct Child {
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr read ends
  std::string pending[2];
  bool running = true;
};

void make_pipe(int p[2]) {
  if (pipe2(p, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
}

[[noreturn]] void exec_child(const LaunchOptions& o, int local, const std::string& addr, int port, int out_fd,
                             int err_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // ranks never outlive the launcher
  setpgid(0, 0);                     // a group of its own: a kill reaches whatever the rank started too
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  setenv("RANK", std::to_string(o.node.node_rank * o.nproc + local).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(o.node.nnodes * o.nproc).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
  setenv("GROUP_RANK", std::to_string(o.node.node_rank).c_str(), 1);
  setenv("GROUP_WORLD_SIZE", std::to_string(o.node.nnodes).c_str(), 1);
  setenv("MASTER_ADDR", addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  setenv("GPARITY_LAUNCHED", "1", 1);
  std::vector<char*> argv;
  std::string exe = o.exe;
  argv.push_back(exe.data());
  std::vector<std::string> args = o.args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(exe.c_str(), argv.data());
  const std::string msg = "gparity: cannot start " + o.exe + ": " + std::strerror(errno) + "\n";
  (void)!write(STDERR_FILENO, msg.data(), msg.size());
  _exit(127);
}

void drain(Child& c, int which, int rank, const LineSink& sink, bool eof) {
  auto& buf = c.pending[which];
  std::size_t start = 0;
  for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1)
    sink(rank, which == 1, std::string_view(buf).substr(start, nl - start));
  buf.erase(0, start);
  if (eof && !buf.empty()) {
    sink(rank, which == 1, buf);
    buf.clear();
  }
}

}  // namespace

namespace {

/// Binds a loopback TCP socket to `port` (0: any) and returns the port it got, or -1.
int try_bind(int port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof addr;
  const bool ok = bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(s);
  return ok ? ntohs(addr.sin_port) : -1;
}

/// The first port of the kernel's ephemeral range (outgoing connections' local ports).
int ephemeral_low() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 32768;
  f >> lo;
  return lo;
}

}  // namespace

int pick_free_port() {
  // Below the ephemeral range, as torchrun's 29500 is: a port from that range can be taken, before
  // rank 0 listens on it, as the local port of another rank's first attempt to connect to it.
  const int hi = ephemeral_low();
  constexpr int kLow = 10000;
  if (hi - kLow > 1000) {
    std::random_device rd;
    std::uniform_int_distribution<int> pick(kLow, hi - 1);
    for (int tries = 0; tries < 64; ++tries)
      if (const int p = try_bind(pick(rd)); p > 0) return p;
  }
  const int p = try_bind(0);
  if (p < 0) throw std::runtime_error("no free TCP port on 127.0.0.1 for the ranks' rendezvous");
  return p;
}

void validate(const NodeLayout& n) {
  if (n.nnodes < 1) throw std::invalid_argument("--nnodes must be at least 1");
  if (n.node_rank < 0 || n.node_rank >= n.nnodes)
    throw std::invalid_argument("--node-rank " + std::to_string(n.node_rank) + " is outside 0.." +
                                std::to_string(n.nnodes - 1) + " (--nnodes " + std::to_string(n.nnodes) +
                                ")");
  if (n.master_port < 0 || n.master_port > 65535) throw std::invalid_argument("--master-port out of range");
  if (n.nnodes > 1 && (n.master_addr.empty() || n.master_port == 0))
    throw std::invalid_argument(
        "--nnodes " + std::to_string(n.nnodes) +
        " needs --master-addr and --master-port: the address and a free port of node 0, "
        "where rank 0 hosts the rendezvous store, the same on every node");
}

std::vector<std::string> rank_arguments(const std::vector<std::string>& command_line) {
  static constexpr std::string_view kOwn[] = {"--nproc", "--nnodes", "--node-rank", "--master-addr",
                                              "--master-port"};
  std::vector<std::string> out;
  for (std::size_t i = 1; i < command_line.size(); ++i) {
    const std::string& a = command_line[i];
    const auto own = std::find_if(std::begin(kOwn), std::end(kOwn), [&a](std::string_view opt) {
      return a == opt || (a.starts_with(opt) && a.size() > opt.size() && a[opt.size()] == '=');
    });
    if (own == std::end(kOwn)) {
      out.push_back(a);
    } else if (a == *own) {
      ++i;  // its value
    }
  }
  return out;
}

std::string describe_exit(const RankExit& e) {
  if (!e.signalled) return "exited with status " + std::to_string(e.exit_code);
  const char* name = sigabbrev_np(e.signal);
  std::string s =
      "was killed by signal " + std::to_string(e.signal) + (name ? std::string(" (SIG") + name + ")" : "");
  if (e.killed_by_launcher) s += " from the launcher after another rank failed";
  return s;
}

LaunchResult launch_local(const LaunchOptions& o, const LineSink& sink) {
  if (o.nproc < 1) throw std::invalid_argument("--nproc must be at least 1");
  validate(o.node);
  const std::string addr = o.node.master_addr.empty() ? "127.0.0.1" : o.node.master_addr;
  const int port = o.node.master_port > 0 ? o.node.master_port : pick_free_port();
  const int first_rank = o.node.node_rank * o.nproc;  // global rank of local rank 0
  std::vector<Child> children(static_cast<std::size_t>(o.nproc));
  for (int r = 0; r < o.nproc; ++r) {
    int out[2], err[2];
    make_pipe(out);
    make_pipe(err);
    const pid_t pid = fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) exec_child(o, r, addr, port, out[1], err[1]);
    setpgid(pid, pid);  // as the child does: whichever runs first, the group exists before a kill
    close(out[1]);
    close(err[1]);
    auto& c = children[static_cast<std::size_t>(r)];
    c.pid = pid;
    c.fds[0] = out[0];
    c.fds[1] = err[0];
  }

  LaunchResult result;
  std::vector<bool> killed(children.size(), false);
  bool deadline_set = false;
  auto deadline = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> store_gone;  // when rank 0 exited
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<std::pair<int, int>> who;  // (rank, which)
    for (int r = 0; r < o.nproc; ++r) {
      for (int w = 0; w < 2; ++w) {
        const int fd = children[static_cast<std::size_t>(r)].fds[w];
        if (fd >= 0) {
          pfds.push_back({fd, POLLIN, 0});
          who.emplace_back(r, w);
        }
      }
    }
    const bool any_running = [&] {
      for (const auto& c : children)
        if (c.running) return true;
      return false;
    }();
    if (pfds.empty() && !any_running) break;
    if (!pfds.empty()) {
      poll(pfds.data(), pfds.size(), 100);
    } else {
      usleep(50'000);
    }
    for (std::size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto& c = children[static_cast<std::size_t>(who[i].first)];
      char buf[65536];
      const ssize_t n = read(pfds[i].fd, buf, sizeof buf);
      if (n > 0) {
        c.pending[who[i].second].append(buf, static_cast<std::size_t>(n));
        drain(c, who[i].second, first_rank + who[i].first, sink, false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        drain(c, who[i].second, first_rank + who[i].first, sink, true);
        close(c.fds[who[i].second]);
        c.fds[who[i].second] = -1;
      }
    }
    for (int r = 0; r < o.nproc; ++r) {
      auto& c = children[static_cast<std::size_t>(r)];
      if (!c.running) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.running = false;
      RankExit e{first_rank + r, WIFEXITED(status) ? WEXITSTATUS(status) : 0,
                 WIFSIGNALED(status) ? WTERMSIG(status) : 0, WIFSIGNALED(status),
                 killed[static_cast<std::size_t>(r)]};
      result.exits.push_back(e);
      const bool failed = e.signalled || e.exit_code != 0;
      if (failed && result.failure.empty()) {
        result.failure = "rank " + std::to_string(e.rank) + " " + describe_exit(e);
        deadline = std::chrono::steady_clock::now() + o.grace;
        deadline_set = true;
      }
      if (e.rank == 0) store_gone = std::chrono::steady_clock::now();
    }
    // Rank 0 hosts the rendezvous store: once it is gone after a failure, the others can only
    // wait for their store calls to time out, so they get a short grace, not `grace`. (On the
    // other nodes the ranks find out through their own timeouts.)
    if (deadline_set && store_gone) deadline = std::min(deadline, *store_gone + kStoreGoneGrace);
    if (deadline_set && std::chrono::steady_clock::now() > deadline) {
      for (std::size_t r = 0; r < children.size(); ++r) {
        if (children[r].running && !killed[r]) {
          kill(-children[r].pid, SIGKILL);
          killed[r] = true;
        }
      }
    }
  }
  return result;
}

}  // namespace gparity::runtime
