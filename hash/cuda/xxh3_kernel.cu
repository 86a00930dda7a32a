// CUDA kernels of XXH3-64 (xxh3_plan.hpp says how the hash is split). Two launches per batch:
// block_sums_kernel sums every full 1 KiB block's lane contributions, one half-warp per block
// (a thread per stripe, 16-byte loads, a shuffle reduce-scatter over the 16 stripes);
// chain_kernel runs one warp per input: the warp stages the block sums in shared memory a chunk
// ahead while each lane's scramble chain runs through them in order (xxh3_scramble_add), then 8
// threads add their lane's tail and one thread merges the lanes, or hashes a short input outright.

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "hash/cuda/xxh3_plan.hpp"

namespace gparity::hash::cuda_detail {
namespace {

constexpr int kThreads = 256;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

__device__ __forceinline__ std::uint64_t word_of(const uint4& v, int half) {
  return half == 0 ? (static_cast<std::uint64_t>(v.y) << 32 | v.x)
                   : (static_cast<std::uint64_t>(v.w) << 32 | v.z);
}

/// The inputs of one launch, passed by value as the kernels' parameter (up to 32 KiB on sm_70+
/// with CUDA 12.1+): no device table to copy, a pageable host-to-device copy being one the
/// driver may serialise with the stream. first_block counts from the launch's first block.
/// The driver copies the whole parameter block at every launch, used or not, so a launch takes
/// the smallest capacity that holds its segments (32, 128 or 512; launch_xxh3): 1 KiB for a
/// model of a few dozen tensors rather than 16 KiB.
constexpr std::uint32_t kSegmentsPerLaunch = 512;
template <std::uint32_t Capacity>
struct Xxh3Batch {
  std::uint32_t n;
  std::uint64_t total_blocks;
  Xxh3Segment segs[Capacity];
};
static_assert(sizeof(Xxh3Batch<kSegmentsPerLaunch>) + sizeof(Xxh3Secret) + 64 <= 32000,
              "kernel parameters are limited to 32 KiB");

/// Index of the segment holding global block g (first_block ascending, full_blocks > 0).
__device__ __forceinline__ std::uint32_t find_segment(const Xxh3Segment* segs, std::uint32_t n,
                                                      std::uint64_t g) {
  std::uint32_t lo = 0, hi = n;  // first segment whose first_block > g, minus one
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (segs[mid].first_block <= g)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

template <std::uint32_t Capacity>
__global__ void __launch_bounds__(kThreads)
    block_sums_kernel(const __grid_constant__ Xxh3Batch<Capacity> batch, const Xxh3Secret secret,
                      std::uint64_t* sums) {
  const Xxh3Segment* segs = batch.segs;
  const std::uint32_t nsegs = batch.n;
  const std::uint64_t total_blocks = batch.total_blocks;
  const std::uint64_t tid = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * (kThreads / 32);
  const int s = static_cast<int>(threadIdx.x & 15);  // this thread's stripe within a block
  const int half = static_cast<int>((threadIdx.x >> 4) & 1);
  // The secret's words in shared memory: read from the parameter bytes one byte at a time with
  // 16 different offsets a warp, they made a short call compute-bound (0.5 TB/s on 25 MB).
  __shared__ std::uint64_t words[kXxh3StripesPerBlock + kXxh3Lanes];
  if (threadIdx.x < kXxh3StripesPerBlock + kXxh3Lanes)
    words[threadIdx.x] = xxh3_read64(secret.bytes + 8 * threadIdx.x);
  __syncthreads();
  std::uint64_t key[kXxh3Lanes];
#pragma unroll
  for (int j = 0; j < kXxh3Lanes; ++j) key[j] = words[s + j];

  // Whole warps iterate together so the shuffles always see all 32 threads.
  for (std::uint64_t w = tid / 32; 2 * w < total_blocks; w += warps) {
    const std::uint64_t g = 2 * w + static_cast<std::uint64_t>(half);
    std::uint64_t v[kXxh3Lanes] = {};
    if (g < total_blocks) {
      const Xxh3Segment seg = segs[find_segment(segs, nsegs, g)];
      const unsigned char* p = seg.data + (g - seg.first_block) * kXxh3BlockBytes + s * kXxh3StripeBytes;
      std::uint64_t d[kXxh3Lanes];
      if ((reinterpret_cast<std::uintptr_t>(seg.data) & 15) == 0) {
        const uint4* q = reinterpret_cast<const uint4*>(p);
        uint4 r[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) r[k] = __ldcs(q + k);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          d[2 * k] = word_of(r[k], 0);
          d[2 * k + 1] = word_of(r[k], 1);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kXxh3Lanes; ++j) d[j] = xxh3_read64(p + 8 * j);
      }
#pragma unroll
      for (int j = 0; j < kXxh3Lanes; ++j) v[j] = xxh3_lane_contribution(d[j], d[j ^ 1], key[j]);
    }
    // Reduce-scatter over the 16 stripes: each exchange halves the lanes a thread keeps.
    const bool b8 = (s & 8) != 0, b4 = (s & 4) != 0, b2 = (s & 2) != 0;
    std::uint64_t w4[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint64_t send = b8 ? v[k] : v[k + 4];
      w4[k] = (b8 ? v[k + 4] : v[k]) + __shfl_xor_sync(0xFFFFFFFFU, send, 8);
    }
    std::uint64_t w2[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const std::uint64_t send = b4 ? w4[k] : w4[k + 2];
      w2[k] = (b4 ? w4[k + 2] : w4[k]) + __shfl_xor_sync(0xFFFFFFFFU, send, 4);
    }
    std::uint64_t w1 = (b2 ? w2[1] : w2[0]) + __shfl_xor_sync(0xFFFFFFFFU, b2 ? w2[0] : w2[1], 2);
    w1 += __shfl_xor_sync(0xFFFFFFFFU, w1, 1);
    if (g < total_blocks && (s & 1) == 0) {
      const int lane = (b8 ? 4 : 0) + (b4 ? 2 : 0) + (b2 ? 1 : 0);
      sums[g * kXxh3Lanes + static_cast<std::uint64_t>(lane)] = w1;
    }
  }
}

/// Block sums a chain warp stages in shared memory at a time (64 bytes each), a chunk ahead.
constexpr int kChainChunk = 64;
constexpr int kChainVectors = kChainChunk * kXxh3Lanes * 8 / 16 / 32;  // 16-byte loads a thread

/// Loads chunk `c` of a chain's block sums (as 16-byte vectors; past the last block: zeros).
__device__ __forceinline__ void load_chunk(const uint4* sums, std::uint64_t vectors, std::uint64_t c, int t,
                                           uint4 (&reg)[kChainVectors]) {
#pragma unroll
  for (int i = 0; i < kChainVectors; ++i) {
    const std::uint64_t v = c * (kChainChunk * 4) + static_cast<std::uint64_t>(i * 32 + t);
    reg[i] = v < vectors ? __ldcs(sums + v) : make_uint4(0, 0, 0, 0);
  }
}

/// Every lane's scramble chain through `nb` block sums (nb > 0) from `acc`; returns lane
/// (t & 7)'s accumulator. The whole warp stages the sums in shared memory a chunk ahead, so a
/// step reads its sum from shared memory, and steps in halves (xxh3_scramble_add): 16 ns a
/// block on an H200, against 31 ns with the sums read from global memory a few steps ahead.
__device__ std::uint64_t chain_lanes(const std::uint64_t* sums, std::uint64_t nb, std::uint64_t acc,
                                     std::uint64_t key, std::uint32_t p) {
  __shared__ uint4 stage[2][kChainChunk * 4];
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t & (kXxh3Lanes - 1);
  const auto key_lo = static_cast<std::uint32_t>(key);
  const auto key_hi = static_cast<std::uint32_t>(key >> 32);
  const auto* src = reinterpret_cast<const uint4*>(sums);
  const std::uint64_t vectors = nb * 4;
  const std::uint64_t chunks = (nb + kChainChunk - 1) / kChainChunk;
  uint4 reg[kChainVectors];
  const auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kChainVectors; ++i) stage[buf][i * 32 + t] = reg[i];
  };
  load_chunk(src, vectors, 0, t, reg);
  store(0);
  __syncwarp();
  const std::uint64_t z0 = acc + reinterpret_cast<const std::uint64_t*>(stage[0])[lane];
  Xxh3Halves z{static_cast<std::uint32_t>(z0), static_cast<std::uint32_t>(z0 >> 32)};
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const int buf = static_cast<int>(c & 1);
    if (c + 1 < chunks) load_chunk(src, vectors, c + 1, t, reg);
    const auto* sb = reinterpret_cast<const std::uint64_t*>(stage[buf]);
    const std::uint64_t in_chunk = nb - c * kChainChunk;
    if (in_chunk >= kChainChunk) {
#pragma unroll 16
      for (int b = 1; b < kChainChunk; ++b)
        z = xxh3_scramble_add(z, sb[b * kXxh3Lanes + lane], key_lo, key_hi, p);
    } else {
      for (int b = 1; b < static_cast<int>(in_chunk); ++b)
        z = xxh3_scramble_add(z, sb[b * kXxh3Lanes + lane], key_lo, key_hi, p);
    }
    std::uint64_t next = 0;  // after the last block: the final scramble adds nothing
    if (c + 1 < chunks) {
      __syncwarp();  // every thread is done with the buffer read two chunks ago
      store(buf ^ 1);
      __syncwarp();
      next = reinterpret_cast<const std::uint64_t*>(stage[buf ^ 1])[lane];
    }
    z = xxh3_scramble_add(z, next, key_lo, key_hi, p);
  }
  return (static_cast<std::uint64_t>(z.hi) << 32) | z.lo;
}

