#include "core/model/formats/checkpoint_hash.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "core/model/base/input_error.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/dcp_checkpoint.hpp"
#include "core/model/formats/dcp_record.hpp"
#include "core/model/formats/safetensors.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

namespace gparity::model {
namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// Element count; -1 when it does not fit in 63 bits (only hostile metadata gets there).
std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (const auto d : s)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

bool overlaps(const DcpChunk& a, const DcpChunk& b) {
  for (std::size_t d = 0; d < a.offsets.size(); ++d) {
    if (a.offsets[d] + a.sizes[d] <= b.offsets[d] || b.offsets[d] + b.sizes[d] <= a.offsets[d]) return false;
  }
  return numel(a.sizes) > 0 && numel(b.sizes) > 0;
}

// The chunks must tile the tensor exactly (no gap, no overlap), or neither hash means anything.
void check_tiling(const DcpCheckpoint& ck, const DcpEntry& e, const std::vector<const DcpChunk*>& chunks) {
  const auto fail = [&](const std::string& what) {
    throw InputError(ck.metadata().path, "\"" + e.fqn + "\": " + what);
  };
  if (numel(e.size) < 0) fail("tensor " + shape_text(e.size) + " has more elements than fit in 63 bits");
  std::int64_t total = 0;
  for (const auto* c : chunks) total += numel(c->sizes);  // each chunk lies inside the tensor
  if (total != numel(e.size))
    fail("chunks hold " + std::to_string(total) + " elements but the tensor " + shape_text(e.size) + " has " +
         std::to_string(numel(e.size)) + " (overlapping or missing chunks)");
  if (chunks.size() <= 4096) {
    for (std::size_t i = 0; i < chunks.size(); ++i)
      for (std::size_t j = i + 1; j < chunks.size(); ++j)
        if (overlaps(*chunks[i], *chunks[j])) fail("two chunks overlap");
  }
}

// Feeds `count` elements `stride` apart into the stream (a gather through a small buffer when
// they are not adjacent).
void stream_row(hash::Xxh3Stream& xs, const std::byte* p, std::int64_t count, std::int64_t stride,
                std::size_t elem, std::vector<std::byte>& scratch) {
  if (count <= 0) return;
  if (stride == 1 || count == 1) {
    xs.update({p, static_cast<std::size_t>(count) * elem});
    return;
  }
  scratch.resize(std::size_t{1} << 16);
  const std::size_t per = scratch.size() / elem;
  std::int64_t done = 0;
  while (done < count) {
    const auto n = std::min<std::int64_t>(count - done, static_cast<std::int64_t>(per));
    for (std::int64_t k = 0; k < n; ++k)
      std::copy_n(p + (done + k) * stride * static_cast<std::int64_t>(elem), elem, scratch.data() + k * elem);
    xs.update({scratch.data(), static_cast<std::size_t>(n) * elem});
    done += n;
  }
}

bool row_major(const DcpChunkView& v) {
  if (v.strides.empty()) return true;
  std::int64_t expect = 1;
  for (std::size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] != 1 && v.strides[d] != expect) return false;
    expect *= v.shape[d];
  }
  return true;
}

struct Loaded {
  const DcpChunk* chunk;
  DcpChunkView view;
};

// The CRC-32 of an in-place storage member, checked in a pass of its own (chunks the one-pass
// path does not take).
void check_crc(const DcpChunkView& v) {
  if (v.unchecked_crc32) check_storage_crc32(zip_crc32(0, v.storage), *v.unchecked_crc32, v.crc_where);
}

