#pragma once
// Which GPU each rank of a single-node run uses when there are fewer GPUs than ranks (a 2x2-mesh
// trace replayed on a 2-GPU machine). NCCL refuses a communicator with two ranks on one GPU, but
// ranks that never share a process group may share a GPU, so the assignment colours the graph
// whose edges are "in a process group together" with the GPUs. Pure bookkeeping: no CUDA here.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gparity::runtime {

/// No assignment exists (or the inputs are wrong); the message says which group and why.
class GpuShareError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// GPU of every rank 0..world_size-1. With at least as many GPUs as ranks, rank r gets GPU r.
/// Otherwise ranks are taken in order and each gets the lowest GPU not held by a rank it shares a
/// group with (every group of `groups` with at most `gpus` ranks; a larger group cannot have a GPU
/// per rank, and is reported by gpu_share_conflict if it is ever used). Deterministic, so every
/// rank computes the same map. Throws GpuShareError when gpus < 1 or no GPU is left for a rank.
std::vector<int> share_gpus(int world_size, int gpus, const std::map<std::string, std::vector<int>>& groups);

/// Why `ranks` (one process group) cannot form a NCCL communicator under `gpu_of_rank`: the first
/// two ranks on one GPU, as a sentence; empty when every rank has a GPU of its own.
std::string gpu_share_conflict(const std::vector<int>& ranks, const std::vector<int>& gpu_of_rank);

}  // namespace gparity::runtime
