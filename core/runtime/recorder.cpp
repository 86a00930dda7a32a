#include "core/runtime/recorder.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

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
#include <c10/cuda/CUDAException.h>
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

// ---- Profile: where the recorder's host time goes (GPARITY_RECORDER_PROFILE=1) ----

namespace {

enum class Phase : std::size_t {
  Poll,      // cudaEventQuery of pending steps' "done" events
  Wait,      // blocking on a step's "done" (a full queue, flush, a synchronous step after async ones)
  Read,      // the pinned words and scalars into the step record
  Write,     // step(): TraceWriter::write_step (JSON line, write, flush); async: the hand-off to its thread
  Release,   // dropping the tensors a collected step kept alive
  Prepare,   // device and alignment checks, placements, buffers (first step: their allocation)
  Order,     // the side stream waits for the training stream (event record + stream wait)
  Zero,      // cudaMemsetAsync of the step's device words
  Hash,      // enqueue_cuda: the hash kernels' launches
  Copy,      // cudaMemcpyAsync of the words and scalars into pinned memory
  Done,      // the step's "done" event record
  Fence,     // before_update: the training stream waits for the newest step's "done"
  SyncHash,  // step(): hash_blocks on the calling thread (waits for the device)
  Count
};
constexpr std::size_t kPhases = static_cast<std::size_t>(Phase::Count);
constexpr std::array<const char*, kPhases> kPhaseNames = {"poll",    "wait",  "read",     "write", "release",
                                                          "prepare", "order", "zero",     "hash",  "copy",
                                                          "done",    "fence", "sync_hash"};

bool profile_requested() {
  const char* v = std::getenv("GPARITY_RECORDER_PROFILE");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

}  // namespace

struct Recorder::Profile {
  using Phases = std::array<std::int64_t, kPhases>;
  Phases current{};                // phases since the last step ended
  std::int64_t current_total = 0;  // time inside the recorder's public calls since then
  std::vector<Phases> steps;
  std::vector<std::int64_t> totals;
  std::int64_t async_steps = 0, sync_steps = 0, full_queue_waits = 0;
  std::size_t max_pending = 0;

  void add(Phase phase, std::int64_t ns) { current[static_cast<std::size_t>(phase)] += ns; }
  void end_step(bool async) {
    steps.push_back(current);
    totals.push_back(current_total);
    current = {};
    current_total = 0;
    ++(async ? async_steps : sync_steps);
  }
  /// `thread_ns` / `thread_records`: the step writer's own time and records (async steps).
  void print(int rank, std::int64_t thread_ns, std::int64_t thread_records) const {
    std::fprintf(
        stderr,
        "gparity recorder profile, rank %d: %zu steps (%lld async, %lld sync), %lld waits for a full "
        "queue, at most %zu pending\n"
        "  step writer thread (JSON line, write, flush; off the training thread): %.1f us a record, "
        "%lld records\n"
        "  host us in the recorder per step: median of steps 2.., first step, after the last step\n",
        rank, steps.size(), static_cast<long long>(async_steps), static_cast<long long>(sync_steps),
        static_cast<long long>(full_queue_waits), max_pending,
        thread_records > 0 ? static_cast<double>(thread_ns) / 1e3 / static_cast<double>(thread_records) : 0.0,
        static_cast<long long>(thread_records));
    const auto row = [&](const char* name, const auto& value_of, std::int64_t tail) {
      std::vector<double> later;
      for (std::size_t s = 1; s < steps.size(); ++s) later.push_back(static_cast<double>(value_of(s)) / 1e3);
      const double first = steps.empty() ? 0.0 : static_cast<double>(value_of(0)) / 1e3;
      std::fprintf(stderr, "  %-10s %10.1f %10.1f %10.1f\n", name, median(later), first,
                   static_cast<double>(tail) / 1e3);
    };
    row(
        "total", [&](std::size_t s) { return totals[s]; }, current_total);
    for (std::size_t p = 0; p < kPhases; ++p) {
      std::int64_t sum = current[p];
      for (const auto& s : steps) sum += s[p];
      if (sum == 0) continue;
      row(
          kPhaseNames[p], [&](std::size_t s) { return steps[s][p]; }, current[p]);
    }
    std::fflush(stderr);
  }
};

namespace {

/// Adds the time from construction to destruction (or stop()) to one phase of the profile, if
/// any (a template: Recorder::Profile is private to the recorder).
template <class Profile>
class PhaseTimer {
 public:
  PhaseTimer(Profile* profile, Phase phase)
      : profile_(profile), phase_(phase), start_(profile ? now_ns() : 0) {}
  ~PhaseTimer() { stop(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  void stop() {
    if (profile_) profile_->add(phase_, now_ns() - start_);
    profile_ = nullptr;
  }

 private:
  Profile* profile_;
  Phase phase_;
  std::int64_t start_;
};

}  // namespace

// ---- Recorder ----

#if GPARITY_ASYNC_RECORDER
namespace {
/// A scalar (loss, grad norm) copied to the host by its bits: how they read back.
struct ScalarBits {
  model::DType dtype;
  std::size_t bytes;
};

/// Writes step records through `writer` on a thread of its own, in the order handed over: the
/// JSON line and its write and flush (0.03 to 0.16 ms a record on the H200 host, measured) leave
/// the training thread. Whoever else writes through `writer` calls settle() first. A write's
/// error is rethrown by the next submit() or settle(); the records after it are still tried.
class StepWriter {
 public:
  explicit StepWriter(model::TraceWriter& writer) : writer_(writer), thread_([this] { run(); }) {}
  ~StepWriter() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_one();
    thread_.join();  // after the last record handed over
  }
  StepWriter(const StepWriter&) = delete;
  StepWriter& operator=(const StepWriter&) = delete;

