#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/runtime/clock.hpp"
#include "core/runtime/recorder.hpp"
#include "core/runtime/recorder_graph.hpp"
#include "core/runtime/recorder_internal.hpp"
#include "core/runtime/recorder_profile.hpp"
#include "core/runtime/recorder_step_writer.hpp"

#if GPARITY_ASYNC_RECORDER
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

// The Recorder (recorder.hpp): synchronous steps, and the asynchronous path's queue of pending
// steps (side stream, reused device and pinned words, the step writer thread).

namespace gparity::runtime {

using detail::Phase;
using detail::PhaseTimer;
using detail::profile_requested;
using detail::StepWriter;
#if GPARITY_ASYNC_RECORDER
using detail::enqueue_cuda;
using detail::placed;
using detail::Placed;
using detail::unpack;
#endif

// ---- Recorder ----

#if GPARITY_ASYNC_RECORDER
namespace {
/// A scalar (loss, grad norm) copied to the host by its bits: how they read back.
struct ScalarBits {
  model::DType dtype;
  std::size_t bytes;
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
    bool graph = false;           // its hashes were launched as a captured graph
    std::int64_t cost_ns = 0;
  };
  Async(c10::cuda::CUDAStream side_stream, c10::DeviceIndex device_index, model::TraceWriter& writer)
      : side(side_stream),
        device(device_index),
        graphs(detail::step_graph_mode_from_env(), kMaxPendingSteps),
        writes(writer) {}
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
  detail::StepGraphs graphs;       // the captured step hashing, per slot; reset by params()
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
    if (async_) {
      thread = async_->writes.spent();
      const auto& g = async_->graphs;
      profile_->graphs = std::string(detail::step_graph_mode_name(g.mode())) + ", " +
                         std::to_string(g.captures()) + " captures" + (g.given_up() ? ", given up" : "");
    }
#endif
    profile_->print(rank_, thread.first, thread.second);
  }
}

void Recorder::params(std::vector<model::ParamInfo> table) {
  flush();  // a pending step is aligned with the table it was enqueued under
  table_ = std::move(table);
#if GPARITY_ASYNC_RECORDER
  if (async_) {
    async_->placements.clear();  // they hold the old table's offsets
    async_->graphs.reset();      // and so do the graphs' kernels
  }
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
  s.graph = false;
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
      auto* const base = reinterpret_cast<std::uint64_t*>(a.device_words.data_ptr<std::int64_t>());
      const std::size_t bytes = 2 * hashed * sizeof(std::uint64_t);
      // The step's device-side hashing: its words zeroed, hashed into, copied to `to` (if any);
      // `phases`: where its host time goes (null inside a capture, which is timed as a whole).
      const auto hash_into = [&](std::uint64_t* words, std::int64_t* to, Profile* phases) {
        {
          const PhaseTimer timer(phases, Phase::Zero);
          C10_CUDA_CHECK(cudaMemsetAsync(words, 0, bytes, side.stream()));
        }
        {
          const PhaseTimer timer(phases, Phase::Hash);
          enqueue_cuda(s.tensors, a.placements, words, side.stream(), s.keep);
        }
        if (to == nullptr) return;
        const PhaseTimer timer(phases, Phase::Copy);
        C10_CUDA_CHECK(cudaMemcpyAsync(to, words, bytes, cudaMemcpyDeviceToHost, side.stream()));
      };
      auto& graphs = a.graphs;
      if (!graphs.given_up()) {
        const PhaseTimer timer(prof, Phase::Prepare);
        const std::uintptr_t buffers[] = {reinterpret_cast<std::uintptr_t>(base),
                                          reinterpret_cast<std::uintptr_t>(a.host_words.data_ptr()),
                                          a.stride};
        s.graph = graphs.observe(s.tensors, buffers);
      }
      // Staging: one graph hashes into the first slot's words, copied to this slot's pinned
      // words after it; per slot: each slot's graph hashes into its own words and copies them.
      const bool staging = graphs.mode() == detail::StepGraphMode::Staging;
      std::uint64_t* const graph_words = staging ? base : base + index * a.stride;
      if (s.graph && !graphs.ready(index)) {
        const PhaseTimer timer(prof, Phase::Capture);
        s.graph = graphs.capture(index, side.stream(),
                                 [&] { hash_into(graph_words, staging ? nullptr : host, nullptr); });
      }
      if (s.graph) {
        {
          const PhaseTimer timer(prof, Phase::Graph);
          graphs.launch(index, side.stream());
        }
        if (staging) {
          const PhaseTimer timer(prof, Phase::Copy);
          C10_CUDA_CHECK(cudaMemcpyAsync(host, graph_words, bytes, cudaMemcpyDeviceToHost, side.stream()));
        }
      } else {
        hash_into(base + index * a.stride, host, prof);
      }
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
    if (s.graph) rec.extra["recorder_graph"] = true;
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
