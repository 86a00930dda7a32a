#include "core/runtime/recorder.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>

#include "core/model/run/trace_reader.hpp"
#include "core/runtime/debug_model.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"
#include "tests/runtime/recorder_test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::runtime {
namespace {

using testing_support::read_trace;
using testing_support::sample;
using testing_support::whole_param;

TEST(HashBlock, WholeTensorMatchesTheHashLibraryOnItsBytes) {
  const auto t = sample({6, 5});
  const auto h = hash_block(t);
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(t.data_ptr()), t.nbytes());
  EXPECT_EQ(h.xxh3, hash::xxh3_64(bytes));
  EXPECT_EQ(h.shard, hash::shard_hash_contiguous(bytes, 4));
}

TEST(HashBlock, Dim0ShardsAddUpToTheFullTensor) {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    const auto full = sample({7, 3}, dtype);
    const std::vector<std::int64_t> global{7, 3};
    const std::vector<std::int64_t> off0{0, 0}, off1{4, 0};
    const auto a = hash_block(full.narrow(0, 0, 4), off0, global);
    const auto b = hash_block(full.narrow(0, 4, 3), off1, global);
    EXPECT_EQ(a.shard + b.shard, hash_block(full).shard);
    EXPECT_NE(a.xxh3, hash_block(full).xxh3);
  }
}

TEST(HashBlock, StridedViewHashesLikeItsContiguousCopy) {
  const auto t = sample({4, 6}).transpose(0, 1);  // non-contiguous
  ASSERT_FALSE(t.is_contiguous());
  const auto h = hash_block(t);
  const auto c = hash_block(t.contiguous());
  EXPECT_EQ(h.xxh3, c.xxh3);
  EXPECT_EQ(h.shard, c.shard);
}

TEST(HashBlocks, BatchMatchesOneAtATimeWithPlacements) {
  const auto t = sample({7, 9});
  const std::vector<at::Tensor> blocks = {t.narrow(0, 0, 4), t.narrow(0, 4, 3), t.t()};
  const std::vector<std::int64_t> o0 = {0, 0}, o1 = {4, 0}, whole = {};
  const std::vector<std::int64_t> g = {7, 9};
  const std::vector<std::span<const std::int64_t>> offs = {o0, o1, whole};
  const std::vector<std::span<const std::int64_t>> shapes = {g, g, whole};
  const auto h = hash_blocks(blocks, offs, shapes);
  ASSERT_EQ(h.size(), 3U);
  EXPECT_EQ(h[0].shard + h[1].shard, hash_block(t).shard);
  EXPECT_EQ(h[1].xxh3, hash_block(t.narrow(0, 4, 3).contiguous()).xxh3);
  EXPECT_EQ(h[2].xxh3, hash_block(t.t().contiguous()).xxh3);
}

// CUDA tensors are hashed on the device (shard hash and XXH3 kernels): the same digests as the
// CPU path on the same values, for dense, strided, sliced and bf16 blocks. Skips without a GPU.
TEST(HashBlocks, CudaTensorsHashLikeTheirCpuCopies) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): GPU hashing not run";
  const auto big = sample({513, 700});  // > 1 KiB rows: XXH3's long path, several blocks
  const auto bf = sample({64, 33}, at::kBFloat16);
  const std::vector<at::Tensor> cpu = {big,         big.narrow(0, 100, 200), big.t(), bf, bf.narrow(1, 1, 5),
                                       sample({3}), sample({0, 4})};
  std::vector<at::Tensor> gpu;
  for (const auto& c : cpu) gpu.push_back(c.to(at::kCUDA));
  // Views of the device copy, so strides and offsets are the device's own.
  const auto big_gpu = big.to(at::kCUDA);
  gpu[1] = big_gpu.narrow(0, 100, 200);
  gpu[2] = big_gpu.t();
  const std::vector<std::int64_t> off = {100, 0}, global = {513, 700}, none = {};
  const std::vector<std::span<const std::int64_t>> offs = {none, off, none, none, none, none, none};
  const std::vector<std::span<const std::int64_t>> shapes = {none, global, none, none, none, none, none};
  const auto want = hash_blocks(cpu, offs, shapes);
  const auto got = hash_blocks(gpu, offs, shapes);
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(got[i].xxh3, want[i].xxh3) << "block " << i;
    EXPECT_EQ(got[i].shard, want[i].shard) << "block " << i;
  }
  EXPECT_EQ(hash_block(gpu[0]).xxh3, want[0].xxh3);
}

