#include <ATen/ATen.h>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/runtime/recorder.hpp"
#include "core/runtime/recorder_internal.hpp"

#if GPARITY_WITH_CUDA_HASH
#include "hash/cuda/launch_plan.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"
#include "hash/cuda/xxh3_host.hpp"
#endif
#if GPARITY_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

// DeferredHashes (hashes of a stream of CUDA tensors read back at once: a replayed graph's nodes)
// and PriorityStreamScope (recorder.hpp).

namespace gparity::runtime {

#if GPARITY_WITH_CUDA_HASH
using detail::contiguous_bytes;
using detail::current_stream;
using detail::hash_words;
using detail::placed;
using detail::Placed;
using detail::unpack;
using detail::words_of;
#endif

struct DeferredHashes::Impl {
  DeferredHashOptions opt;
  std::vector<at::Tensor> chunks;  // 2 words a slot, on the device
  std::vector<std::size_t> used;   // slots used per chunk
  /// (chunk, slot) of each tensor, in enqueue order: a batch's tensors with XXH3 take the slots
  /// after those without, so that each kind is one strided run of words.
  std::vector<std::pair<std::size_t, std::size_t>> where;
#if GPARITY_WITH_CUDA_HASH
  /// XXH3 finished on the host (DeferredHashOptions::host_xxh3_chains): per tensor in `where`,
  /// its digest's position in host_xxh3.finish(), or -1 (none, or its XXH3 is in the words).
  hash::Xxh3HostDigests host_xxh3;
  std::vector<std::int64_t> host_digest;
#endif
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
  std::vector<int> xxh3_of(tensors.size());  // 1: the tensor gets XXH3 (group 1)
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    xxh3_of[i] = im.opt.xxh3 || (!xxh3_too.empty() && xxh3_too[i] != 0) ? 1 : 0;
    group[xxh3_of[i]].push_back(tensors[i]);
    placements[xxh3_of[i]].push_back(placed(tensors[i], {}, {}));
  }
  const std::size_t chunk = im.chunks.size() - 1;
  const std::size_t base = im.used.back();
  std::size_t next[2] = {base, base + group[0].size()};
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    im.where.emplace_back(chunk, next[xxh3_of[i]]++);
    im.host_digest.push_back(-1);
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
      if (im.opt.host_xxh3_chains && !group[1].empty() && !hash::cuda_detail::stream_capturing(stream)) {
    // XXH3's block sums and tails first, so that their copy to the host (on the side stream)
    // runs beside the shard kernels; then the shard hash of the whole batch in one call. Host
    // threads walk the chains once the copy lands and collect() waits for them: nothing on this
    // stream does. Contiguous copies for XXH3 are freed after the enqueue, as below.
    std::vector<at::Tensor> keep;
    std::vector<hash::DeviceBytes> bytes;
    bytes.reserve(group[1].size());
    for (const auto& t : group[1]) bytes.push_back(contiguous_bytes(t, keep));
    auto digest =
        static_cast<std::int64_t>(im.host_xxh3.enqueue(bytes, stream, hash::cuda_detail::side_stream()));
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (xxh3_of[i] != 0) im.host_digest[first + i] = digest++;
    std::vector<at::Tensor> all(group[0]);
    all.insert(all.end(), group[1].begin(), group[1].end());
    std::vector<Placed> all_placements(placements[0]);
    all_placements.insert(all_placements.end(), placements[1].begin(), placements[1].end());
    enqueue_cuda(all, all_placements, words, stream, keep, /*xxh3=*/false, im.opt.spec);
  } else {
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
  if (impl_->host_xxh3.pending() > 0) {
    const auto digests = impl_->host_xxh3.finish();
    for (std::size_t i = 0; i < out.size(); ++i)
      if (impl_->host_digest[i] >= 0)
        out[i].xxh3 = digests.at(static_cast<std::size_t>(impl_->host_digest[i]));
  }
  impl_->host_digest.clear();
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

}  // namespace gparity::runtime
