#pragma once
// What the recorder's tests share (recorder_test.cpp, recorder_graph_test.cpp): deterministic
// sample tensors, a params-table entry for a whole tensor, and the rank-0 trace of a run dir.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_schema.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::runtime::testing_support {

inline at::Tensor sample(std::vector<std::int64_t> shape, at::ScalarType dtype = at::kFloat) {
  return at::arange(at::IntArrayRef(shape).size() ? c10::multiply_integers(shape) : 1, at::kFloat)
      .mul(0.37)
      .sin()
      .reshape(shape)
      .to(dtype);
}

inline model::ParamInfo whole_param(const std::string& fqn, const at::Tensor& t) {
  model::ParamInfo info;
  info.fqn = fqn;
  info.global_shape.assign(t.sizes().begin(), t.sizes().end());
  info.local_offsets.assign(t.dim(), 0);
  info.local_shape = info.global_shape;
  info.placements = {model::Placement{model::Placement::Kind::Replicate, 0}};
  return info;
}

inline model::RankTrace read_trace(const testing::TempDir& dir) {
  return model::read_rank_trace(model::rank_trace_path(dir.path(), 0).string(), 0);
}

}  // namespace gparity::runtime::testing_support