// hash_blocks_into (the op recorder's path): whole tensors' hashes into a words tensor from slot
// `first` on, under both specs, with and without XXH3: the same as hash_blocks on CPU copies;
// on the CPU here and, where there is a GPU, on CUDA words (views read from sizes and strides).
TEST(HashBlocksInto, WholeTensorsHashLikeHashBlocksOnCpuAndCuda) {
  const auto big = sample({129, 70});
  const auto bf = sample({64, 33}, at::kBFloat16);
  const auto i8 = sample({40, 36}).mul(100).to(at::kChar);
  const auto cube = sample({4, 5, 6});
  const std::vector<at::Tensor> cpu = {big,
                                       big.narrow(0, 10, 20),
                                       big.t(),
                                       bf.narrow(1, 1, 5),
                                       i8.t(),
                                       sample({}),
                                       sample({0, 4}),
                                       cube.permute({2, 0, 1})};
  std::vector<at::Device> devices = {at::kCPU};
  if (at::hasCUDA()) devices.emplace_back(at::kCUDA);
  for (const auto device : devices) {
    std::vector<at::Tensor> on;
    for (const auto& c : cpu) on.push_back(c.is_contiguous() ? c.to(device) : c.contiguous().to(device));
    // Views of the device copies, so strides and offsets are the device's own.
    on[1] = on[0].narrow(0, 10, 20);
    on[2] = on[0].t();
    on[3] = bf.to(device).narrow(1, 1, 5);
    on[4] = i8.to(device).t();
    on[7] = cube.to(device).permute({2, 0, 1});
    for (const auto spec : {hash::ShardSpec::V1, hash::ShardSpec::V2}) {
      const auto want = hash_blocks(cpu, {}, {}, spec);
      for (const bool xxh3 : {false, true}) {
        const std::int64_t first = 3;
        const auto words = at::zeros({2 * (first + static_cast<std::int64_t>(on.size()))},
                                     at::TensorOptions().dtype(at::kLong).device(device));
        hash_blocks_into(on, words, first, xxh3, spec);
        const auto host = words.cpu();
        const auto* w = host.data_ptr<std::int64_t>();
        for (std::int64_t k = 0; k < 2 * first; ++k) EXPECT_EQ(w[k], 0) << "slot before first written";
        for (std::size_t i = 0; i < on.size(); ++i) {
          const auto at = 2 * (first + static_cast<std::int64_t>(i));
          EXPECT_EQ(std::bit_cast<std::uint64_t>(w[at + 1]), want[i].shard)
              << device << " spec " << static_cast<int>(spec) << " block " << i;
          EXPECT_EQ(std::bit_cast<std::uint64_t>(w[at]), xxh3 ? want[i].xxh3 : 0)
              << device << " xxh3 " << xxh3 << " block " << i;
        }
      }
    }
  }
}