template <std::uint32_t Capacity>
__global__ void __launch_bounds__(32)
    chain_kernel(const __grid_constant__ Xxh3Batch<Capacity> batch, const std::uint64_t* sums,
                 const Xxh3Secret secret, std::uint64_t* out, std::size_t out_stride, std::uint32_t p) {
  const Xxh3Segment& seg = batch.segs[blockIdx.x];
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t & (kXxh3Lanes - 1);
  std::uint64_t acc = 0;
  if (seg.size > kXxh3MidsizeMax) {  // uniform across the warp
    acc = xxh3_init_acc(lane);
    const std::uint64_t key = xxh3_read64(secret.bytes + 128 + 8 * lane);
    if (seg.full_blocks > 0)
      acc = chain_lanes(sums + seg.first_block * kXxh3Lanes, seg.full_blocks, acc, key, p);
    if (t < kXxh3Lanes) acc = xxh3_tail_lane(acc, lane, seg.data, seg.size, secret);
  }
  std::uint64_t lanes[kXxh3Lanes];
#pragma unroll
  for (int j = 0; j < kXxh3Lanes; ++j) lanes[j] = __shfl_sync(0xFFFFFFFFU, acc, j);
  if (t == 0) {
    out[blockIdx.x * out_stride] = seg.size > kXxh3MidsizeMax ? xxh3_merge(lanes, seg.size, secret)
                                                              : xxh3_short(seg.data, seg.size, secret);
  }
}