  void submit(model::StepRecord record) {
    {
      const std::lock_guard lock(mutex_);
      rethrow_error();
      queue_.push_back(std::move(record));
    }
    work_.notify_one();
  }
  void settle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
    rethrow_error();
  }
  /// The thread's time in write_step and the records it wrote.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> spent() {
    const std::lock_guard lock(mutex_);
    return {write_ns_, records_};
  }

 private:
  void rethrow_error() {  // under the lock
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopped, and everything written
      model::StepRecord record = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      std::exception_ptr error;
      const std::int64_t start = now_ns();
      try {
        writer_.write_step(record);
      } catch (...) {
        error = std::current_exception();
      }
      const std::int64_t spent = now_ns() - start;
      lock.lock();
      write_ns_ += spent;
      ++records_;
      if (error && !error_) error_ = error;
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  model::TraceWriter& writer_;
  std::mutex mutex_;
  std::condition_variable work_, idle_;
  std::deque<model::StepRecord> queue_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::int64_t write_ns_ = 0, records_ = 0;
  std::thread thread_;  // last: starts once the members above are made
};
}  // namespace

/// The asynchronous path's state. Steps are enqueued into a ring of kMaxPendingSteps slots and
/// collected oldest first; a slot is reused only after its "done" event has been observed, so
/// its part of the device words and of the pinned host buffer, its event and the tensors it
/// keeps alive (PyTorch's caching allocator could otherwise hand their memory to other work
/// while the side stream still reads it) are free by then.
struct Recorder::Async {
  struct Slot {
    model::StepRecord rec;
    std::vector<std::string> prefixes;     // one per hashed group, table_.size() tensors each
    std::vector<at::Tensor> tensors;       // the hashed tensors (kept alive; capacity reused)
    std::vector<at::Tensor> keep;          // scalars and contiguous copies, kept alive
    std::size_t hashed = 0;                // tensors hashed (2 words each)
    std::optional<ScalarBits> loss, norm;  // copied by their bits into the last two pinned words
    at::cuda::CUDAEvent done;
    bool training_waits = false;  // before_update() made the training stream wait on `done`
    std::int64_t cost_ns = 0;
  };
  Async(c10::cuda::CUDAStream side_stream, c10::DeviceIndex device_index, model::TraceWriter& writer)
      : side(side_stream), device(device_index), writes(writer) {}
  c10::cuda::CUDAStream side;
  c10::DeviceIndex device;
  at::cuda::CUDAEvent ready;  // re-recorded every step: the training stream's position
  std::array<Slot, kMaxPendingSteps> slots;
  std::size_t first = 0, count = 0;  // pending: slots[first], ... (count of them, ring order)
  // Per slot: `stride` words on the device; stride + 2 pinned words on the host (the last two:
  // the loss and grad norm bits). Reallocated (with nothing pending) only when a step needs more.
  std::size_t stride = 0;
  at::Tensor device_words, host_words;
  std::vector<Placed> placements;  // by position in the step's tensors; cleared by params()
  StepWriter writes;               // the only writer of step records while it exists