// DeferredHashes: the same digests as hash_blocks, in enqueue order, across batches; a tensor
// freed by the caller right after its enqueue, and one overwritten in place right after, are
// still hashed as they were (the hashes run on the caller's stream, before what follows them
// there). Skips without a GPU.
TEST(DeferredHashes, HashesSeeTheTensorsAsEnqueued) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): GPU hashing not run";
  const auto big_cpu = sample({2048, 4096});  // 32 MiB: its XXH3 chain runs for a while
  const auto bf_cpu = sample({64, 33}, at::kBFloat16);
  auto big = big_cpu.to(at::kCUDA);
  const auto bf = bf_cpu.to(at::kCUDA);
  DeferredHashes deferred;
  const std::vector<at::Tensor> first = {big, big.t(), bf.narrow(1, 1, 5)};
  EXPECT_EQ(deferred.enqueue(first), 0u);
  {
    const auto temp = bf.to(at::kFloat) * 3;  // freed at the end of this scope
    const std::vector<at::Tensor> second = {temp};
    EXPECT_EQ(deferred.enqueue(second), 3u);
  }
  const auto scratch = at::full({64, 33}, 7.0, big.options());  // may take `temp`'s block
  big.add_(1.0);
  const auto got = deferred.collect();
  ASSERT_EQ(got.size(), 4u);
  const std::vector<at::Tensor> want_cpu = {big_cpu, big_cpu.t(), bf_cpu.narrow(1, 1, 5),
                                            bf_cpu.to(at::kFloat) * 3};
  const auto want = hash_blocks(want_cpu);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].xxh3, want[i].xxh3) << "tensor " << i;
    EXPECT_EQ(got[i].shard, want[i].shard) << "tensor " << i;
  }
  EXPECT_TRUE(deferred.collect().empty());  // collect starts over
  EXPECT_EQ(scratch.sum().item<double>(), 7.0 * 64 * 33);
}

// Spec v2 node hashes on the GPU (DeferredHashes, as `gparity replay` enqueues them) equal the
// CPU's for the same values, for every element size (f64 / i64: v1's term; f32, bf16, f16, u8,
// bool) and for strided and offset blocks, on the graph's stream and on a side stream with a
// capped grid; tensors flagged xxh3_too get XXH3 beside the shard hash, the others none. On the
// side stream, a tensor freed right after its enqueue and one overwritten in place after
// wait_on_device() are still hashed as they were. Skips without a GPU.
TEST(DeferredHashes, SideStreamHashesEqualTheSameStreamsAndTheCpus) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): GPU hashing not run";
  const auto big_cpu = sample({1024, 4096});  // 16 MiB: the capped grid walks it in many steps
  const std::vector<at::Tensor> cpu = {big_cpu,
                                       big_cpu.t(),
                                       big_cpu.narrow(1, 5, 3000),
                                       sample({513, 700}, at::kBFloat16),
                                       sample({513, 700}, at::kBFloat16).t(),
                                       sample({77, 129}, at::kHalf),
                                       sample({4099}).mul(100).abs().to(at::kByte),
                                       sample({1001}).gt(0),
                                       sample({333, 3}, at::kDouble),
                                       sample({999}).mul(1000).to(at::kLong),
                                       sample({1})};
  const auto want = hash_blocks(cpu, {}, {}, hash::ShardSpec::V2);
  std::vector<std::uint8_t> outputs(cpu.size(), 0);
  for (std::size_t i = 0; i < cpu.size(); i += 3) outputs[i] = 1;  // some with XXH3 too
  for (const bool side : {false, true}) {
    auto big = big_cpu.to(at::kCUDA);
    std::vector<at::Tensor> gpu;
    for (const auto& c : cpu) gpu.push_back(c.to(at::kCUDA));
    gpu[0] = big;
    gpu[1] = big.t();
    gpu[2] = big.narrow(1, 5, 3000);
    gpu[4] = gpu[3].t();
    DeferredHashes deferred(DeferredHashOptions{
        .xxh3 = false, .spec = hash::ShardSpec::V2, .side_stream = side, .side_share = 0.02});
    // In three batches, as the interpreter enqueues them; the last one from a temporary.
    EXPECT_EQ(deferred.enqueue(std::span(gpu).first(4), std::span(outputs).first(4)), 0u);
    EXPECT_EQ(deferred.enqueue(std::span(gpu).subspan(4, 6), std::span(outputs).subspan(4, 6)), 4u);
    {
      const std::vector<at::Tensor> last = {cpu.back().to(at::kCUDA) * 1};
      EXPECT_EQ(deferred.enqueue(last, std::span(outputs).last(1)), 10u);
    }
    const auto scratch = at::full({1}, 7.0, big.options());  // may take the temporary's block
    deferred.wait_on_device();
    big.add_(1.0);  // after the wait: the hashes saw the values before it
    const auto got = deferred.collect();
    ASSERT_EQ(got.size(), cpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_EQ(got[i].shard, want[i].shard) << (side ? "side" : "same") << " stream, tensor " << i;
      EXPECT_EQ(got[i].xxh3, outputs[i] ? want[i].xxh3 : 0)
          << (side ? "side" : "same") << " stream, tensor " << i;
    }
    EXPECT_TRUE(deferred.collect().empty());
    EXPECT_EQ(scratch.item<double>(), 7.0);
  }
  EXPECT_THROW(DeferredHashes(DeferredHashOptions{.side_share = 0}), std::invalid_argument);
}

