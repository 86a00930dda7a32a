#pragma once
// Where this process sits in a distributed run, from the launcher's environment: torchrun's
// RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK / MASTER_ADDR / MASTER_PORT
// (also what gparity's own launcher sets), else Slurm's SLURM_PROCID / SLURM_NTASKS /
// SLURM_LOCALID / SLURM_NODEID with the first host of the step's node list as the rendezvous
// host. No LibTorch here.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_schema.hpp"

namespace gparity::runtime {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // the GPU this rank uses (--device cuda)
  int local_world_size = 1;  // ranks on this node; WORLD_SIZE when LOCAL_WORLD_SIZE is unset
  /// The node this rank runs on (torchrun's GROUP_RANK, SLURM_NODEID, gparity's --node-rank);
  /// -1 when the launcher does not say. Recorded in the run manifest so that a report can name a
  /// lost node with its ranks.
  int node_rank = -1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

/// Looks up an environment variable: nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

/// Reads the variables through `lookup`; a missing one takes the single-process default above, a
/// malformed one throws std::invalid_argument naming it. RANK wins over Slurm's variables (a
/// launcher inside an allocation sets it); MASTER_ADDR and MASTER_PORT win over the node list.
RankEnv rank_env_from(const EnvLookup& lookup);
/// rank_env_from(std::getenv).
RankEnv rank_env_from_environment();

/// The first host of a Slurm host list ("gpu[07-09,12],login1" -> "gpu07", zero padding kept);
/// throws std::invalid_argument on an empty or unbalanced list.
std::string first_slurm_host(std::string_view nodelist);

/// Tasks on node `node` from SLURM_TASKS_PER_NODE ("4(x2),3" -> 4, 4, 3); 0 when the list does
/// not reach that node or cannot be read.
int slurm_tasks_on_node(std::string_view tasks_per_node, int node);

/// This machine's host name.
std::string this_host();

/// This rank's entry of the manifest's "ranks": rank, local rank, node, this host and `device`.
model::RankInfo own_rank_info(const RankEnv& env, const std::string& device);
/// A RankInfo as one line of text for an exchange between ranks, and back. `rank` is the rank
/// that sent the text: an entry that does not parse still says which rank it is.
std::string rank_info_text(const model::RankInfo& info);
model::RankInfo rank_info_from_text(std::string_view text, int rank);

}  // namespace gparity::runtime
