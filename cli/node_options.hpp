#pragma once
// `--nnodes --node-rank --master-addr --master-port` for the commands that start ranks (`run`,
// `replay`): with --nproc, this node's launcher starts its ranks of a run across nodes; without,
// the process is one rank (torchrun, srun) and the address and port override MASTER_ADDR /
// MASTER_PORT (or Slurm's first host) for the rendezvous.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/runtime/launcher.hpp"

namespace gparity::cli {

struct NodeOptions {
  runtime::NodeLayout layout;

  void add_to(CLI::App* cmd) {
    const char* group = "Across nodes (docs/runtime.md)";
    cmd->add_option("--nnodes", layout.nnodes, "Nodes of the run; each node runs this command with --nproc")
        ->check(CLI::Range(1, 1 << 20))
        ->group(group);
    cmd->add_option("--node-rank", layout.node_rank,
                    "This node (0 .. nnodes-1): its ranks are node-rank x nproc + 0 .. nproc-1")
        ->check(CLI::NonNegativeNumber)
        ->group(group);
    cmd->add_option("--master-addr", layout.master_addr,
                    "Address of node 0, where rank 0 hosts the rendezvous store")
        ->group(group);
    cmd->add_option("--master-port", layout.master_port, "Free TCP port on node 0 for the rendezvous store")
        ->check(CLI::Range(1, 65535))
        ->group(group);
  }

  /// Before the command runs: a launcher's layout must be whole (std::invalid_argument naming
  /// what is missing); a single rank takes --master-addr / --master-port into its environment.
  void apply(bool launching) const {
    if (launching) {
      runtime::validate(layout);
      return;
    }
    if (layout.nnodes != 1 || layout.node_rank != 0)
      throw std::invalid_argument(
          "--nnodes and --node-rank need --nproc (this node's launcher); under torchrun or srun the "
          "launcher says where each rank runs");
    if (!layout.master_addr.empty()) setenv("MASTER_ADDR", layout.master_addr.c_str(), 1);
    if (layout.master_port > 0) setenv("MASTER_PORT", std::to_string(layout.master_port).c_str(), 1);
  }
};

}  // namespace gparity::cli
