// The op recorder: the step's hashes, enqueued on each tensor's device without a wait, and read
// back once when the step ends (op_recorder_state.hpp).

#include <ATen/core/grad_mode.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <cstdlib>

#include "core/runtime/recorder.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

constexpr std::int64_t kSlotsPerChunk = 1 << 15;  // hash slots per device buffer (2 int64 words each)

/// GPARITY_OPREC_SIDE_STREAM=1 hashes on a side stream. Off by default: on an H100 it was faster
/// at dim 2048 (1.33x against 1.40x) and slower at dim 4096 (1.85x against 1.60x), where the
/// step is short and the hashes queued on the side stream are what end_step waits for (docs/ops.md).
bool side_stream_wanted() {
  const char* v = std::getenv("GPARITY_OPREC_SIDE_STREAM");
  return v && v[0] == '1';
}

}  // namespace

void hash_many(State& s, const std::vector<std::pair<std::size_t, at::Tensor>>& todo,
               std::vector<TensorRef>& refs) {
  at::DisableRecordFunctionGuard no_records;  // our own zeros/contiguous are not the step's ops
  at::NoGradGuard no_grad;
  const auto spec = s.options.shard_spec == 2 ? hash::ShardSpec::V2 : hash::ShardSpec::V1;
  std::vector<bool> done(todo.size(), false);
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (done[i]) continue;
    const auto device = todo[i].second.device();
    std::vector<at::Tensor> group;
    std::vector<std::size_t> members;
    for (std::size_t j = i; j < todo.size(); ++j)
      if (!done[j] && todo[j].second.device() == device) {
        group.push_back(todo[j].second);
        members.push_back(j);
        done[j] = true;
      }
    int d = 0;
    while (d < static_cast<int>(s.devices.size()) && s.devices[static_cast<std::size_t>(d)].device != device)
      ++d;
    if (d == static_cast<int>(s.devices.size())) {
      DeviceWords fresh{device, {}, {}, std::nullopt, nullptr};
      if (device.is_cuda() && side_stream_wanted()) {
        const auto* impl = c10::impl::getDeviceGuardImpl(device.type());
        fresh.side = impl->getStreamFromGlobalPool(device, /*isHighPriority=*/false);
        fresh.ready = std::make_shared<c10::Event>(device.type());
      }
      s.devices.push_back(std::move(fresh));
    }
    auto& dw = s.devices[static_cast<std::size_t>(d)];
    const auto n = static_cast<std::int64_t>(group.size());
    if (dw.chunks.empty() || dw.used.back() + n > dw.chunks.back().numel() / 2) {
      dw.chunks.push_back(
          at::zeros({2 * std::max(kSlotsPerChunk, n)}, at::TensorOptions().dtype(at::kLong).device(device)));
      dw.used.push_back(0);
    }
    const std::int64_t first = dw.used.back();
    if (dw.side) {
      const auto* impl = c10::impl::getDeviceGuardImpl(device.type());
      c10::DeviceGuard on_device(device);
      dw.ready->record(impl->getStream(device));
      dw.side->wait(*dw.ready);
      c10::StreamGuard on_side(*dw.side);
      runtime::hash_blocks_into(group, dw.chunks.back(), first, s.options.xxh3, spec);
      for (const auto& t : group) impl->recordDataPtrOnStream(t.storage().data_ptr(), *dw.side);
    } else {
      runtime::hash_blocks_into(group, dw.chunks.back(), first, s.options.xxh3, spec);
    }
    dw.used.back() += n;
    for (std::size_t k = 0; k < members.size(); ++k) {
      auto& ref = refs[todo[members[k]].first];
      ref.device = d;
      ref.chunk = static_cast<int>(dw.chunks.size()) - 1;
      ref.slot = first + static_cast<std::int64_t>(k);
    }
  }
}

HashWords read_back(std::vector<DeviceWords>& devices) {
  HashWords words(devices.size());
  at::DisableRecordFunctionGuard no_records;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].side) devices[d].side->synchronize();  // the step's hashes, all enqueued there
    for (std::size_t c = 0; c < devices[d].chunks.size(); ++c) {
      const auto host = devices[d].chunks[c].narrow(0, 0, 2 * devices[d].used[c]).cpu();
      const auto* p = host.data_ptr<std::int64_t>();
      words[d].emplace_back(p, p + host.numel());
    }
  }
  return words;
}

}  // namespace gparity::torchops::oprec_detail