// One pass over a band that is a single row-major chunk covering every dim but the first (row
// sharding) and lies in place: block by block (cache-sized), the block's bytes go through the
// storage's CRC-32, the tensor's XXH3 stream and the shard hash, so each byte leaves memory
// once. The CRC also covers the storage bytes outside the view. Returns the chunk's partial
// shard hash.
std::uint64_t one_pass(hash::Xxh3Stream& xs, const DcpEntry& e, const Loaded& l, hash::ShardSpec spec) {
  constexpr std::size_t kBlock = std::size_t{128} << 10;
  const DcpChunkView& v = l.view;
  const std::size_t bytes = static_cast<std::size_t>(numel(l.chunk->sizes)) * v.elem_size;
  std::int64_t row = 1;
  for (std::size_t d = 1; d < e.size.size(); ++d) row *= e.size[d];
  const auto first = static_cast<std::uint64_t>(l.chunk->offsets.empty() ? 0 : l.chunk->offsets[0] * row);
  const auto head = static_cast<std::size_t>(v.data - v.storage.data());
  std::uint32_t crc = zip_crc32(0, v.storage.first(head));
  std::uint64_t sh = 0;
  for (std::size_t at = 0; at < bytes; at += kBlock) {
    const std::span<const std::byte> block(v.data + at, std::min(kBlock, bytes - at));
    crc = zip_crc32(crc, block);
    xs.update(block);
    sh += hash::shard_hash_run(spec, block.data(), v.elem_size, block.size() / v.elem_size,
                               first + at / v.elem_size);
  }
  crc = zip_crc32(crc, v.storage.subspan(head + bytes));
  check_storage_crc32(crc, *v.unchecked_crc32, v.crc_where);
  return sh;
}

bool one_pass_fits(const DcpEntry& e, const std::vector<Loaded>& band) {
  if (band.size() != 1 || e.size.empty() || !band[0].view.unchecked_crc32 || !row_major(band[0].view))
    return false;
  const std::size_t es = band[0].view.elem_size;
  if (es != 1 && es != 2 && es != 4 && es != 8) return false;  // shard_hash_run's sizes
  for (std::size_t d = 1; d < e.size.size(); ++d)
    if (band[0].chunk->sizes[d] != e.size[d]) return false;
  // numel(chunk) elements from the view's start must lie inside the storage (checked by the
  // record reader for the view's extent, which is exactly that for a row-major view).
  return true;
}

// Streams the band's elements (chunks covering global rows [r0, r1) of dim 0) in row-major order.
void stream_band(hash::Xxh3Stream& xs, const DcpEntry& e, std::vector<Loaded>& band,
                 std::vector<std::byte>& scratch) {
  const std::size_t rank = e.size.size();
  const std::size_t elem = dtype_size(e.dtype);
  if (rank == 0) {
    stream_row(xs, band[0].view.data, 1, 1, elem, scratch);
    return;
  }
  // A band of one chunk spanning every other dim fully, stored row-major: one contiguous run.
  if (band.size() == 1 && row_major(band[0].view)) {
    bool full = true;
    for (std::size_t d = 1; d < rank; ++d) full = full && band[0].chunk->sizes[d] == e.size[d];
    if (full) {
      stream_row(xs, band[0].view.data, numel(band[0].chunk->sizes), 1, elem, scratch);
      return;
    }
  }
  // General case: walk the global rows (all dims but the last) in order; each row takes its
  // pieces from the chunks that cover it, in order of their last-dim offset.
  std::sort(band.begin(), band.end(), [&](const Loaded& a, const Loaded& b) {
    return a.chunk->offsets[rank - 1] < b.chunk->offsets[rank - 1];
  });
  std::int64_t r0 = e.size[0], r1 = 0;
  for (const auto& l : band) {
    r0 = std::min(r0, l.chunk->offsets[0]);
    r1 = std::max(r1, l.chunk->offsets[0] + l.chunk->sizes[0]);
  }
  if (rank == 1) {
    for (const auto& l : band)
      stream_row(xs, l.view.data, l.chunk->sizes[0], l.view.strides.empty() ? 1 : l.view.strides[0], elem,
                 scratch);
    return;
  }
  std::vector<std::int64_t> idx(rank - 1, 0);
  idx[0] = r0;
  const auto stride_of = [](const DcpChunkView& v, std::size_t d) {
    if (!v.strides.empty()) return v.strides[d];
    std::int64_t s = 1;
    for (std::size_t k = d + 1; k < v.shape.size(); ++k) s *= v.shape[k];
    return s;
  };
  for (std::size_t d = 0; d + 1 < rank; ++d)
    if (e.size[d] == 0) return;
  while (idx[0] < r1) {
    for (const auto& l : band) {
      const DcpChunk& c = *l.chunk;
      bool inside = true;
      std::int64_t off = 0;
      for (std::size_t d = 0; d + 1 < rank && inside; ++d) {
        inside = idx[d] >= c.offsets[d] && idx[d] < c.offsets[d] + c.sizes[d];
        off += (idx[d] - c.offsets[d]) * stride_of(l.view, d);
      }
      if (!inside) continue;
      stream_row(xs, l.view.data + off * static_cast<std::int64_t>(elem), c.sizes[rank - 1],
                 stride_of(l.view, rank - 1), elem, scratch);
    }
    // Next outer index, row-major.
    std::size_t d = rank - 1;
    while (d-- > 0) {
      if (++idx[d] < (d == 0 ? r1 : e.size[d]) || d == 0) break;
      idx[d] = 0;
    }
  }
}

