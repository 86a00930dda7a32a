#include "core/runtime/recorder.hpp"

#include <ATen/ATen.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>

#include "core/runtime/clock.hpp"
#include "core/runtime/dtype_map.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

#if GPARITY_WITH_CUDA_HASH
#include "hash/cuda/hash_pair_cuda.hpp"
#include "hash/cuda/launch_plan.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"
#include "hash/cuda/xxh3_cuda.hpp"
#endif
#if GPARITY_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
// Asynchronous recording needs both the CUDA hash kernels and LibTorch's CUDA streams.
#define GPARITY_ASYNC_RECORDER (GPARITY_WITH_CUDA_HASH && GPARITY_TORCH_CUDA)

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

BlockHashes hash_cpu(const at::Tensor& t, const Placed& p, hash::ShardSpec spec = hash::ShardSpec::V1,
                     bool xxh3 = true) {
  const hash::BlockView view{static_cast<const std::byte*>(t.data_ptr()),
                             static_cast<std::size_t>(t.element_size()), p.shape, p.stride};
  return {xxh3 ? hash::xxh3_64(view) : 0,
          hash::shard_hash(view, hash::GlobalPlacement{p.offsets, p.global}, {.spec = spec})};
}

#if GPARITY_WITH_CUDA_HASH
/// Enqueues both hashes of every CUDA block (all on one device) on `stream`, one launch per
/// kernel where it can: block i's XXH3 into words[2i], its shard hash added into words[2i + 1]
/// (zeroed by the caller). Strided blocks are
/// made contiguous for XXH3 on PyTorch's current stream (the caller makes it `stream`); those
/// copies go into `keep`, which must outlive the stream's work.
/// `before_launch`, when given, runs after those copies and before the first kernel (a side
/// stream's wait for the current one); `max_ctas` caps the shard kernels' grids.
void enqueue_cuda(std::span<const at::Tensor> tensors, std::span<const Placed> placements,
                  std::uint64_t* words, void* stream, std::vector<at::Tensor>& keep, bool xxh3 = true,
                  hash::ShardSpec spec = hash::ShardSpec::V1, const std::function<void()>& before_launch = {},
                  std::uint32_t max_ctas = 0) {
  std::vector<hash::DeviceBytes> bytes;
  std::vector<hash::BlockView> views;
  std::vector<hash::GlobalPlacement> globals;
  bytes.reserve(tensors.size());
  views.reserve(tensors.size());
  globals.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const auto& p = placements[i];
    views.push_back({static_cast<const std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.element_size()),
                     p.shape, p.stride});
    globals.push_back({p.offsets, p.global});
    if (!xxh3) continue;
    if (t.is_contiguous()) {
      bytes.push_back({t.data_ptr(), t.nbytes()});
    } else {
      keep.push_back(t.contiguous());
      bytes.push_back({keep.back().data_ptr(), keep.back().nbytes()});
    }
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

/// The device's current stream, as the hash kernels take it.
void* current_stream(const at::Device& device) {
#if GPARITY_TORCH_CUDA
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
#else
  (void)device;
  return nullptr;
#endif
}

/// Zeroed words for `blocks` blocks' hashes on `device` (2 each: XXH3, shard hash).
at::Tensor hash_words(std::int64_t blocks, const at::Device& device) {
  return at::zeros({2 * blocks}, at::TensorOptions().dtype(at::kLong).device(device));
}

std::uint64_t* words_of(const at::Tensor& words) {
  return reinterpret_cast<std::uint64_t*>(words.data_ptr<std::int64_t>());
}

std::vector<BlockHashes> unpack(const std::int64_t* h, std::size_t n) {
  std::vector<BlockHashes> result(n);
  for (std::size_t i = 0; i < n; ++i)
    result[i] = {std::bit_cast<std::uint64_t>(h[2 * i]), std::bit_cast<std::uint64_t>(h[2 * i + 1])};
  return result;
}

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

