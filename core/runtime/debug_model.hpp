#pragma once
// The built-in debug model of `gparity run`: a small Llama-style transformer (token embedding,
// per block RMSNorm + causal multi-head attention + RMSNorm + SiLU-gated MLP, final RMSNorm,
// output head), written as plain ATen calls over a flat list of parameters so the runner can
// shard, gather and hash them itself. Parameter names follow torchtitan's Llama.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/runtime/fsdp_plan.hpp"

namespace at {
class Tensor;
}

namespace gparity::runtime {

struct DebugModelConfig {
  std::int64_t vocab = 256;
  std::int64_t dim = 64;
  std::int64_t layers = 2;
  std::int64_t heads = 4;
  std::int64_t hidden = 128;  // MLP width
  std::int64_t seq_len = 32;
  std::int64_t batch = 4;  // sequences per rank per step
  double norm_eps = 1e-5;
};

/// Throws std::invalid_argument naming the first bad size.
void validate(const DebugModelConfig& cfg);

/// Parameters in registration order (as torchtitan's Llama registers them).
std::vector<ParamDef> debug_model_params(const DebugModelConfig& cfg);
/// Every parameter in the order the forward first uses it.
std::vector<std::string> debug_model_execution_order(const DebugModelConfig& cfg);
/// FSDP2 units (`fully_shard` on each block, then the root), in reduce-scatter issue order:
/// backward reaches the last block first, the root's reduce-scatter runs last.
std::vector<ParamGroup> debug_model_groups(const DebugModelConfig& cfg);

/// Initial value of one full parameter (float32, CPU), the same on every rank for a seed:
/// norms start at one, matrices at N(0, 0.02) from a generator keyed by seed and name.
at::Tensor debug_model_init(const ParamDef& def, std::uint64_t seed);

/// Synthetic batch of token ids [batch, seq_len + 1] (int64, CPU), a pure function of
/// (seed, rank, step) so any rank's data can be regenerated.
at::Tensor synthetic_tokens(const DebugModelConfig& cfg, std::uint64_t seed, int rank, std::int64_t step);

/// Mean next-token cross-entropy (float32 scalar) of the full parameters `params` (registration
/// order) on `tokens`. Builds the autograd graph when the parameters require grad.
at::Tensor debug_model_loss(const DebugModelConfig& cfg, std::span<const at::Tensor> params,
                            const at::Tensor& tokens);

}  // namespace gparity::runtime
