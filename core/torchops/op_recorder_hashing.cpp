// The op recorder: the step's hashes, enqueued on each tensor's device without a wait, and read
// back once when the step ends (op_recorder_state.hpp).

#include <ATen/core/grad_mode.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <ranges>

#include "core/runtime/recorder.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

constexpr std::int64_t kSlotsPerChunk = 1 << 15;  // hash slots per device buffer (2 int64 words each)

// Bounds of a batch: its tensors stay alive until their hashes go, so that memory the program
// lets go of (an output freed or reused by Inductor's `call`) is held until then: at most this
// many bytes of outputs. Inputs made before the step (parameters, optimizer state, the batch)
// are alive anyway and do not count: at dim 4096 the forward's weights alone would send a
// batch every two or three extern kernels (docs/ops.md, "Cost").
constexpr std::size_t kMaxPending = 4096;
constexpr std::int64_t kMaxPendingBytes = std::int64_t{256} << 20;

thread_local int batch_depth = 0;

/// The stream hashes of `device` go on now: its current stream (none for the CPU).
std::optional<c10::Stream> current_stream(const c10::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

/// The bytes `t` reads [lo, hi): from its first to its last element, or its whole storage when
/// its strides do not say (a negative stride); empty for an empty tensor.
std::pair<std::uintptr_t, std::uintptr_t> byte_range(const at::Tensor& t) {
  if (!t.has_storage() || t.numel() == 0) return {0, 0};
  const auto base = reinterpret_cast<std::uintptr_t>(t.storage().data());
  std::int64_t lo = 0, hi = 0;
  if (!element_range(t, lo, hi)) return {base, base + t.storage().nbytes()};
  const auto size = static_cast<std::uintptr_t>(t.element_size());
  return {base + static_cast<std::uintptr_t>(lo) * size, base + static_cast<std::uintptr_t>(hi + 1) * size};
}

/// A tensor of `t`'s bytes that nobody else holds: a new TensorImpl on `t`'s storage, made
/// without the dispatcher. A pending hash keeps this, not `t`: PyTorch decides by `t`'s use count
/// whether to steal or copy it (make_variable of a factory's result, AccumulateGrad of a
/// gradient), and the recorded program must be the unrecorded one.
at::Tensor unshared_alias(const at::Tensor& t) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(t.storage()),
      c10::DispatchKeySet(t.is_cuda() ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return at::Tensor(std::move(impl));
}

int device_words(State& s, const c10::Device& device) {
  for (std::size_t d = 0; d < s.devices.size(); ++d)
    if (s.devices[d].device == device) return static_cast<int>(d);
  s.devices.push_back(DeviceWords{device, {}, {}});
  return static_cast<int>(s.devices.size()) - 1;
}

/// Takes slots for todo[members...] (all on `device`) in the pending run, flushing first when they
/// cannot join it; outside a batch they go before hash_many returns.
template <class Members>
void take_slots(State& s, const std::vector<std::pair<std::size_t, at::Tensor>>& todo, const Members& members,
                std::int64_t n, const c10::Device& device, std::vector<TensorRef>& refs, bool outputs) {
  auto& p = s.pending;
  const int d = device_words(s, device);
  const auto stream = current_stream(device);
  auto& dw = s.devices[static_cast<std::size_t>(d)];
  const bool room = !dw.chunks.empty() && dw.used.back() + n <= dw.chunks.back().numel() / 2;
  // One pending run is one launch: one device, one stream, consecutive slots of one chunk.
  if (p.device >= 0 && (p.device != d || p.stream != stream || !room)) flush_hashes(s);
  if (!room) {
    at::DisableRecordFunctionGuard no_records;  // our own buffer is not the step's op
    dw.chunks.push_back(
        at::zeros({2 * std::max(kSlotsPerChunk, n)}, at::TensorOptions().dtype(at::kLong).device(device)));
    dw.used.push_back(0);
  }
  if (p.device < 0) {
    p.device = d;
    p.stream = stream;
    p.chunk = static_cast<int>(dw.chunks.size()) - 1;
    p.first = dw.used.back();
  }
  for (const auto j : members) {
    const auto& t = todo[j].second;
    auto& ref = refs[todo[j].first];
    ref.device = d;
    ref.chunk = p.chunk;
    ref.slot = dw.used.back()++;
    if (batch_depth == 0) {  // sent before hash_many returns: nothing can write it in between
      p.tensors.push_back(t);
      continue;
    }
    p.tensors.push_back(unshared_alias(t));
    p.ranges.push_back(byte_range(t));
    if (outputs) p.bytes += static_cast<std::int64_t>(t.nbytes());
  }
}

}  // namespace

