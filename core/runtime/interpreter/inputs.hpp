#pragma once
// Values for a graph's placeholders (docs/replay.md, "Inputs"): read by placeholder name from a
// safetensors file, or generated from the placeholder's annotation by a deterministic rule that
// does not depend on LibTorch's random generators, so every LibTorch release, every rank and
// Python (samples/replay/fx_check.py) produce the same bits:
//
//   key    = splitmix64(seed ^ fnv1a64(name) ^ (per-rank ? splitmix64(rank + 1) : 0))
//   x_i    = splitmix64(key + (i + 1) * 0x9E3779B97F4A7C15)       (i: row-major element index)
//   float  : ((x_i >> 40) * 2^-23) - 1  as float32 (exact: uniform on [-1, 1) in steps of 2^-23),
//            then rounded to the placeholder's dtype (round to nearest even)
//   int    : 0, or with --int-range LO:HI, LO + x_i mod (HI - LO)
//   bool   : false, or with --int-range, (LO + x_i mod (HI - LO)) != 0
// The values fill the placeholder's shape in row-major order, laid out with its annotated strides.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/model/graph/graph.hpp"

namespace at {
class Tensor;
}
namespace gparity::model {
class SafetensorsFile;
}

namespace gparity::runtime {

struct InputOptions {
  std::string safetensors;  // empty: generate every input
  std::uint64_t seed = 0;
  std::optional<std::pair<std::int64_t, std::int64_t>> int_range;
  bool per_rank = false;
  int rank = 0;
};

/// splitmix64's finalizer of x + golden ratio, as in Vigna's reference code.
std::uint64_t splitmix64(std::uint64_t x) noexcept;
std::uint64_t fnv1a64(std::string_view text) noexcept;

class InputSource {
 public:
  /// Opens and validates the safetensors file, if any (throws model::InputError).
  explicit InputSource(InputOptions options);
  ~InputSource();
  InputSource(const InputSource&) = delete;
  InputSource& operator=(const InputSource&) = delete;

  /// The value of placeholder `name` with annotation `meta` (sizes resolved to `sizes`), on
  /// `device`. Throws ReplayError (with `where` in front) when the file lacks it or disagrees
  /// with the annotation, or when it must be generated and has no tensor annotation.
  at::Tensor tensor(std::string_view name, const model::TensorMeta& meta,
                    const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides,
                    const std::string& device, const std::string& where);
  /// The file's tensor named `name`, when a file was given and holds it (for placeholders
  /// without annotation). Its shape is the file's.
  std::optional<at::Tensor> from_file(std::string_view name, const std::string& device);
  [[nodiscard]] bool has_file() const noexcept { return file_ != nullptr; }

 private:
  InputOptions options_;
  std::unique_ptr<model::SafetensorsFile> file_;
};

/// The generated value (contiguous, CPU) for a placeholder, by the rule above.
at::Tensor generate_input(std::string_view name, model::DType dtype, const std::vector<std::int64_t>& sizes,
                          const InputOptions& options);

}  // namespace gparity::runtime
