#include "core/runtime/recorder.hpp"

#include <ATen/ATen.h>

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/runtime/dtype_map.hpp"
#include "core/runtime/recorder_internal.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

#if GPARITY_WITH_CUDA_HASH
#include "hash/cuda/hash_pair_cuda.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"
#endif
#if GPARITY_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

// Hashing blocks where they live (hash_block, hash_blocks, hash_blocks_into) and the helpers the
// recorder's other sources share (recorder_internal.hpp). DeferredHashes: recorder_deferred.cpp;
// the Recorder: recorder_steps.cpp.

namespace gparity::runtime {
model::DType trace_dtype(const at::Tensor& t) {
  if (const auto d = to_dtype(t.scalar_type())) return *d;
  throw std::invalid_argument(std::string("unsupported dtype ") + at::toString(t.scalar_type()));
}

model::TraceScalar trace_scalar(const at::Tensor& scalar) {
  const auto t = scalar.detach().to(at::kCPU).contiguous();
  if (t.numel() != 1) throw std::invalid_argument("trace_scalar: tensor has more than one element");
  const model::DType d = trace_dtype(t);
  std::uint64_t bits = 0;
  std::memcpy(&bits, t.data_ptr(), t.element_size());
  return model::TraceScalar::from_bits(bits, d);
}

namespace detail {

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

BlockHashes hash_cpu(const at::Tensor& t, const Placed& p, hash::ShardSpec spec, bool xxh3) {
  const hash::BlockView view{static_cast<const std::byte*>(t.data_ptr()),
                             static_cast<std::size_t>(t.element_size()), p.shape, p.stride};
  return {xxh3 ? hash::xxh3_64(view) : 0,
          hash::shard_hash(view, hash::GlobalPlacement{p.offsets, p.global}, {.spec = spec})};
}

std::vector<BlockHashes> unpack(const std::int64_t* h, std::size_t n) {
  std::vector<BlockHashes> result(n);
  for (std::size_t i = 0; i < n; ++i)
    result[i] = {std::bit_cast<std::uint64_t>(h[2 * i]), std::bit_cast<std::uint64_t>(h[2 * i + 1])};
  return result;
}

#if GPARITY_WITH_CUDA_HASH
namespace {
/// enqueue_cuda's launches, given each block's view and placement.
void enqueue_views(std::span<const at::Tensor> tensors, std::span<const hash::BlockView> views,
                   std::span<const hash::GlobalPlacement> globals, std::uint64_t* words, void* stream,
                   std::vector<at::Tensor>& keep, bool xxh3, hash::ShardSpec spec,
                   const std::function<void()>& before_launch, std::uint32_t max_ctas) {
  std::vector<hash::DeviceBytes> bytes;
  if (xxh3) {
    bytes.reserve(tensors.size());
    for (const auto& t : tensors) bytes.push_back(contiguous_bytes(t, keep));
  }
  if (before_launch) before_launch();
  // PyTorch CUDA tensors and their buffers are device memory: no driver query per pointer.
  if (xxh3)
    hash::hash_pairs_cuda_batch(bytes, views, globals, words, 2, stream, /*check_pointers=*/false, spec,
                                max_ctas);
  else
    hash::shard_hash_cuda_batch(views, globals, words + 1, 2, stream, /*check_pointers=*/false, spec,
                                max_ctas);
}

hash::BlockView view_of(const at::Tensor& t, std::span<const std::int64_t> shape,
                        std::span<const std::int64_t> stride) {
  return {static_cast<const std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.element_size()), shape,
          stride};
}
}  // namespace

void enqueue_cuda(std::span<const at::Tensor> tensors, std::span<const Placed> placements,
                  std::uint64_t* words, void* stream, std::vector<at::Tensor>& keep, bool xxh3,
                  hash::ShardSpec spec, const std::function<void()>& before_launch, std::uint32_t max_ctas) {
  std::vector<hash::BlockView> views;
  std::vector<hash::GlobalPlacement> globals;
  views.reserve(tensors.size());
  globals.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& p = placements[i];
    views.push_back(view_of(tensors[i], p.shape, p.stride));
    globals.push_back({p.offsets, p.global});
  }
  enqueue_views(tensors, views, globals, words, stream, keep, xxh3, spec, before_launch, max_ctas);
}

void enqueue_whole_cuda(std::span<const at::Tensor> tensors, std::uint64_t* words, void* stream,
                        std::vector<at::Tensor>& keep, bool xxh3, hash::ShardSpec spec) {
  std::vector<hash::BlockView> views;
  views.reserve(tensors.size());
  for (const auto& t : tensors)
    views.push_back(
        view_of(t, {t.sizes().data(), t.sizes().size()}, {t.strides().data(), t.strides().size()}));
  const std::vector<hash::GlobalPlacement> whole(tensors.size());  // no offsets, no global shape
  enqueue_views(tensors, views, whole, words, stream, keep, xxh3, spec, {}, 0);
}

