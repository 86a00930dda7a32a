#include "hash/cuda/xxh3_host.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "hash/cuda/launch_plan.hpp"
#include "hash/cuda/xxh3_plan.hpp"

namespace gparity::hash {
namespace {

using cuda_detail::kXxh3Lanes;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

/// Waits for `done` without holding a core: cudaEventSynchronize spins (the default schedule),
/// which from up to eight walkers of every rank of a node would take cores from the ranks' own
/// threads for as long as a graph runs after a mid-graph batch. The copy at the end of a run
/// lands within ~50-200 us, so the walkers yield for 200 us, then poll every 20 us.
void wait_for(cudaEvent_t done) {
  using std::chrono::microseconds;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaEventQuery(done);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) check(q, "waiting for the XXH3 block sums");
    if (std::chrono::steady_clock::now() - start < microseconds(200))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(microseconds(20));
  }
}

/// One enqueue(): its device scratch (block sums, then tails), the pinned copy of it, the event
/// after the copy, where each buffer's parts lie, and the digests the walkers write (each buffer's
/// by one walker). Kept and reused by later rounds.
struct Batch {
  int device = -1;
  void* dev = nullptr;
  std::uint64_t dev_bytes = 0;
  void* host = nullptr;
  std::uint64_t host_bytes = 0;
  cudaEvent_t copied = nullptr;
  std::vector<std::uint64_t> lens;
  std::vector<std::uint64_t> first_block;
  std::vector<std::uint64_t> tail_offset;  // from the start of the tails (after the sums)
  std::uint64_t sums_bytes = 0;
  std::size_t first_digest = 0;
  std::vector<std::uint64_t> digests;

  /// The digest of buffer i, from the copy on the host.
  [[nodiscard]] std::uint64_t digest(std::size_t i) const {
    const auto* base = static_cast<const unsigned char*>(host);
    const auto* sums = reinterpret_cast<const std::uint64_t*>(base) + first_block[i] * kXxh3Lanes;
    return cuda_detail::xxh3_from_block_sums(sums, base + sums_bytes + tail_offset[i], lens[i],
                                             cuda_detail::xxh3_default_secret());
  }

  /// The buffers split into up to `most` groups, longest first onto the least loaded (a batch
  /// takes as long as its longest chain); groups of no chain work are left out.
  [[nodiscard]] std::vector<std::vector<std::size_t>> split(unsigned most) const;
};

/// Chain work worth a walker of its own: ~2-9 ns a block (CPU dependent), a hand-over a few us.
constexpr std::uint64_t kBlocksPerThread = 4096;
constexpr unsigned kMaxThreads = 8;

/// Threads that walk the chains, started once for the process and shared by every
/// Xxh3HostDigests (a rank replays several graphs, each with its own): starting a thread costs
/// ~20 us of host time, which a replayed graph's run cannot spare at its end. Jobs run in the
/// order posted; each caller counts its own (Round).
class Walkers {
 public:
  explicit Walkers(unsigned n) {
    threads_.reserve(n);
    for (unsigned t = 0; t < n; ++t) threads_.emplace_back([this] { loop(); });
  }
  ~Walkers() {
    {
      const std::lock_guard lock(m_);
      stop_ = true;
    }
    work_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Walkers(const Walkers&) = delete;
  Walkers& operator=(const Walkers&) = delete;

  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }

