#include "core/runtime/comm.hpp"

#include <ATen/ATen.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <string_view>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#if GPARITY_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if GPARITY_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace gparity::runtime {
namespace {

std::string to_string(const std::vector<std::uint8_t>& v) {
  return {v.begin(), v.end()};
}
std::vector<std::uint8_t> to_bytes(std::string_view s) {
  return {s.begin(), s.end()};
}

constexpr auto kBeatPeriod = std::chrono::milliseconds(300);

}  // namespace

bool comm_backend_available(CommBackend backend) noexcept {
  if (backend == CommBackend::Gloo) return GPARITY_HAVE_GLOO != 0;
  return GPARITY_HAVE_NCCL != 0;
}

struct Comm::Impl {
  RankEnv env;
  CommBackend backend;
  std::chrono::milliseconds timeout;
  c10::intrusive_ptr<c10d::Store> store;
#if GPARITY_HAVE_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#if GPARITY_HAVE_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  std::int64_t step = -1;
  std::uint64_t barriers = 0;     // store barriers entered; numbers their keys
  std::uint64_t collectives = 0;  // entered so far; published so failure reports can tell who lags
  std::atomic<bool> stop{false};
  std::thread heartbeat;
  bool capturing = false;  // inside a CUDA graph capture: no host-side wait

  c10::intrusive_ptr<c10d::Store> connect_store(bool server) const {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(env.master_port);
    o.isServer = server;
    o.numWorkers = server ? c10::optional<std::size_t>(env.world_size) : c10::nullopt;
    o.waitWorkers = false;
    o.timeout = timeout;
    return c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
  }

  void start_heartbeat() {
    // A separate client connection: the main thread may sit in a store call when we beat.
    auto beat_store = connect_store(false);
    heartbeat = std::thread([this, beat_store] {
      std::uint64_t n = 0;
      while (!stop.load()) {
        try {
          beat_store->set("gparity/beat/" + std::to_string(env.rank), to_bytes(std::to_string(++n)));
        } catch (...) {
          return;  // the store host is gone; failure reports say so
        }
        std::this_thread::sleep_for(kBeatPeriod);
      }
    });
  }

  std::string read_key(const std::string& key) {
    if (!store->check({key})) return {};
    return to_string(store->get(key));
  }

  /// Which ranks stopped, from the store: a rank whose heartbeat no longer moves is dead (or
  /// frozen whole); one whose heartbeat moves but whose step lags is hung inside its step.
  std::string diagnose(const std::string& what, const std::string& cause) {
    std::string msg = "rank " + std::to_string(env.rank) + ": " + what + " at step " + std::to_string(step) +
                      " failed (" + cause + ")";
    try {
      std::map<int, std::string> beat1;
      for (int r = 0; r < env.world_size; ++r)
        if (r != env.rank) beat1[r] = read_key("gparity/beat/" + std::to_string(r));
      std::this_thread::sleep_for(kBeatPeriod * 4);
      std::string verdicts;
      for (auto& [r, b] : beat1) {
        const std::string rs = std::to_string(r);
        const std::string done = read_key("gparity/done/" + rs);
        const std::string st = read_key("gparity/step/" + rs);
        const std::string coll = read_key("gparity/coll/" + rs);
        const bool beating = read_key("gparity/beat/" + rs) != b;
        const std::string at = st.empty() ? "before its first step" : "at step " + st;
        if (!done.empty()) continue;
        if (!beating) {
          verdicts += "; rank " + rs + " is dead or not responding (last seen " + at + ")";
        } else if (coll.empty() || std::stoull(coll) < collectives) {
          verdicts += "; rank " + rs + " is alive but hung " + at + " (it entered " +
                      (coll.empty() ? "0" : coll) + " collectives, this rank " + std::to_string(collectives) +
                      ")";
        }
      }
      msg += verdicts.empty() ? "; no other rank looks stopped" : verdicts;
    } catch (const std::exception&) {
      msg += "; the rendezvous store on rank 0 (" + env.master_addr + ":" + std::to_string(env.master_port) +
             ") is unreachable: rank 0 is dead or not responding";
    }
    return msg;
  }