TEST(TraceScalar, KeepsTheBitsOfItsDtype) {
  const auto s = trace_scalar(at::full({}, -0.0, at::kFloat));
  EXPECT_EQ(s.bits, 0x80000000u);
  EXPECT_EQ(s.dtype, model::DType::F32);
  const auto b = trace_scalar(at::full({}, 1.0, at::kBFloat16));
  EXPECT_EQ(b.bits, 0x3F80u);
  EXPECT_EQ(b.dtype, model::DType::BF16);
}

TEST(Recorder, StepRecordReadsBackWithTheSameHashes) {
  testing::TempDir dir;
  Recorder rec(dir.path(), 1);
  const auto w = sample({4, 2});
  const auto full_w = at::cat({sample({2, 2}), w});  // this rank holds rows 2..5 of 6
  model::ParamInfo info;
  info.fqn = "w";
  info.global_shape = {6, 2};
  info.local_offsets = {2, 0};
  info.local_shape = {4, 2};
  info.placements = {model::Placement{model::Placement::Kind::Shard, 0}};
  model::ParamInfo replica = info;
  replica.fqn = "r";
  replica.global_shape = {4, 2};
  replica.local_offsets = {0, 0};
  replica.counts = false;
  rec.params({info, replica});
  const auto loss = at::full({}, 2.5, at::kFloat);
  const std::vector<at::Tensor> params{w, w};
  const auto cost = rec.step({3, &loss, nullptr, params, {}, {}});
  EXPECT_GT(cost, 0);

  const auto trace = model::read_rank_trace(model::rank_trace_path(dir.path(), 1).string(), 1);
  ASSERT_TRUE(trace.issues.empty());
  ASSERT_EQ(trace.steps.size(), 1u);
  const auto& s = trace.steps[0];
  EXPECT_EQ(s.step, 3);
  ASSERT_TRUE(s.loss.has_value());
  EXPECT_EQ(s.loss->bits, 0x40200000u);
  EXPECT_FALSE(s.grad_norm.has_value());
  EXPECT_TRUE(s.extra.contains("recorder_ns"));
  const auto* shard = s.find_hashes("param.shard");
  const auto* xxh = s.find_hashes("param.xxh3");
  ASSERT_TRUE(shard && xxh);
  const std::vector<std::int64_t> global{6, 2}, off{2, 0};
  EXPECT_EQ(shard->values[0], hash_block(w, off, global).shard);
  EXPECT_EQ(shard->values[0] + hash_block(full_w.narrow(0, 0, 2), {}, global).shard,
            hash_block(full_w).shard);
  EXPECT_EQ(shard->values[1], 0u);  // replica counted by another rank
  EXPECT_EQ(xxh->values[1], hash_block(w).xxh3);
  // Hash arrays must be aligned with the table.
  const std::vector<at::Tensor> one{w};
  EXPECT_THROW(rec.step({4, &loss, nullptr, one, {}, {}}), std::invalid_argument);
}