struct DeferredHashes::Impl {
  DeferredHashOptions opt;
  std::vector<at::Tensor> chunks;  // 2 words a slot, on the device
  std::vector<std::size_t> used;   // slots used per chunk
  /// (chunk, slot) of each tensor, in enqueue order: a batch's tensors with XXH3 take the slots
  /// after those without, so that each kind is one strided run of words.
  std::vector<std::pair<std::size_t, std::size_t>> where;
#if GPARITY_ASYNC_RECORDER
  /// A side-stream batch: its tensors (and XXH3's contiguous copies) stay alive until `done`.
  struct InFlight {
    at::cuda::CUDAEvent done;
    std::vector<at::Tensor> keep;
  };
  std::optional<c10::cuda::CUDAStream> side;
  std::deque<InFlight> in_flight;
  std::uint32_t max_ctas = 0;
  bool side_pending = false;  // work on the side stream the current stream has not waited for

  /// Drops the batches whose hashes are done (their tensors may be freed now).
  void release_done() {
    while (!in_flight.empty() && in_flight.front().done.query()) in_flight.pop_front();
  }
#endif
};

DeferredHashes::DeferredHashes(bool xxh3, hash::ShardSpec spec)
    : DeferredHashes(DeferredHashOptions{.xxh3 = xxh3, .spec = spec}) {}

DeferredHashes::DeferredHashes(const DeferredHashOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
  if (!(options.side_share > 0 && options.side_share <= 1))
    throw std::invalid_argument("DeferredHashes: side_share must be in (0, 1]");
}

DeferredHashes::~DeferredHashes() {
#if GPARITY_ASYNC_RECORDER
  // Nothing the side stream still reads may be freed before it is done.
  try {
    for (auto& f : impl_->in_flight) f.done.synchronize();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
#endif
}

std::size_t DeferredHashes::enqueue(std::span<const at::Tensor> tensors,
                                    std::span<const std::uint8_t> xxh3_too) {
  const std::size_t first = impl_->where.size();
  if (tensors.empty()) return first;
  if (!xxh3_too.empty() && xxh3_too.size() != tensors.size())
    throw std::invalid_argument("DeferredHashes: one xxh3 flag a tensor");
#if GPARITY_WITH_CUDA_HASH
  const auto device = tensors.front().device();
  for (const auto& t : tensors)
    if (!t.is_cuda() || t.device() != device)
      throw std::invalid_argument("DeferredHashes: CUDA tensors of one device only");
  auto& im = *impl_;
  constexpr std::size_t kChunk = 4096;
  if (im.chunks.empty() ||
      im.used.back() + tensors.size() > static_cast<std::size_t>(im.chunks.back().numel() / 2) ||
      im.chunks.back().device() != device) {
    im.chunks.push_back(hash_words(static_cast<std::int64_t>(std::max(kChunk, tensors.size())), device));
    im.used.push_back(0);
  }
  // The batch in two groups, those without XXH3 first: each group is one call of the kernels.
  std::vector<at::Tensor> group[2];
  std::vector<Placed> placements[2];
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const int with = im.opt.xxh3 || (!xxh3_too.empty() && xxh3_too[i] != 0) ? 1 : 0;
    group[with].push_back(tensors[i]);
    placements[with].push_back(placed(tensors[i], {}, {}));
  }
  const std::size_t chunk = im.chunks.size() - 1;
  const std::size_t base = im.used.back();
  std::size_t next[2] = {base, base + group[0].size()};
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const int with = im.opt.xxh3 || (!xxh3_too.empty() && xxh3_too[i] != 0) ? 1 : 0;
    im.where.emplace_back(chunk, next[with]++);
  }
  std::uint64_t* words = words_of(im.chunks.back()) + 2 * base;
  void* stream = current_stream(device);
#if GPARITY_ASYNC_RECORDER
  if (im.opt.side_stream && !hash::cuda_detail::stream_capturing(stream)) {
    if (!im.side) im.side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    if (im.max_ctas == 0 && im.opt.side_share < 1) {
      const double share = im.opt.side_share * hash::shard_hash_cuda_resident_ctas();
      im.max_ctas = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(share + 0.5));
    }
    im.release_done();
    const auto compute = c10::cuda::getCurrentCUDAStream(device.index());
    const auto side = *im.side;
    // XXH3's contiguous copies are made on the current stream (in the graph's order), then the
    // side stream starts where the current stream is: once a group, after that group's copies.
    const std::function<void()> start_side = [&] {
      at::cuda::CUDAEvent ready;
      ready.record(compute);
      ready.block(side);
    };
    Impl::InFlight f;
    try {
      for (int with = 0; with < 2; ++with) {
        if (group[with].empty()) continue;
        enqueue_cuda(group[with], placements[with], words + 2 * (with == 0 ? 0 : group[0].size()),
                     side.stream(), f.keep, with == 1, im.opt.spec, start_side, im.max_ctas);
      }
      f.done.record(side);
    } catch (...) {
      side.synchronize();  // nothing enqueued may outlive the tensors it reads
      throw;
    }
    for (const auto& t : tensors) f.keep.push_back(t);
    im.in_flight.push_back(std::move(f));
    im.side_pending = true;
  } else