/// The tails a gather launch copies (xxh3_tail_start on): source, length, destination offset.
constexpr std::uint32_t kTailsPerLaunch = 256;
struct Xxh3Tails {
  std::uint32_t n;
  const unsigned char* src[kTailsPerLaunch];
  std::uint32_t bytes[kTailsPerLaunch];
  std::uint64_t dst[kTailsPerLaunch];
};
static_assert(sizeof(Xxh3Tails) + 64 <= 32000, "kernel parameters are limited to 32 KiB");

/// One CTA a tail (at most 1,088 bytes): byte copies, the tails being unaligned.
__global__ void __launch_bounds__(128)
    gather_tails_kernel(const __grid_constant__ Xxh3Tails tails, unsigned char* out) {
  const std::uint32_t i = blockIdx.x;
  for (std::uint32_t b = threadIdx.x; b < tails.bytes[i]; b += blockDim.x)
    out[tails.dst[i] + b] = tails.src[i][b];
}

constexpr int kMaxDevices = 64;

int current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

/// This thread's join event on each device, made on first use and destroyed when the thread
/// ends. One a device is enough: cudaStreamWaitEvent waits for the work the event had captured
/// when the wait was enqueued, so the event can be recorded again right after (creating and
/// destroying an event a join cost more host time than the join itself).
struct JoinEvents {
  cudaEvent_t by_device[kMaxDevices] = {};
  JoinEvents() = default;
  JoinEvents(const JoinEvents&) = delete;
  JoinEvents& operator=(const JoinEvents&) = delete;
  ~JoinEvents() {
    for (cudaEvent_t ev : by_device)
      if (ev != nullptr) cudaEventDestroy(ev);  // errors ignored: the runtime may be going down
  }
};