// CPU tensors are recorded synchronously by step_async: the line is there at once, with the
// same hashes as step() writes.
TEST(AsyncRecorder, CpuStepsAreWrittenAtOnceLikeStep) {
  testing::TempDir dir;
  const auto w = sample({5, 3});
  const auto loss = at::full({}, 1.5, at::kFloat);
  const std::vector<at::Tensor> params{w};
  {
    Recorder rec(dir.path(), 0);
    rec.params({whole_param("w", w)});
    rec.step_async({1, &loss, nullptr, params, {}, {}});
    EXPECT_FALSE(rec.pending());
    EXPECT_EQ(rec.pending_steps(), 0u);
    EXPECT_EQ(rec.before_update(), 0);
    EXPECT_EQ(read_trace(dir).steps.size(), 1u);
    rec.step({2, &loss, nullptr, params, {}, {}});
  }
  const auto trace = read_trace(dir);
  ASSERT_EQ(trace.steps.size(), 2u);
  for (const char* name : {"param.xxh3", "param.shard"}) {
    ASSERT_TRUE(trace.steps[0].find_hashes(name) && trace.steps[1].find_hashes(name));
    EXPECT_EQ(trace.steps[0].find_hashes(name)->values, trace.steps[1].find_hashes(name)->values);
  }
  EXPECT_EQ(trace.steps[0].find_hashes("param.xxh3")->values[0], hash_block(w).xxh3);
  EXPECT_EQ(trace.steps[0].loss->bits, 0x3FC00000u);
}