  /// Runs `fn`, one step all ranks take together (a collective, a barrier), and turns its failure
  /// into a RankFailure that names the ranks that stopped.
  template <typename Fn>
  void guarded(const char* what, Fn&& fn) {
    try {
      // One store round trip per step: what lets a failure report tell a rank that is stuck in
      // compute from one waiting in the same collective.
      store->set("gparity/coll/" + std::to_string(env.rank), to_bytes(std::to_string(++collectives)));
      fn();
    } catch (const RankFailure&) {
      throw;
    } catch (const std::exception& e) {
      std::string cause = e.what();
      if (const auto nl = cause.find('\n'); nl != std::string::npos) cause.resize(nl);
      throw RankFailure(diagnose(what, cause));
    }
  }

  /// A collective: `fn` starts it and returns its work, waited for here.
  template <typename Fn>
  void run(const char* what, Fn&& fn) {
    guarded(what, [&] { wait_work(fn(), capturing, timeout); });
  }
};

Comm::Comm(const RankEnv& env, CommBackend backend, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->env = env;
  impl_->backend = backend;
  impl_->timeout = timeout;
  if (!comm_backend_available(backend))
    throw std::invalid_argument(std::string("this build has no ") +
                                (backend == CommBackend::Gloo ? "Gloo" : "NCCL") + " support");
  try {
    impl_->store = impl_->connect_store(env.rank == 0);
    impl_->start_heartbeat();
    auto pg_store = c10::make_intrusive<c10d::PrefixStore>("default_pg", impl_->store);
#if GPARITY_HAVE_GLOO
    if (backend == CommBackend::Gloo) {
      auto opts = c10d::ProcessGroupGloo::Options::create();
      opts->timeout = timeout;
      if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      } else if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(pg_store, env.rank, env.world_size, opts);
    }
#endif
#if GPARITY_HAVE_NCCL
    if (backend == CommBackend::Nccl) {
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(pg_store, env.rank, env.world_size, opts);
    }
#endif
  } catch (const std::exception& e) {
    impl_->stop = true;
    if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
    throw RankFailure("rank " + std::to_string(env.rank) + ": rendezvous with " + env.master_addr + ":" +
                      std::to_string(env.master_port) + " failed: " + e.what());
  }
}

#if GPARITY_HAVE_NCCL
namespace {
/// ProcessGroupNCCL::shutdown() where this LibTorch has it (destroy_process_group's job in
/// Python): the PG's own threads stop before the store they talk to goes away.
template <typename Pg>
void shutdown_if_supported(Pg& pg) {
  if constexpr (requires { pg.shutdown(); }) {
    try {
      pg.shutdown();
    } catch (const std::exception&) {
      // Tearing down after a failure: nothing more to report.
    }
  }
}
}  // namespace
#endif

bool Comm::nccl_side_round(const std::function<bool()>& between) {
#if GPARITY_HAVE_NCCL
  if (impl_->nccl) {
    const auto& env = impl_->env;
    auto side_store = c10::make_intrusive<c10d::PrefixStore>("gparity_side_round", impl_->store);
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = impl_->timeout;
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(side_store, env.rank, env.world_size, opts);
    std::vector<at::Tensor> flag{
        at::zeros({1}, at::TensorOptions()
                           .dtype(at::kFloat)
                           .device(at::kCUDA, static_cast<at::DeviceIndex>(env.local_rank)))};
    impl_->run("NCCL side round", [&] { return pg->allreduce(flag); });
    (void)flag[0].item<float>();  // NCCL's init (and its graph dump) is done on every rank
    const bool ok = between();
    flag[0].fill_(ok ? 0.0 : 1.0);
    impl_->run("NCCL side round", [&] { return pg->allreduce(flag); });
    const bool all_ok = flag[0].item<float>() == 0.0F;
    shutdown_if_supported(*pg);
    return all_ok;
  }
#endif
  (void)between;
  throw std::invalid_argument("NCCL side round: this run does not use NCCL (--device cuda)");
}

Comm::~Comm() {
#if GPARITY_HAVE_NCCL
  if (impl_->nccl) shutdown_if_supported(*impl_->nccl);
#endif
  impl_->stop = true;
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
}

int Comm::rank() const noexcept {
  return impl_->env.rank;
}
int Comm::world_size() const noexcept {
  return impl_->env.world_size;
}
const char* Comm::backend_name() const noexcept {
  return impl_->backend == CommBackend::Gloo ? "gloo" : "nccl";
}