/// `waiting` waits, on the device, for what `on` has enqueued so far.
cudaError_t join(cudaStream_t waiting, cudaStream_t on) {
  thread_local JoinEvents events;
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  cudaEvent_t made = nullptr;
  cudaEvent_t* ev = device < kMaxDevices ? &events.by_device[device] : &made;
  if (*ev == nullptr) {
    e = cudaEventCreateWithFlags(ev, cudaEventDisableTiming);
    if (e != cudaSuccess) return e;
  }
  e = cudaEventRecord(*ev, on);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(waiting, *ev, 0);
  if (made != nullptr) cudaEventDestroy(made);  // released once the wait has been satisfied
  return e;
}

/// A reused XXH3 scratch (the block sums of a call) and the event recorded after the last
/// kernels that read it.
struct Scratch {
  int device = -1;
  cudaStream_t stream = nullptr;  // the stream whose calls take it (only picks the buffer)
  void* ptr = nullptr;
  std::uint64_t bytes = 0;
  cudaEvent_t done = nullptr;
  std::uint64_t last_use = 0;
};

/// This thread's scratches, one per device and stream of its calls (at most kMaxScratches; the
/// least recently used one is freed for another), grown when a call needs more and kept. Safety
/// never rests on the stream: every call's stream waits for its scratch's `done` event before its
/// block sums overwrite it, so a stream handle reused by a new stream, or a call on another
/// stream, only ever waits. The stream picks the buffer so that calls on unrelated streams (the
/// recorder's and a replay's side stream) do not wait for each other's chains. Freed when the
/// thread ends, after their events.
struct ThreadScratches {
  static constexpr std::size_t kMaxScratches = 4;
  Scratch slots[kMaxScratches];
  std::uint64_t uses = 0;
  ThreadScratches() = default;
  ThreadScratches(const ThreadScratches&) = delete;
  ThreadScratches& operator=(const ThreadScratches&) = delete;
  ~ThreadScratches() {
    for (Scratch& sc : slots) {  // errors ignored: the runtime may be going down
      if (sc.ptr != nullptr) free_when_read(sc);
      if (sc.done != nullptr) cudaEventDestroy(sc.done);
    }
  }

  /// Frees a scratch's buffer on its device once the kernels that read it are done; the host
  /// waits for them (thread exit, or a slot taken from another device: rare).
  static cudaError_t free_when_read(Scratch& sc) {
    int current = 0;
    cudaError_t e = cudaGetDevice(&current);
    if (e == cudaSuccess && current != sc.device) e = cudaSetDevice(sc.device);
    if (e == cudaSuccess && sc.done != nullptr) e = cudaEventSynchronize(sc.done);
    if (e == cudaSuccess) e = cudaFreeAsync(sc.ptr, cudaStreamPerThread);
    if (current != sc.device) cudaSetDevice(current);
    sc.ptr = nullptr;
    return e;
  }
};

/// `bytes` of scratch for block sums enqueued on `stream` next (current device), from this
/// thread's scratches; `stream` has been made to wait for every earlier user of the buffer. The
/// caller records `done` on the stream of its last kernel that reads it, once that is enqueued.
Scratch& reusable_scratch(std::uint64_t bytes, cudaStream_t stream) {
  thread_local ThreadScratches cache;
  const int device = current_device();
  Scratch* sc = nullptr;
  for (Scratch& slot : cache.slots)
    if (slot.device == device && slot.stream == stream) sc = &slot;
  if (sc == nullptr) {  // an unused slot, else the least recently used one
    sc = &cache.slots[0];
    for (Scratch& slot : cache.slots)
      if (slot.last_use < sc->last_use) sc = &slot;
    if (sc->ptr != nullptr) {  // another stream's (or device's): freed once its readers are done
      if (sc->device == device) {
        check(cudaStreamWaitEvent(stream, sc->done, 0), "cudaStreamWaitEvent");
        check(cudaFreeAsync(sc->ptr, stream), "cudaFreeAsync");
      } else {
        check(ThreadScratches::free_when_read(*sc), "freeing an XXH3 scratch");
      }
    }
    if (sc->done != nullptr) cudaEventDestroy(sc->done);
    *sc = Scratch{device, stream};
  }
  if (sc->done == nullptr)  // a new slot (or one whose event could not be made last time)
    check(cudaEventCreateWithFlags(&sc->done, cudaEventDisableTiming), "cudaEventCreate");
  sc->last_use = ++cache.uses;
  if (sc->ptr != nullptr) check(cudaStreamWaitEvent(stream, sc->done, 0), "cudaStreamWaitEvent");
  if (sc->bytes < bytes) {
    if (sc->ptr != nullptr) check(cudaFreeAsync(sc->ptr, stream), "cudaFreeAsync");  // after its readers
    sc->ptr = nullptr;
    sc->bytes = 0;
    constexpr std::uint64_t kGrain = std::uint64_t{1} << 20;  // fewer regrowths as sizes creep up
    const std::uint64_t want = (bytes + kGrain - 1) / kGrain * kGrain;
    check(cudaMallocAsync(&sc->ptr, want, stream), "cudaMallocAsync");
    sc->bytes = want;
  }
  return *sc;
}

