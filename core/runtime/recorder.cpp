#include "core/runtime/recorder.hpp"

#include <ATen/ATen.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

#if GPARITY_WITH_CUDA_HASH
#include "hash/cuda/shard_hash_cuda.hpp"
#endif

namespace gparity::runtime {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

model::DType trace_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return model::DType::F32;
    case at::kBFloat16: return model::DType::BF16;
    case at::kHalf: return model::DType::F16;
    case at::kDouble: return model::DType::F64;
    case at::kLong: return model::DType::I64;
    case at::kInt: return model::DType::I32;
    case at::kShort: return model::DType::I16;
    case at::kChar: return model::DType::I8;
    case at::kByte: return model::DType::U8;
    case at::kBool: return model::DType::Bool;
    default: throw std::invalid_argument(std::string("unsupported dtype ") + at::toString(t.scalar_type()));
  }
}

model::TraceScalar trace_scalar(const at::Tensor& scalar) {
  const auto t = scalar.detach().to(at::kCPU).contiguous();
  if (t.numel() != 1) throw std::invalid_argument("trace_scalar: tensor has more than one element");
  const model::DType d = trace_dtype(t);
  std::uint64_t bits = 0;
  std::memcpy(&bits, t.data_ptr(), t.element_size());
  return model::TraceScalar::from_bits(bits, d);
}

BlockHashes hash_block(const at::Tensor& local, std::span<const std::int64_t> offsets,
                       std::span<const std::int64_t> global_shape) {
  const auto sizes = local.sizes();
  const auto strides = local.strides();
  const std::vector<std::int64_t> shape(sizes.begin(), sizes.end());
  const std::vector<std::int64_t> stride(strides.begin(), strides.end());
  const std::vector<std::int64_t> zeros(shape.size(), 0);
  const hash::GlobalPlacement placement{
      offsets.empty() ? std::span<const std::int64_t>(zeros) : offsets,
      global_shape.empty() ? std::span<const std::int64_t>(shape) : global_shape};
  if (local.is_cuda()) {
#if GPARITY_WITH_CUDA_HASH
    const hash::BlockView device_view{static_cast<const std::byte*>(local.data_ptr()),
                                      static_cast<std::size_t>(local.element_size()), shape, stride};
    const std::uint64_t shard = hash::shard_hash_cuda(device_view, placement);
    // No XXH3 kernel yet: the layout fingerprint still goes through a host copy of this block.
    const at::Tensor host = local.cpu().contiguous();
    const hash::BlockView host_view{static_cast<const std::byte*>(host.data_ptr()),
                                    static_cast<std::size_t>(host.element_size()), shape, {}};
    return {hash::xxh3_64(host_view), shard};
#else
    throw std::invalid_argument("this build cannot hash CUDA tensors (configure with GPARITY_WITH_CUDA)");
#endif
  }
  if (!local.device().is_cpu()) throw std::invalid_argument("hash_block: tensor is neither on CPU nor CUDA");
  const hash::BlockView view{static_cast<const std::byte*>(local.data_ptr()),
                             static_cast<std::size_t>(local.element_size()), shape, stride};
  return {hash::xxh3_64(view), hash::shard_hash(view, placement)};
}

Recorder::Recorder(const std::filesystem::path& run_dir, int rank) : writer_(run_dir, rank) {}

void Recorder::params(std::vector<model::ParamInfo> table) {
  table_ = std::move(table);
  writer_.write_params(model::ParamsRecord{table_, nlohmann::json::object()});
}

void Recorder::hash_all(std::span<const at::Tensor> tensors, const std::string& prefix,
                        model::StepRecord& out) const {
  if (tensors.empty()) return;
  if (tensors.size() != table_.size())
    throw std::invalid_argument(prefix + " hashes: " + std::to_string(tensors.size()) + " tensors for " +
                                std::to_string(table_.size()) + " parameters");
  model::HashArray xxh{prefix + ".xxh3", {}};
  model::HashArray shard{prefix + ".shard", {}};
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& info = table_[i];
    const auto h = hash_block(tensors[i], info.local_offsets, info.global_shape);
    xxh.values.push_back(h.xxh3);
    // A replicated block counted by another rank contributes nothing to the cross-rank sum.
    shard.values.push_back(info.counts ? h.shard : 0);
  }
  out.hashes.push_back(std::move(xxh));
  out.hashes.push_back(std::move(shard));
}

std::int64_t Recorder::step(const StepTensors& t) {
  const std::int64_t start = now_ns();
  model::StepRecord rec;
  rec.step = t.step;
  if (t.loss) rec.loss = trace_scalar(*t.loss);
  if (t.grad_norm) rec.grad_norm = trace_scalar(*t.grad_norm);
  hash_all(t.params, "param", rec);
  hash_all(t.grads, "grad", rec);
  for (const auto& [name, states] : t.optim) hash_all(states, "optim." + name, rec);
  const std::int64_t cost = now_ns() - start;
  rec.extra["recorder_ns"] = cost;
  writer_.write_step(rec);
  return cost;
}

}  // namespace gparity::runtime