hash::DeviceBytes contiguous_bytes(const at::Tensor& t, std::vector<at::Tensor>& keep) {
  if (t.is_contiguous()) return {t.data_ptr(), t.nbytes()};
  keep.push_back(t.contiguous());
  return {keep.back().data_ptr(), keep.back().nbytes()};
}

void* current_stream(const at::Device& device) {
#if GPARITY_TORCH_CUDA
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
#else
  (void)device;
  return nullptr;
#endif
}

at::Tensor hash_words(std::int64_t blocks, const at::Device& device) {
  return at::zeros({2 * blocks}, at::TensorOptions().dtype(at::kLong).device(device));
}

std::uint64_t* words_of(const at::Tensor& words) {
  return reinterpret_cast<std::uint64_t*>(words.data_ptr<std::int64_t>());
}
#endif

}  // namespace detail

using detail::hash_cpu;
using detail::placed;
using detail::Placed;
#if GPARITY_WITH_CUDA_HASH
using detail::current_stream;
using detail::enqueue_cuda;
using detail::enqueue_whole_cuda;
using detail::hash_words;
using detail::unpack;
using detail::words_of;
#endif

namespace {
#if GPARITY_WITH_CUDA_HASH

/// Hashes CUDA blocks (all on one device) on the device's current stream and waits: only 16
/// bytes a block come back.
std::vector<BlockHashes> hash_cuda(std::span<const at::Tensor> tensors, std::span<const Placed> placements,
                                   hash::ShardSpec spec) {
  const auto device = tensors.front().device();
  const auto out = hash_words(static_cast<std::int64_t>(tensors.size()), device);
  std::vector<at::Tensor> keep;  // alive until the result is back
  enqueue_cuda(tensors, placements, words_of(out), current_stream(device), keep, /*xxh3=*/true, spec);
  const auto host = out.cpu();  // waits for the current stream
  return unpack(host.data_ptr<std::int64_t>(), tensors.size());
}
#endif
}  // namespace

std::vector<BlockHashes> hash_blocks(std::span<const at::Tensor> tensors,
                                     std::span<const std::span<const std::int64_t>> offsets,
                                     std::span<const std::span<const std::int64_t>> global_shapes,
                                     hash::ShardSpec spec) {
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
    result[i] = hash_cpu(t, p, spec);
  }
#if GPARITY_WITH_CUDA_HASH
  if (!on_gpu.empty()) {
    const auto gpu = hash_cuda(on_gpu, gpu_placed, spec);
    for (std::size_t k = 0; k < gpu.size(); ++k) result[gpu_index[k]] = gpu[k];
  }
#endif
  return result;
}

void hash_blocks_into(std::span<const at::Tensor> tensors, const at::Tensor& words, std::int64_t first,
                      bool xxh3, hash::ShardSpec spec) {
  if (words.scalar_type() != at::kLong || !words.is_contiguous() || first < 0 ||
      2 * (first + static_cast<std::int64_t>(tensors.size())) > words.numel())
    throw std::invalid_argument(
        "hash_blocks_into: words must be a contiguous int64 tensor with room for 2 words a tensor");
  for (const auto& t : tensors)
    if (t.device() != words.device())
      throw std::invalid_argument("hash_blocks_into: a tensor is not on the device of the hash words");
  if (tensors.empty()) return;
  if (words.is_cuda()) {
#if GPARITY_WITH_CUDA_HASH
    // As DeferredHashes: contiguous copies for XXH3 are freed after the enqueue; the caching
    // allocator hands their blocks out only to work ordered after the kernels on this stream.
    std::vector<at::Tensor> keep;
    enqueue_whole_cuda(tensors, words_of(words) + 2 * first, current_stream(words.device()), keep, xxh3,
                       spec);
    return;
#else
    throw std::invalid_argument("this build cannot hash CUDA tensors (configure with GPARITY_WITH_CUDA)");
#endif
  }
  if (!words.device().is_cpu())
    throw std::invalid_argument("hash_blocks_into: words are neither on CPU nor CUDA");
  auto* w = words.data_ptr<std::int64_t>() + 2 * first;
  for (const auto& t : tensors) {
    const auto h = hash_cpu(t, placed(t, {}, {}), spec, xxh3);
    *w++ = xxh3 ? std::bit_cast<std::int64_t>(h.xxh3) : 0;
    *w++ = std::bit_cast<std::int64_t>(h.shard);
  }
}

BlockHashes hash_block(const at::Tensor& local, std::span<const std::int64_t> offsets,
                       std::span<const std::int64_t> global_shape, hash::ShardSpec spec) {
  const std::span<const std::int64_t> o[1] = {offsets};
  const std::span<const std::int64_t> g[1] = {global_shape};
  return hash_blocks(std::span<const at::Tensor>(&local, 1), o, g, spec).front();
}

}  // namespace gparity::runtime