// CUDA: the record holds the tensors as they were when step_async was called, even though the
// training stream overwrites them right after before_update (the update waits for the hashes),
// and records come out in step order, the last one at flush. Skips without a GPU.
TEST(AsyncRecorder, CudaHashesSeeTheTensorsAsEnqueued) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): async recording not run";
  testing::TempDir dir;
  const auto big_cpu = sample({2048, 4096});  // 32 MiB: long enough for the update to overtake it
  const auto small_cpu = sample({7, 33}, at::kBFloat16);
  auto big = big_cpu.to(at::kCUDA);
  auto small = small_cpu.to(at::kCUDA);
  const auto loss = at::full({}, 2.5, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
  const auto norm = at::full({}, 0.5, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
  const std::vector<at::Tensor> params{big, small};
  Recorder rec(dir.path(), 0);
  rec.params({whole_param("big", big_cpu), whole_param("small", small_cpu)});
  for (std::int64_t step = 1; step <= 3; ++step) {
    rec.before_update();
    big.add_(1.0);  // the "optimizer step": overwrites what the previous hashes read
    small.mul_(2.0);
    rec.step_async({step, &loss, &norm, params, {}, {}});
    EXPECT_TRUE(rec.pending());  // its own hashes, at least, are still out
    EXPECT_LE(rec.pending_steps(), Recorder::kMaxPendingSteps);
  }
  // Earlier steps are written once their hashes are back (by the recorder's own thread), and
  // never out of order.
  const auto early = read_trace(dir);
  EXPECT_LE(early.steps.size(), 2u);
  for (std::size_t i = 0; i < early.steps.size(); ++i)
    EXPECT_EQ(early.steps[i].step, static_cast<std::int64_t>(i + 1));
  rec.flush();
  EXPECT_FALSE(rec.pending());
  const auto trace = read_trace(dir);
  ASSERT_TRUE(trace.issues.empty());
  ASSERT_EQ(trace.steps.size(), 3u);
  auto big_want = big_cpu.clone();
  auto small_want = small_cpu.clone();
  for (std::int64_t step = 1; step <= 3; ++step) {
    big_want.add_(1.0);
    small_want.mul_(2.0);
    const auto& s = trace.steps[static_cast<std::size_t>(step - 1)];
    EXPECT_EQ(s.step, step);
    EXPECT_EQ(s.loss->bits, 0x40200000u);
    EXPECT_EQ(s.grad_norm->bits, 0x3F000000u);
    EXPECT_TRUE(s.extra.value("recorder_async", false));
    const auto* xxh = s.find_hashes("param.xxh3");
    const auto* shard = s.find_hashes("param.shard");
    ASSERT_TRUE(xxh && shard);
    EXPECT_EQ(xxh->values[0], hash_block(big_want).xxh3) << "step " << step;
    EXPECT_EQ(shard->values[0], hash_block(big_want).shard) << "step " << step;
    EXPECT_EQ(xxh->values[1], hash_block(small_want).xxh3) << "step " << step;
    EXPECT_EQ(shard->values[1], hash_block(small_want).shard) << "step " << step;
  }
}

// CUDA: the host waits for the hashes only when kMaxPendingSteps steps are out; every step is
// written, in order, with its own hashes and scalars (a bf16 loss keeps its 2-byte bits), also
// after a bigger params table and more hashed groups have made the recorder regrow its buffers.
// Skips without a GPU.
TEST(AsyncRecorder, CudaQueueIsBoundedAndKeepsStepOrder) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): async recording not run";
  testing::TempDir dir;
  const auto a_cpu = sample({64, 48});
  const auto b_cpu = sample({5, 9}, at::kBFloat16);
  const auto a = a_cpu.to(at::kCUDA);
  const auto b = b_cpu.to(at::kCUDA);
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const auto loss = at::full({}, -1.25, cuda.dtype(at::kBFloat16));  // bits 0xBFA0
  const auto norm = at::full({}, 3.0, cuda.dtype(at::kFloat));       // bits 0x40400000
  const std::vector<at::Tensor> one{a};
  const std::vector<at::Tensor> two{a, b};
  const auto ga_cpu = a_cpu.mul(2.0);
  const auto gb_cpu = b_cpu.add(1.0);
  const std::vector<at::Tensor> grads{ga_cpu.to(at::kCUDA), gb_cpu.to(at::kCUDA)};
  constexpr std::int64_t kFirst = 2 * static_cast<std::int64_t>(Recorder::kMaxPendingSteps) + 1;
  {
    Recorder rec(dir.path(), 0);
    rec.params({whole_param("a", a_cpu)});
    for (std::int64_t step = 1; step <= kFirst; ++step) {
      rec.step_async({step, &loss, &norm, one, {}, {}});
      EXPECT_GE(rec.pending_steps(), 1u);
      EXPECT_LE(rec.pending_steps(), Recorder::kMaxPendingSteps);
    }
    rec.params({whole_param("a", a_cpu), whole_param("b", b_cpu)});  // writes what is pending
    EXPECT_FALSE(rec.pending());
    rec.step_async({kFirst + 1, &loss, nullptr, two, grads, {}});
    rec.step_async({kFirst + 2, nullptr, &norm, two, {}, {}});
  }  // the destructor writes the last ones
  const auto trace = read_trace(dir);
  ASSERT_TRUE(trace.issues.empty());
  ASSERT_EQ(trace.steps.size(), static_cast<std::size_t>(kFirst + 2));
  const auto ha = hash_block(a_cpu);
  const auto hb = hash_block(b_cpu);
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const auto& s = trace.steps[i];
    EXPECT_EQ(s.step, static_cast<std::int64_t>(i + 1));
    EXPECT_TRUE(s.extra.value("recorder_async", false));
    const auto* xxh = s.find_hashes("param.xxh3");
    const auto* shard = s.find_hashes("param.shard");
    ASSERT_TRUE(xxh && shard) << "step " << s.step;
    EXPECT_EQ(xxh->values[0], ha.xxh3) << "step " << s.step;
    EXPECT_EQ(shard->values[0], ha.shard) << "step " << s.step;
    if (s.step <= kFirst) {
      EXPECT_EQ(xxh->values.size(), 1u);
      EXPECT_EQ(s.find_hashes("grad.xxh3"), nullptr);
    } else {
      ASSERT_EQ(xxh->values.size(), 2u);
      EXPECT_EQ(xxh->values[1], hb.xxh3);
      EXPECT_EQ(shard->values[1], hb.shard);
    }
    if (s.step != kFirst + 2) {
      ASSERT_TRUE(s.loss.has_value());
      EXPECT_EQ(s.loss->dtype, model::DType::BF16);
      EXPECT_EQ(s.loss->bits, 0xBFA0u);
    } else {
      EXPECT_FALSE(s.loss.has_value());
    }
    if (s.step != kFirst + 1) {
      ASSERT_TRUE(s.grad_norm.has_value());
      EXPECT_EQ(s.grad_norm->bits, 0x40400000u);
    } else {
      EXPECT_FALSE(s.grad_norm.has_value());
    }
  }
  const auto& with_grads = trace.steps[static_cast<std::size_t>(kFirst)];
  const auto* grad_xxh = with_grads.find_hashes("grad.xxh3");
  const auto* grad_shard = with_grads.find_hashes("grad.shard");
  ASSERT_TRUE(grad_xxh && grad_shard);
  EXPECT_EQ(grad_xxh->values, (std::vector<std::uint64_t>{hash_block(ga_cpu).xxh3, hash_block(gb_cpu).xxh3}));
  EXPECT_EQ(grad_shard->values,
            (std::vector<std::uint64_t>{hash_block(ga_cpu).shard, hash_block(gb_cpu).shard}));
}