#endif
  {
    // Contiguous copies for XXH3 are freed after the enqueue: the caching allocator hands their
    // blocks out again only to work ordered after the kernels on this stream.
    std::vector<at::Tensor> keep;
    for (int with = 0; with < 2; ++with)
      if (!group[with].empty())
        enqueue_cuda(group[with], placements[with], words + 2 * (with == 0 ? 0 : group[0].size()), stream,
                     keep, with == 1, im.opt.spec);
  }
  im.used.back() += tensors.size();
  return first;
#else
  throw std::invalid_argument("this build cannot hash CUDA tensors (configure with GPARITY_WITH_CUDA)");
#endif
}

void DeferredHashes::wait_on_device() {
#if GPARITY_ASYNC_RECORDER
  auto& im = *impl_;
  if (!im.side_pending || !im.side) return;
  at::cuda::CUDAEvent joined;
  joined.record(*im.side);
  joined.block(c10::cuda::getCurrentCUDAStream(im.side->device_index()));
  im.side_pending = false;
#endif
}

std::vector<BlockHashes> DeferredHashes::collect() {
  std::vector<BlockHashes> out;
  out.reserve(impl_->where.size());
#if GPARITY_WITH_CUDA_HASH
  wait_on_device();  // the copies below go on the current stream
  std::vector<at::Tensor> host;
  host.reserve(impl_->chunks.size());
  for (const auto& c : impl_->chunks) host.push_back(c.cpu());  // waits for the current stream
  for (const auto& [chunk, slot] : impl_->where) {
    const auto part = unpack(host[chunk].data_ptr<std::int64_t>() + 2 * slot, 1);
    out.push_back(part.front());
  }
#endif
#if GPARITY_ASYNC_RECORDER
  for (auto& f : impl_->in_flight) f.done.synchronize();
  impl_->in_flight.clear();
#endif
  impl_->chunks.clear();
  impl_->used.clear();
  impl_->where.clear();
  return out;
}

#if GPARITY_ASYNC_RECORDER
struct PriorityStreamScope::Impl {
  c10::cuda::CUDAStream outer;
  c10::cuda::CUDAStream high;
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};
#else
struct PriorityStreamScope::Impl {};
#endif

PriorityStreamScope::PriorityStreamScope(const std::string& device, bool enabled) {
#if GPARITY_ASYNC_RECORDER
  if (!enabled) return;
  const at::Device d(device);
  if (!d.is_cuda()) return;
  const auto index = d.has_index() ? d.index() : c10::cuda::current_device();
  const auto outer = c10::cuda::getCurrentCUDAStream(index);
  if (hash::cuda_detail::stream_capturing(outer.stream())) return;
  auto high = c10::cuda::getStreamFromPool(/*isHighPriority=*/true, index);
  at::cuda::CUDAEvent start;
  start.record(outer);
  start.block(high);
  impl_.reset(
      new Impl{outer, high, std::nullopt});  // NOLINT(cppcoreguidelines-owning-memory): Impl cannot move
  impl_->guard.emplace(high);
#else
  (void)device;
  (void)enabled;
#endif
}