void hash_many(State& s, const std::vector<std::pair<std::size_t, at::Tensor>>& todo,
               std::vector<TensorRef>& refs, bool outputs) {
  const SectionTimer timer(Section::hashes_asked);
  if (todo.empty()) return;
  const auto& p = s.pending;
  const auto first_device = todo.front().second.device();
  const bool one_device =
      std::all_of(todo.begin(), todo.end(), [&](const auto& e) { return e.second.device() == first_device; });
  if (one_device) {  // the usual case: no grouping
    take_slots(s, todo, std::views::iota(std::size_t{0}, todo.size()), static_cast<std::int64_t>(todo.size()),
               first_device, refs, outputs);
  } else {
    std::vector<bool> done(todo.size(), false);
    for (std::size_t i = 0; i < todo.size(); ++i) {
      if (done[i]) continue;
      const auto device = todo[i].second.device();
      std::vector<std::size_t> members;
      for (std::size_t j = i; j < todo.size(); ++j)
        if (!done[j] && todo[j].second.device() == device) {
          members.push_back(j);
          done[j] = true;
        }
      take_slots(s, todo, members, static_cast<std::int64_t>(members.size()), device, refs, outputs);
    }
  }
  if (batch_depth == 0 || p.tensors.size() >= kMaxPending || p.bytes >= kMaxPendingBytes) flush_hashes(s);
}

void flush_hashes(State& s) {
  const SectionTimer timer(Section::hashes_sent);
  auto& p = s.pending;
  if (p.device < 0) return;
  PendingHashes batch = std::move(p);
  p = PendingHashes{};
  auto& dw = s.devices[static_cast<std::size_t>(batch.device)];
  // Our own operator calls (XXH3's contiguous copies, the CPU hash's) are not the step's ops. The
  // shard hash of CUDA tensors makes none: it goes without the guard, whose construction and
  // destruction rebuild RecordFunction's thread-local callbacks (a launch's worth of host time).
  std::optional<at::DisableRecordFunctionGuard> no_records;
  if (s.options.xxh3 || !dw.device.is_cuda()) no_records.emplace();
  at::NoGradGuard no_grad;
  const auto spec = s.options.shard_spec == 2 ? hash::ShardSpec::V2 : hash::ShardSpec::V1;
  const auto& words = dw.chunks[static_cast<std::size_t>(batch.chunk)];
  // CUDA: on the stream the hashes were asked for on, so that any later write there comes after
  // them. (A side stream, tried for overlap, let an in-place write race the hash of what it
  // overwrote, and was slower where the step is short: docs/ops.md.)
  std::optional<c10::StreamGuard> on_stream;
  if (batch.stream) on_stream.emplace(*batch.stream);
  runtime::hash_blocks_into(batch.tensors, words, batch.first, s.options.xxh3, spec);
  // The next batch keeps the vectors' room; the tensors go now (their hashes are enqueued).
  batch.tensors.clear();
  batch.ranges.clear();
  p.tensors.swap(batch.tensors);
  p.ranges.swap(batch.ranges);
}

void flush_if_written(State& s, const std::vector<at::Tensor>& tensors, const std::vector<bool>& written) {
  auto& p = s.pending;
  if (p.device < 0) return;
  const auto device = s.devices[static_cast<std::size_t>(p.device)].device;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!written.empty() && !(i < written.size() && written[i])) continue;
    const auto& t = tensors[i];
    if (t.device() != device) continue;
    const auto [lo, hi] = byte_range(t);
    bool overlaps = false;
    for (const auto& [plo, phi] : p.ranges) overlaps = overlaps || (lo < phi && plo < hi);
    if (!overlaps) continue;
    const auto pending_stream = p.stream;
    flush_hashes(s);
    // A writer on another stream: it waits for the hashes of what it overwrites.
    const auto writer = current_stream(device);
    if (pending_stream && writer && *writer != *pending_stream) {
      c10::Event done(device.type());
      done.record(*pending_stream);
      done.block(*writer);
    }
    return;
  }
}

void enter_batch() {
  ++batch_depth;
}

void leave_batch() {
  if (batch_depth > 0) --batch_depth;
  if (batch_depth > 0) return;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  flush_hashes(s);
}

HashWords read_back(std::vector<DeviceWords>& devices) {
  HashWords words(devices.size());
  at::DisableRecordFunctionGuard no_records;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    for (std::size_t c = 0; c < devices[d].chunks.size(); ++c) {
      const auto host = devices[d].chunks[c].narrow(0, 0, 2 * devices[d].used[c]).cpu();
      const auto* p = host.data_ptr<std::int64_t>();
      words[d].emplace_back(p, p + host.numel());
    }
  }
  return words;
}

}  // namespace gparity::torchops::oprec_detail
