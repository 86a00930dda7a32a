#pragma once
// The runner's view of torch.distributed's C++ c10d: TCPStore rendezvous from the standard
// launcher variables, one process group (Gloo on CPU, NCCL on GPU) and the few flat collectives
// FSDP needs. Every collective waits at most the configured timeout; when one fails, the error
// names the ranks that stopped (from per-rank progress and heartbeat keys in the store), so a
// dead or hung rank is reported by number instead of as a socket error.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/runtime/rank_env.hpp"

namespace at {
class Tensor;
}

namespace gparity::runtime {

/// A collective (or the rendezvous) failed: another rank died, hung or disagreed.
class RankFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class CommBackend { Gloo, Nccl };

/// Waits for a c10d work (`c10::intrusive_ptr<c10d::Work>`). While a CUDA graph is captured it
/// waits without a timeout: with one, c10d polls the work's CUDA event from the host, which a
/// capture forbids; without, the current stream just waits for the collective's stream.
template <typename WorkPtr>
void wait_work(const WorkPtr& work, bool capturing, std::chrono::milliseconds timeout) {
  if (capturing) {
    work->wait();
  } else {
    work->wait(timeout);
  }
}

/// Whether this build of the runtime can use `backend` (Gloo needs its headers at build time,
/// NCCL a CUDA LibTorch).
bool comm_backend_available(CommBackend backend) noexcept;

class Comm {
 public:
  /// Rendezvous and process-group creation; throws RankFailure after `timeout`.
  Comm(const RankEnv& env, CommBackend backend, std::chrono::milliseconds timeout);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  [[nodiscard]] int rank() const noexcept;
  [[nodiscard]] int world_size() const noexcept;
  [[nodiscard]] const char* backend_name() const noexcept;

  /// out (world * n elements) <- every rank's in (n elements), in rank order.
  void all_gather(const at::Tensor& in, at::Tensor& out, const char* what);
  /// out (n) <- sum over ranks of in[rank * n, (rank + 1) * n).
  void reduce_scatter_sum(const at::Tensor& in, at::Tensor& out, const char* what);
  /// t <- sum over ranks, in place.
  void all_reduce_sum(at::Tensor& t, const char* what);
  void barrier(const char* what);
  /// Every rank waits here, through the rendezvous store rather than a collective: no
  /// communicator over all ranks is made for it (ranks sharing a GPU could not form one).
  void store_barrier(const char* what);
  /// Every rank's `text`, in rank order, through the rendezvous store under `key` (one key per
  /// exchange): how rank 0 learns where every rank runs, for the manifest.
  std::vector<std::string> all_gather_text(const std::string& key, const std::string& text);

  /// NCCL only, before the first collective: one all-reduce on a throwaway communicator (so NCCL
  /// initialises once, e.g. to dump its graph), then `between` on every rank, then a second
  /// all-reduce that tells every rank whether `between` succeeded everywhere (the result). The
  /// process group's own communicator is made later, at its first collective, with the
  /// environment `between` left (NCCL_GRAPH_FILE for --ring-orders).
  bool nccl_side_round(const std::function<bool()>& between);

  /// Publishes the step this rank is about to run (read by other ranks' failure reports).
  void announce_step(std::int64_t step);
  /// Tells the others this rank has finished cleanly.
  void announce_done();
  /// While a CUDA graph is being captured, collectives are only enqueued: waiting with a
  /// timeout polls CUDA events on the host, which a capture forbids.
  void set_graph_capture(bool capturing) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gparity::runtime
