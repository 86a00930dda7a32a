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
#include "hash/cuda/xxh3_cuda.hpp"
#endif
#if GPARITY_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
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

namespace {

struct Placed {
  std::vector<std::int64_t> shape, stride, offsets, global;
};

Placed placed(const at::Tensor& t, std::span<const std::int64_t> offsets,
              std::span<const std::int64_t> global_shape) {
  Placed p;
  p.shape.assign(t.sizes().begin(), t.sizes().end());
  p.stride.assign(t.strides().begin(), t.strides().end());
  if (offsets.empty())
    p.offsets.assign(p.shape.size(), 0);
  else
    p.offsets.assign(offsets.begin(), offsets.end());
  if (global_shape.empty())
    p.global = p.shape;
  else
    p.global.assign(global_shape.begin(), global_shape.end());
  return p;
}

BlockHashes hash_cpu(const at::Tensor& t, const Placed& p) {
  const hash::BlockView view{static_cast<const std::byte*>(t.data_ptr()),
                             static_cast<std::size_t>(t.element_size()), p.shape, p.stride};
  return {hash::xxh3_64(view), hash::shard_hash(view, hash::GlobalPlacement{p.offsets, p.global})};
}

#if GPARITY_WITH_CUDA_HASH
/// Hashes CUDA blocks (all on one device) on the device: both hashes of every block are
/// enqueued on the current stream into one device array, and only that array (16 bytes a
/// block) comes back. Strided blocks are made contiguous on the device for XXH3 first.
std::vector<BlockHashes> hash_cuda(std::span<const at::Tensor> tensors, std::span<const Placed> placements) {
#if GPARITY_TORCH_CUDA
  void* stream = c10::cuda::getCurrentCUDAStream(tensors.front().device().index()).stream();
#else
  void* stream = nullptr;
#endif
  const auto n = static_cast<std::int64_t>(tensors.size());
  auto out = at::zeros({2 * n}, at::TensorOptions().dtype(at::kLong).device(tensors.front().device()));
  auto* words = reinterpret_cast<std::uint64_t*>(out.data_ptr<std::int64_t>());
  std::vector<at::Tensor> dense;  // alive until the result is back
  std::vector<hash::DeviceBytes> bytes;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const auto& p = placements[i];
    const hash::BlockView view{static_cast<const std::byte*>(t.data_ptr()),
                               static_cast<std::size_t>(t.element_size()), p.shape, p.stride};
    hash::shard_hash_cuda_accumulate(view, hash::GlobalPlacement{p.offsets, p.global}, words + 2 * i + 1,
                                     stream);
    dense.push_back(t.contiguous());
    bytes.push_back({dense.back().data_ptr(), dense.back().nbytes()});
  }
  hash::xxh3_64_cuda_batch(bytes, words, 2, stream);
  const auto host = out.cpu();  // waits for the current stream
  const auto* h = host.data_ptr<std::int64_t>();
  std::vector<BlockHashes> result(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    result[i] = {std::bit_cast<std::uint64_t>(h[2 * i]), std::bit_cast<std::uint64_t>(h[2 * i + 1])};
  return result;
}
#endif

}  // namespace

std::vector<BlockHashes> hash_blocks(std::span<const at::Tensor> tensors,
                                     std::span<const std::span<const std::int64_t>> offsets,
                                     std::span<const std::span<const std::int64_t>> global_shapes) {
  if ((!offsets.empty() && offsets.size() != tensors.size()) ||
      (!global_shapes.empty() && global_shapes.size() != tensors.size()))
    throw std::invalid_argument("hash_blocks: offsets/global shapes do not match the tensors");
  std::vector<BlockHashes> result(tensors.size());
  std::vector<at::Tensor> on_gpu;
  std::vector<Placed> gpu_placed;
  std::vector<std::size_t> gpu_index;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    Placed p = placed(t, offsets.empty() ? std::span<const std::int64_t>{} : offsets[i],
                      global_shapes.empty() ? std::span<const std::int64_t>{} : global_shapes[i]);
    if (t.is_cuda()) {
#if GPARITY_WITH_CUDA_HASH
      if (!on_gpu.empty() && on_gpu.front().device() != t.device())
        throw std::invalid_argument("hash_blocks: CUDA tensors on more than one device in one call");
      on_gpu.push_back(t);
      gpu_placed.push_back(std::move(p));
      gpu_index.push_back(i);
      continue;
#else
      throw std::invalid_argument("this build cannot hash CUDA tensors (configure with GPARITY_WITH_CUDA)");
#endif
    }
    if (!t.device().is_cpu()) throw std::invalid_argument("hash_block: tensor is neither on CPU nor CUDA");
    result[i] = hash_cpu(t, p);
  }
#if GPARITY_WITH_CUDA_HASH
  if (!on_gpu.empty()) {
    const auto gpu = hash_cuda(on_gpu, gpu_placed);
    for (std::size_t k = 0; k < gpu.size(); ++k) result[gpu_index[k]] = gpu[k];
  }
#endif
  return result;
}

BlockHashes hash_block(const at::Tensor& local, std::span<const std::int64_t> offsets,
                       std::span<const std::int64_t> global_shape) {
  const std::span<const std::int64_t> o[1] = {offsets};
  const std::span<const std::int64_t> g[1] = {global_shape};
  return hash_blocks(std::span<const at::Tensor>(&local, 1), o, g).front();
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
  std::vector<std::span<const std::int64_t>> offsets, shapes;
  for (const auto& info : table_) {
    offsets.emplace_back(info.local_offsets);
    shapes.emplace_back(info.global_shape);
  }
  const auto hashes = hash_blocks(tensors, offsets, shapes);
  model::HashArray xxh{prefix + ".xxh3", {}};
  model::HashArray shard{prefix + ".shard", {}};
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& info = table_[i];
    const auto& h = hashes[i];
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