unsigned sums_grid(std::uint64_t total_blocks) {
  // The device queries cost more than a launch: asked once per device.
  static std::atomic<std::uint64_t> known[kMaxDevices];  // 0: not asked yet
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::uint64_t full = device < kMaxDevices ? known[device].load(std::memory_order_relaxed) : 0;
  if (full == 0) {
    int sms = 0, per_sm = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, block_sums_kernel<kSegmentsPerLaunch>,
                                                        kThreads, 0),
          "occupancy query");
    full =
        static_cast<std::uint64_t>(sms > 0 ? sms : 1) * static_cast<std::uint64_t>(per_sm > 0 ? per_sm : 1);
    if (device < kMaxDevices) known[device].store(full, std::memory_order_relaxed);
  }
  const std::uint64_t blocks_per_cta = kThreads / 16;
  const std::uint64_t needed = (total_blocks + blocks_per_cta - 1) / blocks_per_cta;
  return static_cast<unsigned>(needed < full ? needed : full);
}

}  // namespace

void join_streams(void* waiting, void* on) {
  check(join(static_cast<cudaStream_t>(waiting), static_cast<cudaStream_t>(on)), "stream join");
}

void* side_stream() {
  static std::atomic<cudaStream_t> made[kMaxDevices];
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  if (device >= kMaxDevices) return nullptr;
  cudaStream_t s = made[device].load(std::memory_order_acquire);
  if (s != nullptr) return s;
  // Non-blocking: no implicit ordering with the legacy default stream. Lives for the process.
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaStream_t expected = nullptr;
  if (!made[device].compare_exchange_strong(expected, s, std::memory_order_acq_rel)) {
    cudaStreamDestroy(s);
    return expected;
  }
  return s;
}

/// The stream-ordered scratch comes from the device's default pool, which by default gives its
/// memory back at every synchronisation, so each call would map fresh memory. Keep up to 256 MiB
/// cached there (only ever raised, once per device). Called by launch_xxh3 under capture, and by
/// callers that capture before they begin: the pool's attributes cannot be read or set while the
/// thread captures in cudaStreamCaptureModeThreadLocal.
void keep_pool_memory() {
  static std::atomic<bool> done[kMaxDevices];
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  if (device >= kMaxDevices || done[device].exchange(true)) return;
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t threshold = 0;
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
        "cudaMemPoolGetAttribute");
  std::uint64_t want = std::uint64_t{256} << 20;
  if (threshold < want)
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &want), "cudaMemPoolSetAttribute");
}

bool stream_capturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