  Slot& oldest() { return slots[first]; }
  Slot& newest() { return slots[(first + count - 1) % kMaxPendingSteps]; }
  std::size_t next_index() const { return (first + count) % kMaxPendingSteps; }
  std::int64_t* host_slot(std::size_t index) {
    return host_words.data_ptr<std::int64_t>() + index * (stride + 2);
  }
};
#else
struct Recorder::Async {};
#endif

Recorder::Recorder(const std::filesystem::path& run_dir, int rank)
    : writer_(run_dir, rank),
      rank_(rank),
      profile_(profile_requested() ? std::make_unique<Profile>() : nullptr) {}

Recorder::~Recorder() {
  try {
    flush();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the trace keeps what it had
  }
#if GPARITY_ASYNC_RECORDER
  // Nothing enqueued may outlive the buffers it writes (a failed flush leaves steps pending).
  if (async_) {
    try {
      async_->side.synchronize();
    } catch (...) {  // NOLINT(bugprone-empty-catch): as above
    }
  }
#endif
  if (profile_) {
    std::pair<std::int64_t, std::int64_t> thread{0, 0};
#if GPARITY_ASYNC_RECORDER
    if (async_) thread = async_->writes.spent();
#endif
    profile_->print(rank_, thread.first, thread.second);
  }
}

void Recorder::params(std::vector<model::ParamInfo> table) {
  flush();  // a pending step is aligned with the table it was enqueued under
  table_ = std::move(table);
#if GPARITY_ASYNC_RECORDER
  if (async_) async_->placements.clear();  // they hold the old table's offsets
#endif
  writer_.write_params(model::ParamsRecord{table_, nlohmann::json::object()});
}

void Recorder::buckets(const model::BucketsRecord& plan) {
  settle_writes();
  writer_.write_buckets(plan);
}
void Recorder::devices(const model::DevicesRecord& devices) {
  settle_writes();
  writer_.write_devices(devices);
}
void Recorder::event(const model::EventRecord& event) {
  settle_writes();
  writer_.write_event(event);
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
  xxh.values.reserve(hashes.size());
  shard.values.reserve(hashes.size());
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
  drain(pending_steps());  // records stay in step order
  settle_writes();
  const std::int64_t own_start = now_ns();
  model::StepRecord rec;
  rec.step = t.step;
  {
    const PhaseTimer timer(profile_.get(), Phase::Read);
    if (t.loss) rec.loss = trace_scalar(*t.loss);
    if (t.grad_norm) rec.grad_norm = trace_scalar(*t.grad_norm);
  }
  {
    const PhaseTimer timer(profile_.get(), Phase::SyncHash);
    hash_all(t.params, "param", rec);
    hash_all(t.grads, "grad", rec);
    for (const auto& [name, states] : t.optim) hash_all(states, "optim." + name, rec);
  }
  const std::int64_t cost = now_ns() - own_start;
  rec.extra["recorder_ns"] = cost;
  {
    const PhaseTimer timer(profile_.get(), Phase::Write);
    writer_.write_step(rec);
  }
  if (profile_) {
    profile_->current_total += now_ns() - start;
    profile_->end_step(/*async=*/false);
  }
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

/// How a scalar the recorder copies to the host by its bits reads back (what trace_scalar
/// rejects, rejected here, at enqueue time).
ScalarBits scalar_bits(const at::Tensor& scalar) {
  if (scalar.numel() != 1) throw std::invalid_argument("trace_scalar: tensor has more than one element");
  const model::DType d = trace_dtype(scalar);
  if (scalar.element_size() > 8) throw std::invalid_argument("trace_scalar: element wider than 64 bits");
  return {d, static_cast<std::size_t>(scalar.element_size())};
}

model::TraceScalar scalar_from(const std::int64_t* word, const ScalarBits& scalar) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, word, scalar.bytes);
  return model::TraceScalar::from_bits(bits, scalar.dtype);
}

bool same_layout(const Placed& p, const at::Tensor& t) {
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  return std::equal(p.shape.begin(), p.shape.end(), sizes.begin(), sizes.end()) &&
         std::equal(p.stride.begin(), p.stride.end(), strides.begin(), strides.end());
}

}  // namespace

std::size_t Recorder::pending_steps() const noexcept {
  return async_ ? async_->count : 0;
}