// GPARITY_RECORDER_PROFILE=1: the recorder says on stderr, when it goes, where its host time went.
TEST(Recorder, ProfilePrintsThePhasesOnStderr) {
  testing::TempDir dir;
  const auto w = sample({6, 4});
  const auto loss = at::full({}, 1.0, at::kFloat);
  const std::vector<at::Tensor> params{w};
  ::setenv("GPARITY_RECORDER_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    Recorder rec(dir.path(), 3);
    rec.params({whole_param("w", w)});
    for (std::int64_t step = 1; step <= 3; ++step) rec.step_async({step, &loss, nullptr, params, {}, {}});
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("GPARITY_RECORDER_PROFILE");
  EXPECT_NE(err.find("gparity recorder profile, rank 3: 3 steps"), std::string::npos) << err;
  EXPECT_NE(err.find("total"), std::string::npos) << err;
  EXPECT_NE(err.find("write"), std::string::npos) << err;
  // Without the variable: nothing.
  ::testing::internal::CaptureStderr();
  { Recorder quiet(dir.path(), 4); }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(DebugModel, LossIsDeterministicAndNearLogVocab) {
  const DebugModelConfig cfg{
      .vocab = 64, .dim = 32, .layers = 1, .heads = 2, .hidden = 64, .seq_len = 8, .batch = 2};
  std::vector<at::Tensor> params;
  for (const auto& d : debug_model_params(cfg)) params.push_back(debug_model_init(d, 7));
  const auto tokens = synthetic_tokens(cfg, 7, 0, 1);
  EXPECT_TRUE(synthetic_tokens(cfg, 7, 0, 1).equal(tokens));
  EXPECT_FALSE(synthetic_tokens(cfg, 7, 1, 1).equal(tokens));
  const auto a = debug_model_loss(cfg, params, tokens).item<float>();
  const auto b = debug_model_loss(cfg, params, tokens).item<float>();
  EXPECT_EQ(std::bit_cast<std::uint32_t>(a), std::bit_cast<std::uint32_t>(b));
  EXPECT_NEAR(a, std::log(64.0), 0.5);  // small init: close to uniform predictions
}

}  // namespace
}  // namespace gparity::runtime