std::string layout_of(const DcpEntry& e) {
  if (e.chunks.empty()) return "no chunks";
  if (e.chunks.size() == 1 && e.chunks[0].sizes == e.size) return "whole";
  bool same = true;
  for (const auto& c : e.chunks) same = same && c.sizes == e.chunks[0].sizes;
  std::string s = std::to_string(e.chunks.size()) + (e.chunks.size() == 1 ? " chunk" : " chunks");
  return same ? s + " of " + shape_text(e.chunks[0].sizes) : s + " of mixed sizes";
}

// A hashing thread's buffers, reused from tensor to tensor (fresh ones would be fresh pages,
// each zeroed by the kernel): memory stays bounded by the largest band of chunks.
struct Scratch {
  std::vector<std::byte> gather;
  std::vector<DcpChunkBuffer> chunks;
};

TensorDigest hash_dcp_tensor(const DcpCheckpoint& ck, const DcpEntry& e, Scratch& mem, hash::ShardSpec spec) {
  TensorDigest out{e.fqn, e.dtype, e.size, 0, 0, layout_of(e)};
  std::vector<const DcpChunk*> chunks;
  for (const auto& c : e.chunks) chunks.push_back(&c);
  check_tiling(ck, e, chunks);
  std::sort(chunks.begin(), chunks.end(),
            [](const DcpChunk* a, const DcpChunk* b) { return a->offsets < b->offsets; });
  // Bands: chunks sharing one dim-0 range. A tiling whose dim-0 ranges cross (irregular) is one band.
  std::vector<std::vector<const DcpChunk*>> bands;
  for (const auto* c : chunks) {
    if (!bands.empty() && !e.size.empty() && bands.back()[0]->offsets[0] == c->offsets[0] &&
        bands.back()[0]->sizes[0] == c->sizes[0]) {
      bands.back().push_back(c);
    } else {
      bands.push_back({c});
    }
  }
  if (!e.size.empty()) {
    std::int64_t at = 0;
    bool regular = true;
    for (const auto& b : bands) {
      regular = regular && b[0]->offsets[0] == at;
      at = b[0]->offsets[0] + b[0]->sizes[0];
    }
    if (!regular) bands = {chunks};
  }
  hash::Xxh3Stream xs;
  std::vector<std::byte>& scratch = mem.gather;
  std::vector<DcpChunkBuffer>& buffers = mem.chunks;
  hash::ShardHashOptions sh;
  sh.max_threads = 1;  // parallelism is across tensors
  sh.spec = spec;
  for (const auto& b : bands) {
    std::vector<Loaded> loaded;
    if (buffers.size() < b.size()) buffers.resize(b.size());
    for (std::size_t i = 0; i < b.size(); ++i)
      loaded.push_back({b[i], ck.load(e, *b[i], buffers[i], CrcCheck::by_caller)});
    if (one_pass_fits(e, loaded)) {
      out.shard_hash += one_pass(xs, e, loaded[0], spec);
      continue;
    }
    for (const auto& l : loaded) {
      check_crc(l.view);
      const auto& v = l.view;
      const hash::BlockView block{v.data, v.elem_size, v.shape, v.strides};
      out.shard_hash += hash::shard_hash(block, hash::GlobalPlacement{l.chunk->offsets, e.size}, sh);
    }
    stream_band(xs, e, loaded, scratch);
  }
  out.xxh3 = xs.digest();
  return out;
}

}  // namespace