std::int64_t Recorder::step_async(const StepTensors& t) {
  const auto device = one_cuda_device(t);
  if (!device) return step(t);
  const std::int64_t start = now_ns();
  Profile* const prof = profile_.get();
  if (async_ && async_->device != device->index()) {
    drain(async_->count);
    async_->writes.settle();
    async_->side.synchronize();
    async_.reset();
  }
  drain(0);  // every earlier step whose hashes are back: written now, oldest first
  const std::int64_t own_start = now_ns();
  PhaseTimer prepare(prof, Phase::Prepare);
  check_aligned(t.params, "param");
  check_aligned(t.grads, "grad");
  for (const auto& [name, states] : t.optim) check_aligned(states, "optim." + name);
  const auto loss_bits = t.loss ? std::optional(scalar_bits(*t.loss)) : std::nullopt;
  const auto norm_bits = t.grad_norm ? std::optional(scalar_bits(*t.grad_norm)) : std::nullopt;

  if (!async_)
    async_ = std::make_unique<Async>(c10::cuda::getStreamFromPool(false, device->index()), device->index(),
                                     writer_);
  Async& a = *async_;
  std::size_t groups = (t.params.empty() ? 0 : 1) + (t.grads.empty() ? 0 : 1);
  for (const auto& [name, states] : t.optim) groups += states.empty() ? 0 : 1;
  const std::size_t hashed = groups * table_.size();
  if (2 * hashed > a.stride || !a.host_words.defined()) {
    // Bigger buffers (the first step, or a bigger table): with nothing pending, as slots' data
    // moves. The words per slot only ever grow.
    prepare.stop();
    drain(a.count);
    PhaseTimer grow(prof, Phase::Prepare);
    a.stride = std::max(a.stride, 2 * hashed);
    a.first = 0;
    const c10::cuda::CUDAStreamGuard guard(a.side);  // the device words belong to the side stream
    a.device_words =
        at::empty({static_cast<std::int64_t>(std::max<std::size_t>(1, kMaxPendingSteps * a.stride))},
                  at::TensorOptions().dtype(at::kLong).device(*device));
    a.host_words = at::empty({static_cast<std::int64_t>(kMaxPendingSteps * (a.stride + 2))},
                             at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  }
  if (a.count == kMaxPendingSteps) {  // the host waits only here: too many steps out
    prepare.stop();
    if (prof) ++prof->full_queue_waits;
    drain(1);
  }
  prepare.stop();
  PhaseTimer placing(prof, Phase::Prepare);
  const std::size_t index = a.next_index();
  auto& s = a.slots[index];
  s.rec = model::StepRecord{};
  s.rec.step = t.step;
  s.prefixes.clear();
  s.tensors.clear();
  s.keep.clear();
  s.hashed = hashed;
  s.loss = loss_bits;
  s.norm = norm_bits;
  s.training_waits = false;
  if (a.placements.size() > hashed) a.placements.resize(hashed);
  const auto add_group = [&](std::span<const at::Tensor> group, std::string prefix) {
    if (group.empty()) return;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const std::size_t at_index = s.tensors.size();
      s.tensors.push_back(group[i]);
      if (at_index < a.placements.size() && same_layout(a.placements[at_index], group[i])) continue;
      auto p = placed(group[i], table_[i].local_offsets, table_[i].global_shape);
      if (at_index < a.placements.size())
        a.placements[at_index] = std::move(p);
      else
        a.placements.push_back(std::move(p));
    }
    s.prefixes.push_back(std::move(prefix));
  };
  add_group(t.params, "param");
  add_group(t.grads, "grad");
  for (const auto& [name, states] : t.optim) add_group(states, "optim." + name);
  placing.stop();

  const auto side = a.side;
  const auto training = c10::cuda::getCurrentCUDAStream(device->index());
  {
    const PhaseTimer timer(prof, Phase::Order);
    a.ready.record(training);
    a.ready.block(side);  // the side stream starts where the training stream is now
  }
  std::int64_t* const host = a.host_slot(index);
  try {
    const c10::cuda::CUDAStreamGuard guard(side);  // PyTorch's allocations and copies below go on `side`
    if (hashed > 0) {
      auto* words =
          reinterpret_cast<std::uint64_t*>(a.device_words.data_ptr<std::int64_t>()) + index * a.stride;
      {
        const PhaseTimer timer(prof, Phase::Zero);
        C10_CUDA_CHECK(cudaMemsetAsync(words, 0, 2 * hashed * sizeof(std::uint64_t), side.stream()));
      }
      {
        const PhaseTimer timer(prof, Phase::Hash);
        enqueue_cuda(s.tensors, a.placements, words, side.stream(), s.keep);
      }
      const PhaseTimer timer(prof, Phase::Copy);
      C10_CUDA_CHECK(cudaMemcpyAsync(host, words, 2 * hashed * sizeof(std::uint64_t), cudaMemcpyDeviceToHost,
                                     side.stream()));
    }
    {
      const PhaseTimer timer(prof, Phase::Copy);
      if (t.loss)
        C10_CUDA_CHECK(cudaMemcpyAsync(host + a.stride, t.loss->data_ptr(), t.loss->element_size(),
                                       cudaMemcpyDeviceToHost, side.stream()));
      if (t.grad_norm)
        C10_CUDA_CHECK(cudaMemcpyAsync(host + a.stride + 1, t.grad_norm->data_ptr(),
                                       t.grad_norm->element_size(), cudaMemcpyDeviceToHost, side.stream()));
    }
    const PhaseTimer timer(prof, Phase::Done);
    s.done.record(side);
  } catch (...) {
    side.synchronize();  // nothing enqueued may outlive the tensors it reads
    s.tensors.clear();
    s.keep.clear();
    throw;
  }
  // Their storage only: kept with its autograd graph, the loss would free the step's whole graph
  // when the recorder lets go of it (0.1 to 0.6 ms measured), which the loop pays anyway.
  if (t.loss) s.keep.push_back(t.loss->detach());
  if (t.grad_norm) s.keep.push_back(t.grad_norm->detach());
  ++a.count;
  const std::int64_t end = now_ns();
  s.cost_ns = end - own_start;  // earlier steps' collection above is charged to them
  if (prof) {
    prof->max_pending = std::max(prof->max_pending, a.count);
    prof->current_total += end - start;
    prof->end_step(/*async=*/true);
  }
  return end - start;
}