  /// `job` must not throw.
  void post(std::function<void()> job) {
    {
      const std::lock_guard lock(m_);
      jobs_.push_back(std::move(job));
    }
    work_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(m_);
        work_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex m_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

Walkers& walkers() {
  static Walkers pool(std::min(kMaxThreads, std::max(1U, std::thread::hardware_concurrency())));
  return pool;
}

/// The jobs of one Xxh3HostDigests posted and not yet done, and the first error among them.
class Round {
 public:
  void begin() {
    const std::lock_guard lock(m_);
    ++open_;
  }
  void end(std::exception_ptr error) {
    const std::lock_guard lock(m_);
    if (error && !error_) error_ = std::move(error);
    if (--open_ == 0) done_.notify_all();
  }
  /// Waits for every job begun so far; rethrows (once) the first error.
  void wait() {
    std::unique_lock lock(m_);
    done_.wait(lock, [this] { return open_ == 0; });
    if (error_) {
      const auto e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  std::mutex m_;
  std::condition_variable done_;
  std::size_t open_ = 0;
  std::exception_ptr error_;
};

std::vector<std::vector<std::size_t>> Batch::split(unsigned most) const {
  std::vector<std::pair<std::uint64_t, std::size_t>> jobs;  // (blocks, buffer), longest first
  std::uint64_t total = 0;
  std::uint64_t chains = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    jobs.emplace_back(cuda_detail::xxh3_full_blocks(lens[i]), i);
    total += jobs.back().first;
    chains += jobs.back().first > 0 ? 1 : 0;
  }
  std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const auto groups = static_cast<std::size_t>(std::max<std::uint64_t>(
      1, std::min<std::uint64_t>({(total + kBlocksPerThread - 1) / kBlocksPerThread, chains, most})));
  std::vector<std::vector<std::size_t>> bins(groups);
  std::vector<std::uint64_t> load(groups, 0);
  for (const auto& [blocks, i] : jobs) {
    const auto least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    bins[least].push_back(i);
    load[least] += blocks + 1;
  }
  return bins;
}

}  // namespace

struct Xxh3HostDigests::Impl {
  std::deque<Batch> batches;  // a deque: posted jobs hold their batch's address while more are added
  std::size_t used = 0;       // batches of this round
  std::size_t digests = 0;    // digests of this round
  Round round;

  ~Impl() {
    try {
      round.wait();  // the walkers read the batches' buffers
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
    for (auto& b : batches) {  // errors ignored: the runtime may be going down
      if (b.copied != nullptr) {
        cudaEventSynchronize(b.copied);
        cudaEventDestroy(b.copied);
      }
      if (b.dev != nullptr) {
        int current = 0;
        if (cudaGetDevice(&current) == cudaSuccess && current != b.device) cudaSetDevice(b.device);
        cudaFree(b.dev);
        if (current != b.device) cudaSetDevice(current);
      }
      if (b.host != nullptr) cudaFreeHost(b.host);
    }
  }

  /// Posts batch b's chains to the walkers: each group waits for the copy, then walks.
  void walk(Batch& b) {
    auto& pool = walkers();
    b.digests.assign(b.lens.size(), 0);
    for (auto& group : b.split(pool.size())) {
      round.begin();
      pool.post([&b, &r = round, mine = std::move(group)] {
        std::exception_ptr error;
        try {
          thread_local int device = -1;
          if (device != b.device) {
            check(cudaSetDevice(b.device), "cudaSetDevice");
            device = b.device;
          }
          wait_for(b.copied);
          for (const auto i : mine) b.digests[i] = b.digest(i);
        } catch (...) {
          error = std::current_exception();
        }
        r.end(error);
      });
    }
  }
};

Xxh3HostDigests::Xxh3HostDigests() : impl_(std::make_unique<Impl>()) {}
Xxh3HostDigests::~Xxh3HostDigests() = default;

std::size_t Xxh3HostDigests::pending() const noexcept {
  return impl_->digests;
}

std::size_t Xxh3HostDigests::enqueue(std::span<const DeviceBytes> buffers, void* stream, void* copy_stream) {
  auto& im = *impl_;
  const std::size_t first = im.digests;
  if (buffers.empty()) return first;
  if (im.used == im.batches.size()) im.batches.emplace_back();
  Batch& b = im.batches[im.used];
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::vector<cuda_detail::Xxh3Segment> segments;
  segments.reserve(buffers.size());
  b.lens.clear();
  b.first_block.clear();
  b.tail_offset.clear();
  std::uint64_t blocks = 0;
  std::uint64_t tail_bytes = 0;
  for (const auto& buf : buffers) {
    const std::uint64_t full = cuda_detail::xxh3_full_blocks(buf.size);
    segments.push_back({static_cast<const unsigned char*>(buf.data), buf.size, blocks, full});
    b.lens.push_back(buf.size);
    b.first_block.push_back(blocks);
    b.tail_offset.push_back(tail_bytes);
    blocks += full;
    tail_bytes += buf.size - cuda_detail::xxh3_tail_start(buf.size);
  }
  b.sums_bytes = blocks * kXxh3Lanes * sizeof(std::uint64_t);
  const std::uint64_t bytes = b.sums_bytes + std::max<std::uint64_t>(tail_bytes, 1);
  const auto s = static_cast<cudaStream_t>(stream);
  const auto cs = copy_stream != nullptr ? static_cast<cudaStream_t>(copy_stream) : s;
  // Every earlier user of this batch's buffers finished in the last finish(): they are free.
  if (b.dev != nullptr && (b.dev_bytes < bytes || b.device != device)) {
    int current = device;
    if (b.device != device) check(cudaSetDevice(b.device), "cudaSetDevice");
    check(cudaFree(b.dev), "cudaFree");
    if (b.device != current) check(cudaSetDevice(current), "cudaSetDevice");
    b.dev = nullptr;
    b.dev_bytes = 0;
    if (b.copied != nullptr) {
      cudaEventDestroy(b.copied);  // made on the old device
      b.copied = nullptr;
    }
  }
  constexpr std::uint64_t kGrain = std::uint64_t{1} << 20;  // fewer regrowths as sizes creep up
  const std::uint64_t want = (bytes + kGrain - 1) / kGrain * kGrain;
  if (b.dev == nullptr) {
    check(cudaMalloc(&b.dev, want), "cudaMalloc");
    b.dev_bytes = want;
    b.device = device;
  }
  if (b.host_bytes < bytes) {
    if (b.host != nullptr) check(cudaFreeHost(b.host), "cudaFreeHost");
    b.host = nullptr;
    b.host_bytes = 0;
    check(cudaMallocHost(&b.host, want), "cudaMallocHost");
    b.host_bytes = want;
  }
  if (b.copied == nullptr)
    check(cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming), "cudaEventCreate");
  auto* sums = static_cast<std::uint64_t*>(b.dev);
  auto* tails = static_cast<unsigned char*>(b.dev) + b.sums_bytes;
  cuda_detail::launch_xxh3_sums(segments.data(), segments.size(), b.tail_offset.data(),
                                cuda_detail::xxh3_default_secret(), sums, tails, stream);
  if (cs != s) cuda_detail::join_streams(cs, s);
  check(cudaMemcpyAsync(b.host, b.dev, b.sums_bytes + tail_bytes, cudaMemcpyDeviceToHost, cs),
        "cudaMemcpyAsync");
  check(cudaEventRecord(b.copied, cs), "cudaEventRecord");
  b.first_digest = first;
  im.walk(b);  // the chains are walked as soon as the copy is there
  ++im.used;
  im.digests += buffers.size();
  return first;
}

std::vector<std::uint64_t> Xxh3HostDigests::finish() {
  auto& im = *impl_;
  std::vector<std::uint64_t> out(im.digests);
  const std::size_t used = im.used;
  im.used = 0;
  im.digests = 0;
  if (used == 0) return out;
  im.round.wait();  // every batch's chains, or the first error
  for (std::size_t k = 0; k < used; ++k) {
    const Batch& b = im.batches[k];
    std::copy(b.digests.begin(), b.digests.end(), out.begin() + static_cast<std::ptrdiff_t>(b.first_digest));
  }
  return out;
}

}  // namespace gparity::hash