namespace {

std::int64_t tensor_bytes(const DcpEntry& e) {
  const auto n = numel(e.size);
  return n < 0 ? INT64_MAX : n * static_cast<std::int64_t>(dtype_size(e.dtype));
}

// One DCP checkpoint being hashed: its tensors are work items shared by every thread.
struct DcpJob {
  std::unique_ptr<DcpCheckpoint> ck;
  std::vector<const DcpEntry*> tensors;
  std::atomic<std::size_t> left{0};  // tensors not hashed yet
  std::size_t error_at = SIZE_MAX;   // first bad tensor in registration order
};

// Guards the work queue: held for a heap push or pop only, so a waiter spins (yielding) rather
// than sleeping in the kernel and waiting to be scheduled again.
class SpinLock {
 public:
  void lock() noexcept {
    while (flag_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() noexcept { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_;
};

// Where a new pool thread starts. Linux queues a new thread on its parent's CPU, where it waits
// for the parent's time slice to end: measured here (2 cores), a second hashing thread started
// plainly ran only after the first had done nearly all the work, 2 to 3 ms later, so the
// checkpoints were hashed by one thread. A thread moved to another CPU the process may use
// starts at once; it then widens its affinity back to the process's own mask, so that it is
// not tied to that CPU when another process wants it (after the move, or the move would pin it).
class ThreadPlacement {
 public:
  ThreadPlacement() noexcept {
    valid_ = sched_getaffinity(0, sizeof allowed_, &allowed_) == 0 && CPU_COUNT(&allowed_) > 1;
  }

  /// Moves the just-started thread `t`, the k-th (from 1), to an allowed CPU other than the
  /// caller's (round robin over the others): a hint only, nothing happens where it fails.
  /// Called for every thread, in order.
  void place(std::jthread& t, unsigned k) noexcept {
    if (const int cpu = other_cpu(k); cpu >= 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      (void)pthread_setaffinity_np(t.native_handle(), sizeof one, &one);
    }
    placed_.store(k, std::memory_order_release);
  }

  /// The k-th thread's first call: waits for its move (a few microseconds), then widens its
  /// affinity to the process's mask again.
  void started(unsigned k) const noexcept {
    while (placed_.load(std::memory_order_acquire) < k) std::this_thread::yield();
    if (valid_) (void)sched_setaffinity(0, sizeof allowed_, &allowed_);
  }

  /// Widens every thread's affinity from the caller, before joining them: one that has not run
  /// yet (its CPU busy with another process) may then finish on the caller's, now free.
  void release(std::vector<std::jthread>& pool) const noexcept {
    if (!valid_) return;
    for (auto& t : pool) (void)pthread_setaffinity_np(t.native_handle(), sizeof allowed_, &allowed_);
  }

 private:
  int other_cpu(unsigned k) const noexcept {
    const int current = valid_ ? sched_getcpu() : -1;
    if (current < 0 || current >= CPU_SETSIZE) return -1;
    const int others = CPU_COUNT(&allowed_) - (CPU_ISSET(current, &allowed_) ? 1 : 0);
    if (others <= 0) return -1;
    int skip = static_cast<int>((k - 1) % static_cast<unsigned>(others));
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (cpu == current || !CPU_ISSET(cpu, &allowed_)) continue;
      if (skip-- == 0) return cpu;
    }
    return -1;
  }

  cpu_set_t allowed_{};
  bool valid_ = false;
  std::atomic<unsigned> placed_{0};  // threads placed so far
};

struct TensorItem {
  std::size_t path, tensor;
  std::int64_t bytes;
};

// Hashes `paths` with one pool of threads sharing two kinds of work: opening a path (a DCP
// checkpoint's metadata read and its files opened; any other file hashed whole), and hashing
// one DCP tensor, largest first among those opened. Items as small as a tensor keep the threads
// evenly busy where a path per thread would leave one idle while another finishes a larger
// checkpoint. No thread ever sleeps waiting for another: on a loaded machine a thread put to
// sleep (a barrier, a condition variable) can take milliseconds to be scheduled again, and a
// thread that starts late just joins in on what is left.
std::vector<FileDigest> hash_paths(std::span<const std::string> paths, const CheckpointHashOptions& options,
                                   const std::function<void(std::size_t, const std::string&)>& done,
                                   bool dcp) {
  const unsigned threads =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto openers =
      static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(paths.size(), 1)));
  const CheckpointHashOptions each{std::max(1u, threads / openers), options.spec};
  std::vector<FileDigest> out(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  std::vector<DcpJob> jobs(paths.size());
  std::size_t finished = 0;
  std::mutex mu;  // guards out[i] (as a whole), errors, `done`, `opened`, `total` and `pool`
  SpinLock queue_lock;
  std::vector<TensorItem> queue;  // a heap, largest tensor on top
  std::size_t opened = 0;
  std::int64_t total = 0;     // bytes of every tensor queued so far
  ThreadPlacement placement;  // before pool: its threads use it
  std::vector<std::jthread> pool;
  const auto smaller = [](const TensorItem& a, const TensorItem& b) {
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    return a.path != b.path ? a.path > b.path : a.tensor > b.tensor;  // then in path and registration order
  };
  const auto finish = [&](std::size_t i) {  // under mu
    jobs[i].ck.reset();                     // its files closed as soon as its last tensor is done
    if (done) done(++finished, paths[i]);
  };

  std::atomic<std::size_t> next_path{0};
  std::function<void()> work;
  // Starts one more pool thread (under mu); false when the system has no more to give.
  const auto start_thread = [&] {
    const auto k = static_cast<unsigned>(pool.size() + 1);
    try {
      pool.emplace_back([&, k] {
        placement.started(k);
        work();
      });
    } catch (...) {  // no more threads to be had: the ones running share the work
      return false;
    }
    placement.place(pool.back(), k);
    return true;
  };
  // Opens path i; its tensors join the queue.
  const auto open = [&](std::size_t i) {
    DcpJob& j = jobs[i];
    FileDigest d;
    std::exception_ptr error;
    try {
      if (dcp || is_dcp_checkpoint(paths[i])) {
        j.ck = std::make_unique<DcpCheckpoint>(paths[i]);
        d = {paths[i], "dcp", {}, {}};
        for (const auto& e : j.ck->metadata().entries) {
          if (e.is_tensor)
            j.tensors.push_back(&e);
          else
            d.other_entries.push_back(e.fqn);
        }
        d.tensors.resize(j.tensors.size());
      } else {
        d = hash_file(paths[i], each);
      }
    } catch (...) {
      error = std::current_exception();
      j.tensors.clear();
    }
    {
      const std::lock_guard lock(mu);
      out[i] = std::move(d);
      errors[i] = error;
    }
    j.left = j.tensors.size();
    std::int64_t bytes = 0;
    {
      const std::lock_guard lock(queue_lock);
      for (std::size_t t = 0; t < j.tensors.size(); ++t) {
        const auto b = tensor_bytes(*j.tensors[t]);
        queue.push_back({i, t, b});
        std::push_heap(queue.begin(), queue.end(), smaller);
        bytes = b > INT64_MAX - bytes ? INT64_MAX : bytes + b;
      }
    }
    const std::lock_guard lock(mu);
    ++opened;  // after its tensors are queued: a thread seeing every path opened and the queue empty is done
    if (j.tensors.empty()) finish(i);
    total = bytes > INT64_MAX - total ? INT64_MAX : total + bytes;
    // A thread per 8 MiB at most beyond the openers: on a small checkpoint, starting and
    // joining threads (and waiting for a busy machine to schedule them) costs more than the
    // hashing they would share.
    const auto wanted = static_cast<std::size_t>(std::clamp<std::int64_t>(total >> 23, 1, threads));
    while (pool.size() + 1 < wanted && start_thread()) {
    }
  };
  // Hashes one queued tensor; false when there is none now.
  const auto hash_one = [&](Scratch& scratch) {
    TensorItem it{};
    {
      const std::lock_guard lock(queue_lock);
      if (queue.empty()) return false;
      std::pop_heap(queue.begin(), queue.end(), smaller);
      it = queue.back();
      queue.pop_back();
    }
    DcpJob& j = jobs[it.path];
    std::exception_ptr error;
    try {
      out[it.path].tensors[it.tensor] = hash_dcp_tensor(*j.ck, *j.tensors[it.tensor], scratch, options.spec);
    } catch (...) {
      error = std::current_exception();
    }
    if (error) {
      // Report the first bad tensor in registration order, whatever thread saw it first.
      const std::lock_guard lock(mu);
      if (it.tensor < j.error_at) {
        j.error_at = it.tensor;
        errors[it.path] = error;
      }
    }
    if (j.left.fetch_sub(1) == 1) {
      const std::lock_guard lock(mu);
      finish(it.path);
    }
    return true;
  };
  work = [&] {
    Scratch scratch;
    for (unsigned idle = 0;; ++idle) {
      if (const std::size_t i = next_path.fetch_add(1); i < paths.size()) {
        open(i);
        idle = 0;
        continue;
      }
      if (hash_one(scratch)) {
        idle = 0;
        continue;
      }
      bool all_opened = false;
      {
        const std::lock_guard lock(mu);
        all_opened = opened == paths.size();
      }
      if (all_opened) {
        const std::lock_guard lock(queue_lock);
        if (queue.empty()) return;
      }
      // Another thread is still opening a path (its tensors come next): a DCP checkpoint opens
      // in well under a millisecond, a plain file is hashed whole while "opening".
      if (idle < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  };
  {
    const std::lock_guard lock(mu);
    for (unsigned t = 1; t < openers && start_thread(); ++t) {
    }
  }
  work();
  // Every path is open now, so no thread adds to the pool any more.
  placement.release(pool);
  pool.clear();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (auto& d : out) d.shard_spec = options.spec;
  return out;
}

}  // namespace

FileDigest hash_dcp_checkpoint(const std::string& dir, const CheckpointHashOptions& options) {
  return std::move(hash_paths(std::span(&dir, 1), options, {}, true)[0]);
}

std::vector<FileDigest> hash_files(std::span<const std::string> paths, const CheckpointHashOptions& options,
                                   const std::function<void(std::size_t, const std::string&)>& done) {
  return hash_paths(paths, options, done, false);
}

FileDigest hash_file(const std::string& path, const CheckpointHashOptions& options) {
  if (is_dcp_checkpoint(path)) return hash_dcp_checkpoint(path, options);
  FileDigest out{path, "raw", {}, {}, options.spec};
  hash::ShardHashOptions sh;
  sh.spec = options.spec;
  bool is_st = path.ends_with(".safetensors");
  if (!is_st) {
    const MappedFile probe(path);
    is_st = looks_like_safetensors(probe.bytes().first(std::min<std::size_t>(probe.bytes().size(), 9)));
    if (!is_st) {
      const auto bytes = probe.bytes();
      out.tensors.push_back({path,
                             std::nullopt,
                             {static_cast<std::int64_t>(bytes.size())},
                             hash::xxh3_64(bytes),
                             hash::shard_hash_contiguous(bytes, 1, sh),
                             "whole"});
      return out;
    }
  }
  const SafetensorsFile st(path);
  out.format = "safetensors";
  for (const auto& t : st.tensors()) {
    const auto bytes = st.bytes(t);
    const hash::BlockView view{bytes.data(), dtype_size(t.dtype), t.shape, {}};
    out.tensors.push_back({t.name, t.dtype, t.shape, hash::xxh3_64(bytes),
                           hash::shard_hash(view, hash::GlobalPlacement{}, sh), "whole"});
  }
  return out;
}

}  // namespace gparity::model