namespace {

/// The launches of launch_xxh3 with parameter blocks of `Capacity` segments; with no
/// `device_out`, the block sums only (launch_xxh3_sums).
template <std::uint32_t Capacity>
cudaError_t launch_groups(const Xxh3Segment* segments, std::size_t n, std::uint64_t* sums,
                          const Xxh3Secret& secret, std::uint64_t* device_out, std::size_t out_stride,
                          cudaStream_t s, cudaStream_t cs) {
  auto batch = std::make_unique<Xxh3Batch<Capacity>>();  // up to 16 KiB: not on the stack
  cudaError_t e = cudaSuccess;
  for (std::size_t first = 0; first < n && e == cudaSuccess; first += Capacity) {
    const auto count = static_cast<std::uint32_t>(std::min<std::size_t>(n - first, Capacity));
    const std::uint64_t base = segments[first].first_block;
    batch->n = count;
    for (std::uint32_t i = 0; i < count; ++i) {
      batch->segs[i] = segments[first + i];
      batch->segs[i].first_block -= base;
    }
    const Xxh3Segment& last = batch->segs[count - 1];
    batch->total_blocks = last.first_block + last.full_blocks;
    std::uint64_t* group_sums = sums ? sums + base * kXxh3Lanes : nullptr;
    if (batch->total_blocks > 0) {
      block_sums_kernel<Capacity>
          <<<sums_grid(batch->total_blocks), kThreads, 0, s>>>(*batch, secret, group_sums);
      e = cudaGetLastError();
    }
    if (device_out == nullptr) continue;
    if (e == cudaSuccess && cs != s) e = join(cs, s);
    if (e == cudaSuccess) {
      chain_kernel<Capacity><<<count, 32, 0, cs>>>(*batch, group_sums, secret,
                                                   device_out + first * out_stride, out_stride,
                                                   static_cast<std::uint32_t>(kP32_1));
      e = cudaGetLastError();
    }
  }
  return e;
}

/// launch_groups with the smallest parameter block that holds `n` segments: the driver copies
/// the whole block at every launch, used or not.
cudaError_t launch_all(const Xxh3Segment* segments, std::size_t n, std::uint64_t* sums,
                       const Xxh3Secret& secret, std::uint64_t* device_out, std::size_t out_stride,
                       cudaStream_t s, cudaStream_t cs) {
  if (n <= 32) return launch_groups<32>(segments, n, sums, secret, device_out, out_stride, s, cs);
  if (n <= 128) return launch_groups<128>(segments, n, sums, secret, device_out, out_stride, s, cs);
  return launch_groups<kSegmentsPerLaunch>(segments, n, sums, secret, device_out, out_stride, s, cs);
}

}  // namespace

void launch_xxh3(const Xxh3Segment* segments, std::size_t n, std::uint64_t total_blocks,
                 const Xxh3Secret& secret, std::uint64_t* device_out, std::size_t out_stride, void* stream,
                 void* chain_stream) {
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const auto cs = chain_stream != nullptr ? static_cast<cudaStream_t>(chain_stream) : s;
  // One scratch for the block sums of every input: one of this thread's reused ones, or under
  // graph capture a stream-ordered one (a graph must not hold an address reused outside it).
  const std::uint64_t scratch_bytes = total_blocks * kXxh3Lanes * sizeof(std::uint64_t);
  Scratch* kept = nullptr;
  void* scratch = nullptr;
  if (total_blocks > 0) {
    if (stream_capturing(stream)) {
      keep_pool_memory();
      check(cudaMallocAsync(&scratch, scratch_bytes, s), "cudaMallocAsync");
    } else {
      kept = &reusable_scratch(scratch_bytes, s);
      scratch = kept->ptr;
    }
  }
  auto* sums = static_cast<std::uint64_t*>(scratch);
  cudaError_t e = launch_all(segments, n, sums, secret, device_out, out_stride, s, cs);
  // After the chains that read the scratch (also when a launch failed: the next user then waits
  // for what did get enqueued).
  if (kept != nullptr) {
    const cudaError_t recorded = cudaEventRecord(kept->done, cs);
    if (e == cudaSuccess) e = recorded;
  } else if (scratch != nullptr) {
    cudaFreeAsync(scratch, cs);
  }
  check(e, "xxh3 kernels");
}

void launch_xxh3_sums(const Xxh3Segment* segments, std::size_t n, const std::uint64_t* tail_offsets,
                      const Xxh3Secret& secret, std::uint64_t* sums, unsigned char* tails, void* stream) {
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = launch_all(segments, n, sums, secret, nullptr, 0, s, s);
  auto batch = std::make_unique<Xxh3Tails>();
  for (std::size_t first = 0; first < n && e == cudaSuccess; first += kTailsPerLaunch) {
    const auto count = static_cast<std::uint32_t>(std::min<std::size_t>(n - first, kTailsPerLaunch));
    batch->n = count;
    for (std::uint32_t i = 0; i < count; ++i) {
      const Xxh3Segment& seg = segments[first + i];
      const std::uint64_t start = xxh3_tail_start(seg.size);
      batch->src[i] = seg.data + start;
      batch->bytes[i] = static_cast<std::uint32_t>(seg.size - start);
      batch->dst[i] = tail_offsets[first + i];
    }
    gather_tails_kernel<<<count, 128, 0, s>>>(*batch, tails);
    e = cudaGetLastError();
  }
  check(e, "xxh3 block sums");
}

}  // namespace gparity::hash::cuda_detail
