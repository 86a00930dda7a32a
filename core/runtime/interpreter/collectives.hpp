#pragma once
// Functional collectives of replayed graphs (`_c10d_functional.*` and the older
// `c10d_functional.*` with explicit rank lists) on c10d process groups: Gloo on CPU, NCCL on GPU.
// LibTorch 1.13 registers no functional collectives, so they are implemented here on c10d
// directly, with the semantics of torch/csrc/distributed/c10d/Functional.cpp. Process groups
// are made on first use, one per group name, from its rank set (Flight Recorder pg_config,
// --group NAME=RANK,...); every member rank must reach the collective.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/comm.hpp"

namespace gparity::runtime {

/// Group name -> global ranks.
using GroupRanks = std::map<std::string, std::vector<int>>;

class GroupComm {
 public:
  /// Rendezvous of all ranks (RankEnv from the launcher); groups are created lazily.
  /// `gpu_of_rank` (NCCL, ranks sharing GPUs: runtime::share_gpus) lets a group whose ranks
  /// share a GPU fail with a message before NCCL does; empty: a GPU per rank.
  GroupComm(const RankEnv& env, CommBackend backend, GroupRanks groups, std::chrono::milliseconds timeout,
            std::vector<int> gpu_of_rank = {});
  ~GroupComm();
  GroupComm(const GroupComm&) = delete;
  GroupComm& operator=(const GroupComm&) = delete;

  [[nodiscard]] int rank() const noexcept;
  [[nodiscard]] int world_size() const noexcept;
  [[nodiscard]] const GroupRanks& groups() const noexcept;
  /// All ranks wait here (between graphs, at the end), through the store: no communicator
  /// over all ranks is made for it.
  void barrier(const char* what);
  /// While a CUDA graph is captured, collectives are only enqueued: waiting with a timeout
  /// polls CUDA events on the host, which a capture forbids.
  void set_graph_capture(bool capturing) noexcept;
  /// Every rank's `text` under `key`, by rank, through the rendezvous store (no communicator);
  /// every rank must call it with the same key. Throws RankFailure after the timeout.
  std::vector<std::string> all_gather_text(const std::string& key, const std::string& text);

  struct Impl;
  Impl& impl() noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// The results of a run's functional collectives (wait_tensor aside) by process group and
/// per-group sequence number, each with its signature (the op and its arguments other than
/// tensors and the group): one run keeps them (InterpretOptions::keep_collectives), a later run
/// of another graph takes them instead of communicating (take_collectives). `replay --coor` runs
/// a rank's coor graph so, alone, with the results its own graph's collectives had: its group
/// partners' correct inputs; a lazy replay's second pass (--node-hash lazy) runs each graph again
/// so, on the ranks whose first pass differed only, with the results its own first pass had. Each
/// take hands out a copy. Taking a result for a collective the keeping run did not have, or had
/// with another signature, is a ReplayError naming both.
class CollectiveResults {
 public:
  CollectiveResults();
  ~CollectiveResults();
  CollectiveResults(const CollectiveResults&) = delete;
  CollectiveResults& operator=(const CollectiveResults&) = delete;
  [[nodiscard]] std::size_t size() const noexcept;

  struct Impl;
  Impl& impl() noexcept { return *impl_; }
  [[nodiscard]] const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gparity::runtime