PriorityStreamScope::~PriorityStreamScope() {
#if GPARITY_ASYNC_RECORDER
  if (!impl_) return;
  try {
    at::cuda::CUDAEvent end;
    end.record(impl_->high);
    end.block(impl_->outer);
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
  impl_->guard.reset();
#endif
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
    std::vector<Placed> placements;
    placements.reserve(tensors.size());
    for (const auto& t : tensors) placements.push_back(placed(t, {}, {}));
    // As DeferredHashes: contiguous copies for XXH3 are freed after the enqueue; the caching
    // allocator hands their blocks out only to work ordered after the kernels on this stream.
    std::vector<at::Tensor> keep;
    enqueue_cuda(tensors, placements, words_of(words) + 2 * first, current_stream(words.device()), keep, xxh3,
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

#if GPARITY_ASYNC_RECORDER
struct Recorder::SideStream {
  c10::cuda::CUDAStream stream;
};

/// One enqueued step. Everything the side stream reads or writes is held here until `done` has
/// been observed, so PyTorch's caching allocator cannot hand that memory to other work first.
struct Recorder::Pending {
  model::StepRecord rec;
  std::vector<std::string> prefixes;  // one per hashed group, table_.size() tensors each
  at::Tensor words_host;              // pinned: 2 words per hashed tensor
  at::Tensor loss_host, norm_host;    // pinned copies of the scalars (undefined: not recorded)
  std::vector<at::Tensor> keep;
  at::cuda::CUDAEvent done;
  c10::DeviceIndex device = 0;
  bool training_waits = false;  // before_update() made the training stream wait on `done`
  std::int64_t cost_ns = 0;
};
#else
struct Recorder::SideStream {};
struct Recorder::Pending {};
#endif

Recorder::Recorder(const std::filesystem::path& run_dir, int rank) : writer_(run_dir, rank) {}

Recorder::~Recorder() {
  try {
    flush();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the trace keeps what it had
  }
}

void Recorder::params(std::vector<model::ParamInfo> table) {
  flush();  // a pending step is aligned with the table it was enqueued under
  table_ = std::move(table);
  writer_.write_params(model::ParamsRecord{table_, nlohmann::json::object()});
}

void Recorder::check_aligned(std::span<const at::Tensor> tensors, const std::string& prefix) const {
  if (!tensors.empty() && tensors.size() != table_.size())
    throw std::invalid_argument(prefix + " hashes: " + std::to_string(tensors.size()) + " tensors for " +
                                std::to_string(table_.size()) + " parameters");
}

void Recorder::hash_all(std::span<const at::Tensor> tensors, const std::string& prefix,
                        model::StepRecord& out) const {
  if (tensors.empty()) return;
  check_aligned(tensors, prefix);
  std::vector<std::span<const std::int64_t>> offsets, shapes;
  for (const auto& info : table_) {
    offsets.emplace_back(info.local_offsets);
    shapes.emplace_back(info.global_shape);
  }
  add_hashes(hash_blocks(tensors, offsets, shapes), prefix, out);
}

void Recorder::add_hashes(std::span<const BlockHashes> hashes, const std::string& prefix,
                          model::StepRecord& out) const {
  model::HashArray xxh{prefix + ".xxh3", {}};
  model::HashArray shard{prefix + ".shard", {}};
  for (std::size_t i = 0; i < hashes.size(); ++i) {
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
  flush();  // records stay in step order
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

#if GPARITY_ASYNC_RECORDER
namespace {

/// The CUDA device every given tensor lives on, or nullopt when any is elsewhere (or there are none).
std::optional<at::Device> one_cuda_device(const StepTensors& t) {
  std::optional<at::Device> device;
  bool ok = true;
  const auto visit = [&](const at::Tensor& x) {
    if (!x.is_cuda() || (device && *device != x.device())) ok = false;
    device = x.device();
  };
  if (t.loss) visit(*t.loss);
  if (t.grad_norm) visit(*t.grad_norm);
  for (const auto& x : t.params) visit(x);
  for (const auto& x : t.grads) visit(x);
  for (const auto& [name, states] : t.optim)
    for (const auto& x : states) visit(x);
  if (!ok) return std::nullopt;
  return device;
}

at::Tensor pinned_copy(const at::Tensor& device_scalar) {
  auto host = at::empty(device_scalar.sizes(), device_scalar.options().device(at::kCPU).pinned_memory(true));
  host.copy_(device_scalar, /*non_blocking=*/true);
  return host;
}

}  // namespace

std::int64_t Recorder::step_async(const StepTensors& t) {
  const auto device = one_cuda_device(t);
  if (!device) return step(t);
  const std::int64_t start = now_ns();
  const std::int64_t flushed = flush();
  check_aligned(t.params, "param");
  check_aligned(t.grads, "grad");
  for (const auto& [name, states] : t.optim) check_aligned(states, "optim." + name);

  if (!side_)
    side_ = std::make_unique<SideStream>(SideStream{c10::cuda::getStreamFromPool(false, device->index())});
  const auto side = side_->stream;
  const auto training = c10::cuda::getCurrentCUDAStream(device->index());
  auto p = std::make_unique<Pending>();
  p->rec.step = t.step;
  p->device = device->index();
  std::vector<at::Tensor> tensors;
  std::vector<Placed> placements;
  const auto add_group = [&](std::span<const at::Tensor> group, std::string prefix) {
    if (group.empty()) return;
    for (std::size_t i = 0; i < group.size(); ++i) {
      tensors.push_back(group[i]);
      placements.push_back(placed(group[i], table_[i].local_offsets, table_[i].global_shape));
    }
    p->prefixes.push_back(std::move(prefix));
  };
  add_group(t.params, "param");
  add_group(t.grads, "grad");
  for (const auto& [name, states] : t.optim) add_group(states, "optim." + name);

  at::cuda::CUDAEvent ready;
  ready.record(training);
  ready.block(side);  // the side stream starts where the training stream is now
  try {
    const c10::cuda::CUDAStreamGuard guard(side);  // PyTorch's allocations and copies below go on `side`
    if (!tensors.empty()) {
      auto words = hash_words(static_cast<std::int64_t>(tensors.size()), *device);
      enqueue_cuda(tensors, placements, words_of(words), side.stream(), p->keep);
      p->words_host = pinned_copy(words);
      p->keep.push_back(std::move(words));
    }
    if (t.loss) p->loss_host = pinned_copy(*t.loss);
    if (t.grad_norm) p->norm_host = pinned_copy(*t.grad_norm);
    p->done.record(side);
  } catch (...) {
    side.synchronize();  // nothing enqueued may outlive the tensors it reads
    throw;
  }
  for (auto& x : tensors) p->keep.push_back(std::move(x));
  if (t.loss) p->keep.push_back(*t.loss);
  if (t.grad_norm) p->keep.push_back(*t.grad_norm);
  const std::int64_t cost = now_ns() - start;
  p->cost_ns = cost - flushed;  // the flush is charged to the step it wrote
  pending_ = std::move(p);
  return cost;
}

std::int64_t Recorder::before_update() {
  if (!pending_) return 0;
  const std::int64_t start = now_ns();
  if (!pending_->training_waits) {
    pending_->done.block(c10::cuda::getCurrentCUDAStream(pending_->device));
    pending_->training_waits = true;
  }
  if (pending_->done.query()) {
    collect(now_ns() - start);
  } else {
    pending_->cost_ns += now_ns() - start;
  }
  return now_ns() - start;
}

std::int64_t Recorder::flush() {
  if (!pending_) return 0;
  const std::int64_t start = now_ns();
  pending_->done.synchronize();
  collect(now_ns() - start);
  return now_ns() - start;
}

void Recorder::collect(std::int64_t extra_ns) {
  auto p = std::move(pending_);  // gone even if writing throws: a record is written at most once
  p->done.synchronize();
  if (p->words_host.defined()) {
    const auto hashes = unpack(p->words_host.data_ptr<std::int64_t>(), p->words_host.numel() / 2);
    for (std::size_t g = 0; g < p->prefixes.size(); ++g)
      add_hashes(std::span(hashes).subspan(g * table_.size(), table_.size()), p->prefixes[g], p->rec);
  }
  if (p->loss_host.defined()) p->rec.loss = trace_scalar(p->loss_host);
  if (p->norm_host.defined()) p->rec.grad_norm = trace_scalar(p->norm_host);
  p->rec.extra["recorder_ns"] = p->cost_ns + extra_ns;
  p->rec.extra["recorder_async"] = true;
  writer_.write_step(p->rec);
}
#else
// Without CUDA hashing every step is recorded synchronously; nothing is ever pending.
std::int64_t Recorder::step_async(const StepTensors& t) {
  return step(t);
}
std::int64_t Recorder::before_update() {
  return 0;
}
std::int64_t Recorder::flush() {
  return 0;
}
void Recorder::collect(std::int64_t /*extra_ns*/) {}
#endif

}  // namespace gparity::runtime