std::int64_t Recorder::before_update() {
  if (!async_ || async_->count == 0) return 0;
  const std::int64_t start = now_ns();
  auto& newest = async_->newest();
  if (!newest.training_waits) {
    // The side stream runs the steps in order: the newest one's event covers them all.
    const PhaseTimer timer(profile_.get(), Phase::Fence);
    newest.done.block(c10::cuda::getCurrentCUDAStream(async_->device));
    newest.training_waits = true;
  }
  newest.cost_ns += now_ns() - start;
  drain(0);
  const std::int64_t spent = now_ns() - start;
  if (profile_) profile_->current_total += spent;
  return spent;
}

std::int64_t Recorder::flush() {
  if (!async_) return 0;
  const std::int64_t start = now_ns();
  drain(async_->count);
  async_->writes.settle();
  const std::int64_t spent = now_ns() - start;
  if (profile_) profile_->current_total += spent;
  return spent;
}

void Recorder::drain(std::size_t wait_for) {
  if (!async_) return;
  Async& a = *async_;
  Profile* const prof = profile_.get();
  while (a.count > 0) {
    auto& s = a.oldest();
    const std::int64_t start = now_ns();
    if (wait_for > 0) {
      --wait_for;
      s.done.synchronize();
      if (prof) prof->add(Phase::Wait, now_ns() - start);
    } else {
      const bool done = s.done.query();
      if (prof) prof->add(Phase::Poll, now_ns() - start);
      if (!done) {
        s.cost_ns += now_ns() - start;
        return;
      }
    }
    const std::size_t index = a.first;
    // Off the queue first: a record is written at most once, even if writing throws.
    a.first = (a.first + 1) % kMaxPendingSteps;
    --a.count;
    PhaseTimer reading(prof, Phase::Read);
    const std::int64_t* host = a.host_slot(index);
    if (s.hashed > 0) {
      const auto hashes = unpack(host, s.hashed);
      for (std::size_t g = 0; g < s.prefixes.size(); ++g)
        add_hashes(std::span(hashes).subspan(g * table_.size(), table_.size()), s.prefixes[g], s.rec);
    }
    if (s.loss) s.rec.loss = scalar_from(host + a.stride, *s.loss);
    if (s.norm) s.rec.grad_norm = scalar_from(host + a.stride + 1, *s.norm);
    model::StepRecord rec = std::move(s.rec);
    reading.stop();
    rec.extra["recorder_ns"] = s.cost_ns + (now_ns() - start);
    rec.extra["recorder_async"] = true;
    {
      const PhaseTimer timer(prof, Phase::Release);
      s.tensors.clear();
      s.keep.clear();
    }
    const PhaseTimer timer(prof, Phase::Write);
    a.writes.submit(std::move(rec));
  }
}

void Recorder::settle_writes() {
  if (async_) async_->writes.settle();
}
#else
// Without CUDA hashing every step is recorded synchronously; nothing is ever pending.
std::size_t Recorder::pending_steps() const noexcept {
  return 0;
}
std::int64_t Recorder::step_async(const StepTensors& t) {
  return step(t);
}
std::int64_t Recorder::before_update() {
  return 0;
}
std::int64_t Recorder::flush() {
  return 0;
}
void Recorder::drain(std::size_t /*wait_for*/) {}
void Recorder::settle_writes() {}
#endif

}  // namespace gparity::runtime