void Comm::all_gather(const at::Tensor& in, at::Tensor& out, const char* what) {
#if GPARITY_HAVE_NCCL
  if (impl_->nccl) {
    impl_->run(what, [&] {
      auto i = in;
      return impl_->nccl->_allgather_base(out, i);
    });
    return;
  }
#endif
#if GPARITY_HAVE_GLOO
  // Gloo in LibTorch 1.13 knows neither bfloat16 nor int16; a gather moves bits only, so move
  // them as bytes.
  const bool bf16 = in.scalar_type() == at::kBFloat16;
  const auto src = bf16 ? in.view(at::kByte) : in;
  auto dst = bf16 ? out.view(at::kByte) : out;
  const std::int64_t n = src.numel();
  std::vector<at::Tensor> outs;
  for (int r = 0; r < impl_->env.world_size; ++r) outs.push_back(dst.narrow(0, r * n, n));
  std::vector<std::vector<at::Tensor>> outputs{outs};
  std::vector<at::Tensor> inputs{src};
  impl_->run(what, [&] { return impl_->gloo->allgather(outputs, inputs); });
#endif
}

void Comm::reduce_scatter_sum(const at::Tensor& in, at::Tensor& out, const char* what) {
#if GPARITY_HAVE_NCCL
  if (impl_->nccl) {
    impl_->run(what, [&] {
      auto i = in;
      return impl_->nccl->_reduce_scatter_base(out, i);
    });
    return;
  }
#endif
#if GPARITY_HAVE_GLOO
  // Gloo in LibTorch 1.13 has no reduce-scatter: all-reduce the payload and keep this rank's
  // slot. Each element is still the same ring sum, so the bits match a reduce-scatter's.
  // Gloo has no bfloat16 either: bf16 payloads are summed in float32 and rounded once.
  std::vector<at::Tensor> tensors{in.scalar_type() == at::kBFloat16 ? in.to(at::kFloat) : in.clone()};
  impl_->run(what, [&] { return impl_->gloo->allreduce(tensors); });
  const std::int64_t n = out.numel();
  out.copy_(tensors[0].narrow(0, impl_->env.rank * n, n));
#endif
}

void Comm::all_reduce_sum(at::Tensor& t, const char* what) {
  std::vector<at::Tensor> tensors{t};
#if GPARITY_HAVE_NCCL
  if (impl_->nccl) {
    impl_->run(what, [&] { return impl_->nccl->allreduce(tensors); });
    return;
  }
#endif
#if GPARITY_HAVE_GLOO
  if (t.scalar_type() == at::kBFloat16) tensors[0] = t.to(at::kFloat);
  impl_->run(what, [&] { return impl_->gloo->allreduce(tensors); });
  if (!tensors[0].is_same(t)) t.copy_(tensors[0]);
#endif
}

void Comm::barrier(const char* what) {
#if GPARITY_HAVE_NCCL
  if (impl_->nccl) {
    impl_->run(what, [&] { return impl_->nccl->barrier(); });
    return;
  }
#endif
#if GPARITY_HAVE_GLOO
  impl_->run(what, [&] { return impl_->gloo->barrier(); });
#endif
}

void Comm::store_barrier(const char* what) {
  auto& im = *impl_;
  const std::string key = "gparity/barrier/" + std::to_string(++im.barriers);
  im.guarded(what, [&] {
    if (im.store->add(key, 1) == im.env.world_size) im.store->set(key + "/all", to_bytes("1"));
    im.store->wait({key + "/all"}, im.timeout);
  });
}

std::vector<std::string> Comm::all_gather_text(const std::string& key, const std::string& text) {
  auto& im = *impl_;
  const std::string prefix = "gparity/gather/" + key + "/";
  std::vector<std::string> out;
  im.guarded(key.c_str(), [&] {
    im.store->set(prefix + std::to_string(im.env.rank), to_bytes(text));
    for (int r = 0; r < im.env.world_size; ++r)
      out.push_back(to_string(im.store->get(prefix + std::to_string(r))));
  });
  return out;
}

void Comm::set_graph_capture(bool capturing) noexcept {
  impl_->capturing = capturing;
}

void Comm::announce_step(std::int64_t step) {
  impl_->step = step;
  try {
    impl_->store->set("gparity/step/" + std::to_string(impl_->env.rank), to_bytes(std::to_string(step)));
  } catch (const std::exception& e) {
    throw RankFailure(impl_->diagnose("publishing progress", e.what()));
  }
}

void Comm::announce_done() {
  try {
    impl_->store->set("gparity/done/" + std::to_string(impl_->env.rank), to_bytes("1"));
  } catch (...) {
    // Finishing cleanly does not depend on others hearing about it.
  }
}

}  // namespace gparity::runtime
