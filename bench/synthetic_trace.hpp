#pragma once
// Synthetic trace v1 runs for the benchmarks that compare runs at scale (compare_bench.cpp,
// scale_runs_bench.cpp): sizes from the environment, and per step a random param.xxh3 and
// param.shard array, a falling loss and a constant grad norm.

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/model/run/trace_writer.hpp"

namespace gparity::bench {

/// The integer in environment variable `name`, or `fallback` when it is not set.
inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

/// Writes steps 1..`steps`: `params` random values (std::mt19937_64 seeded with `seed`) in each of
/// param.xxh3 and param.shard, loss `loss_scale` / step, grad norm 0.5. `plant(step, record)` may
/// change a step's record before it is written.
template <typename Plant>
void write_random_steps(model::TraceWriter& w, std::uint64_t seed, int steps, int params, float loss_scale,
                        Plant plant) {
  std::mt19937_64 rng(seed);
  model::StepRecord s;
  s.hashes = {{"param.xxh3", std::vector<std::uint64_t>(static_cast<std::size_t>(params))},
              {"param.shard", std::vector<std::uint64_t>(static_cast<std::size_t>(params))}};
  for (int step = 1; step <= steps; ++step) {
    s.step = step;
    s.loss = model::TraceScalar::from_f32(loss_scale / static_cast<float>(step));
    s.grad_norm = model::TraceScalar::from_f32(0.5F);
    for (auto& h : s.hashes) {
      for (auto& v : h.values) v = rng();
    }
    plant(step, s);
    w.write_step(s);
  }
}

inline void write_random_steps(model::TraceWriter& w, std::uint64_t seed, int steps, int params,
                               float loss_scale) {
  write_random_steps(w, seed, steps, params, loss_scale, [](int, model::StepRecord&) {});
}

}  // namespace gparity::bench
