#include "core/runtime/runner.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/model/run/trace_writer.hpp"
#include "core/runtime/clock.hpp"
#include "core/runtime/cuda_graph.hpp"
#include "core/runtime/nccl_rings.hpp"
#include "core/runtime/recorder.hpp"
#include "core/runtime/static_inputs.hpp"
#include "hash/xxh3.hpp"

#if GPARITY_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gparity::runtime {
namespace {

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// Everything that decides the numbers of a run except the bucket order, which is the change
/// people compare.
std::string config_fingerprint(const RunOptions& o, int world) {
  const auto& m = o.model;
  std::string s = "debug-llama v1";
  for (auto v : {m.vocab, m.dim, m.layers, m.heads, m.hidden, m.seq_len, m.batch})
    s += " " + std::to_string(v);
  s += " steps " + std::to_string(o.steps) + " seed " + std::to_string(o.seed) + " " + o.dtype + " " +
       o.optimizer + " lr " + std::to_string(o.lr) + " wd " + std::to_string(o.weight_decay) + " clip " +
       std::to_string(o.clip) + " world " + std::to_string(world) + " " + o.device;
  return hash::to_hex(hash::xxh3_64(std::as_bytes(std::span(s.data(), s.size()))));
}

struct Param {
  ShardSpec spec;
  at::Tensor shard;  // [chunk_rows, ...] padded; rows past local_rows stay zero
  at::Tensor grad;   // same shape, after reduce-scatter
  at::Tensor exp_avg, exp_avg_sq;
  [[nodiscard]] at::Tensor block() const { return shard.narrow(0, 0, spec.local_rows); }
  [[nodiscard]] std::vector<std::int64_t> slot_shape() const {
    auto s = spec.global_shape;
    s[0] = spec.chunk_rows;
    return s;
  }
};

void inject_fault(const FaultSpec& f, int rank, std::int64_t step) {
  if (f.kind == FaultKind::None || f.rank != rank || f.step != step) return;
  switch (f.kind) {
    case FaultKind::Kill: std::raise(SIGKILL); break;
    case FaultKind::Exit: std::_Exit(3);
    case FaultKind::Hang:
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    case FaultKind::None: break;
  }
}

class Trainer {
 public:
  Trainer(const RunOptions& o, const RankEnv& env, Comm& comm, Recorder& rec)
      : o_(o), env_(env), comm_(comm), rec_(rec) {
    dtype_ = o.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
    device_ = o.device == "cuda" ? at::Device(at::kCUDA, static_cast<at::DeviceIndex>(env.local_rank))
                                 : at::Device(at::kCPU);
    topts_ = at::TensorOptions().dtype(dtype_).device(device_);
    defs_ = debug_model_params(o.model);
    plan_ = make_fsdp_plan(defs_, debug_model_groups(o.model), debug_model_execution_order(o.model),
                           o.bucket_order, env.world_size, env.rank);
    for (std::size_t i = 0; i < defs_.size(); ++i) {
      Param p{plan_.shards[i], {}, {}, {}, {}};
      const auto full = debug_model_init(defs_[i], o.seed).to(dtype_);
      p.shard = at::zeros(p.slot_shape(), topts_);
      p.shard.narrow(0, 0, p.spec.local_rows).copy_(full.narrow(0, p.spec.row_offset, p.spec.local_rows));
      if (o.optimizer == "adamw") {
        p.exp_avg = at::zeros_like(p.shard);
        p.exp_avg_sq = at::zeros_like(p.shard);
      }
      params_.push_back(std::move(p));
    }
  }

  void record_plan() {
    std::vector<model::ParamInfo> table;
    model::DevicesRecord devices;
    for (const auto& p : params_) {
      model::ParamInfo info;
      info.fqn = p.spec.fqn;
      info.dtype = trace_dtype(p.shard);
      info.global_shape = p.spec.global_shape;
      info.local_offsets = p.spec.local_offsets();
      info.local_shape = p.spec.local_shape();
      info.placements = {model::Placement{model::Placement::Kind::Shard, 0}};
      info.counts = true;
      table.push_back(std::move(info));
      devices.entries.push_back({p.spec.fqn, "param", device_.str()});
    }
    rec_.params(std::move(table));
    const auto elem = static_cast<std::int64_t>(params_.front().shard.element_size());
    model::BucketGroup group{"dp", {}};
    for (const auto& b : plan_.buckets) {
      model::Bucket bucket{"reduce_scatter", trace_dtype(params_.front().shard), {}};
      for (const auto& m : b.members)
        bucket.members.push_back({params_[m.param].spec.fqn, m.offset_elems * elem, m.numel * elem});
      group.buckets.push_back(std::move(bucket));
    }
    model::BucketsRecord buckets;
    buckets.groups.push_back(std::move(group));
    buckets.extra["order"] = std::string(bucket_order_name(plan_.order));
    buckets.extra["bucket_names"] = [&] {
      nlohmann::json names = nlohmann::json::array();
      for (const auto& b : plan_.buckets) names.push_back(b.name);
      return names;
    }();
    rec_.buckets(buckets);
    rec_.devices(devices);
  }

  StepReport step(std::int64_t step) {
    const std::int64_t t0 = now_ns();
    comm_.announce_step(step);
    inject_fault(o_.fault, env_.rank, step);

    StepReport r;
    const bool async = device_.is_cuda() && o_.hash_async;
    at::Tensor loss;
    if (o_.cuda_graph && step > o_.cuda_graph_warmup) {
      if (!graphs_ || !graphs_->captured()) capture(step);
      // A replay overwrites the loss and gradients of the last step in place: its pending hashes
      // must be done first (eager steps get fresh tensors and need not wait here).
      if (async) r.recorder_ns += rec_.before_update();
      if (o_.cuda_graph_plant_violation == step) plant_violation();
      if (o_.cuda_graph_check) require_unchanged(signature_, current_signature(), step);
      static_tokens_.copy_(synthetic_tokens(o_.model, o_.seed, env_.rank, step));
      copies_.copied(static_cast<std::int64_t>(static_tokens_.nbytes()));
      copies_.replayed();
      graphs_->replay();
      loss = static_loss_;
    } else {
      const auto forward_backward = [&] {
        std::vector<at::Tensor> full(params_.size());
        for (auto it = plan_.buckets.rbegin(); it != plan_.buckets.rend(); ++it) gather(*it, full);
        const auto tokens = synthetic_tokens(o_.model, o_.seed, env_.rank, step);
        loss = debug_model_loss(o_.model, full, tokens);
        loss.backward();
        for (const auto& b : plan_.buckets) reduce_scatter(b, full);
      };
      if (o_.cuda_graph) {
        // Warm-up: what will be captured allocates from the graphs' pool already.
        if (!graphs_) graphs_ = std::make_unique<StepGraphs>(device_.index());
        graphs_->warm_up_in_pool(forward_backward);
      } else {
        forward_backward();
      }
    }

    auto norm_sq = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device_));
    for (const auto& p : params_) norm_sq += p.grad.to(at::kFloat).pow(2).sum();
    comm_.all_reduce_sum(norm_sq, "all_reduce grad_norm");
    const auto grad_norm = norm_sq.sqrt().squeeze();
    if (o_.clip > 0) {
      const auto coef = (o_.clip / (grad_norm + 1e-6)).clamp_max(1.0);
      for (auto& p : params_) p.grad.mul_(coef.to(dtype_));
    }
    // The previous step's hashes read the weights and optimizer state this step overwrites.
    if (async) r.recorder_ns += rec_.before_update();
    optimizer_step(step);

    const bool hash_now = o_.hash_every > 0 && (step % o_.hash_every == 0 || step == o_.steps);
    std::vector<at::Tensor> blocks, grads, avg, avg_sq;
    for (const auto& p : params_) {
      if (hash_now) blocks.push_back(p.block());
      if (hash_now && o_.hash_grads) grads.push_back(p.grad.narrow(0, 0, p.spec.local_rows));
      if (hash_now && o_.hash_optim && p.exp_avg.defined()) {
        avg.push_back(p.exp_avg.narrow(0, 0, p.spec.local_rows));
        avg_sq.push_back(p.exp_avg_sq.narrow(0, 0, p.spec.local_rows));
      }
    }
    StepTensors st{step, &loss, &grad_norm, blocks, grads, {}};
    if (!avg.empty()) st.optim = {{"exp_avg", avg}, {"exp_avg_sq", avg_sq}};
    if (async) {
      // Only enqueued: the training stream goes on; recorder_ns is what the loop spent here.
      r.recorder_ns += rec_.step_async(st);
    } else {
#if GPARITY_HAVE_NCCL
      // The step's kernels finish first, so recorder_ns is the recorder's own cost and not the
      // wait for the training work that its first copy to the host would otherwise include.
      if (device_.is_cuda()) c10::cuda::device_synchronize();
#endif
      r.recorder_ns = rec_.step(st);
    }
    r.step = step;
    r.steps = o_.steps;
    r.loss = loss.item<double>();
    r.grad_norm = grad_norm.item<double>();
    r.step_ns = now_ns() - t0;
    return r;
  }

  /// Releases the CUDA graphs and their pool (before the process group goes away).
  void release_graphs(bool wait = true) {
    if (!graphs_) return;
    // Nothing may still run in the graphs' pool when it goes back to the allocator; after a
    // failure, though, a collective inside them may never end, and the process exits anyway.
    if (wait) synchronize_device(device_.index());
    static_full_.clear();
    static_loss_ = at::Tensor();
    graphs_->release();
    graphs_.reset();
  }

  [[nodiscard]] bool graph_mode() const noexcept {
    return o_.cuda_graph;
  }
  [[nodiscard]] const CopyStats& copies() const noexcept {
    return copies_;
  }
  [[nodiscard]] const DeviceMemory& warmup_memory() const noexcept {
    return warmup_memory_;
  }
  [[nodiscard]] std::int64_t capture_step() const noexcept {
    return capture_step_;
  }

 private:
  /// Captures the forward (all-gathers and loss) and the backward (autograd and reduce-scatters)
  /// of a step. Inputs: the parameter shards in place and the token buffer; outputs: the loss and
  /// each parameter's gradient, which stay at their capture-time addresses for every replay.
  void capture(std::int64_t step) {
    const auto dev = device_.index();
    // The eager steps are done before capturing: nothing of theirs is in flight for NCCL's
    // watchdog to poll, and their cached blocks go back, so the graphs' pool takes their place
    // instead of adding to it (peak reserved memory stays near eager's).
    synchronize_device(dev);
    warmup_memory_ = device_memory(dev);
    release_cached_device_memory();
    if (!graphs_) graphs_ = std::make_unique<StepGraphs>(dev);
    static_tokens_ = at::zeros({o_.model.batch, o_.model.seq_len + 1},
                               at::TensorOptions().dtype(at::kLong).device(device_));
    static_full_.assign(params_.size(), at::Tensor());
    comm_.set_graph_capture(true);
    try {
      graphs_->capture_forward([&] {
        for (auto it = plan_.buckets.rbegin(); it != plan_.buckets.rend(); ++it) gather(*it, static_full_);
        static_loss_ = debug_model_loss(o_.model, static_full_, static_tokens_);
      });
      graphs_->capture_backward([&] {
        static_loss_.backward();
        for (const auto& b : plan_.buckets) reduce_scatter(b, static_full_);
      });
    } catch (...) {
      comm_.set_graph_capture(false);
      throw;
    }
    comm_.set_graph_capture(false);
    signature_ = current_signature();
    capture_step_ = step;
    std::int64_t static_bytes = 0;
    for (const auto& t : signature_.tensors) static_bytes += t.bytes;
    const auto after = device_memory(dev);
    rec_.event(
        {"cuda_graph_capture",
         step,
         "captured forward and backward after " + std::to_string(o_.cuda_graph_warmup) + " warm-up steps",
         {{"warmup_steps", o_.cuda_graph_warmup},
          {"graphs", {"forward", "backward"}},
          {"static_inputs", signature_.tensors.size()},
          {"static_bytes", static_bytes},
          {"non_tensor_args", signature_.args.size()},
          {"non_static_inputs", {{{"name", "input.tokens"}, {"bytes", static_tokens_.nbytes()}}}},
          {"warmup_peak_allocated", warmup_memory_.peak_allocated},
          {"warmup_peak_reserved", warmup_memory_.peak_reserved},
          {"reserved_after_capture", after.reserved},
          {"allocated_after_capture", after.allocated}}});
  }

  /// What the graphs depend on now: tensors used in place and the values baked in at capture.
  [[nodiscard]] GraphSignature current_signature() const {
    GraphSignature sig;
    for (const auto& p : params_) {
      sig.tensors.push_back(static_tensor("param." + p.spec.fqn, p.shard));
      sig.tensors.push_back(static_tensor("grad." + p.spec.fqn, p.grad));
      if (p.exp_avg.defined()) {
        sig.tensors.push_back(static_tensor("optim.exp_avg." + p.spec.fqn, p.exp_avg));
        sig.tensors.push_back(static_tensor("optim.exp_avg_sq." + p.spec.fqn, p.exp_avg_sq));
      }
    }
    sig.tensors.push_back(static_tensor("input.tokens", static_tokens_));
    sig.tensors.push_back(static_tensor("output.loss", static_loss_));
    const auto& m = o_.model;
    sig.args = {{"world_size", std::to_string(env_.world_size)},
                {"rank", std::to_string(env_.rank)},
                {"device", device_.str()},
                {"dtype", o_.dtype},
                {"model", std::to_string(m.vocab) + "x" + std::to_string(m.dim) + " layers " +
                              std::to_string(m.layers) + " heads " + std::to_string(m.heads) + " hidden " +
                              std::to_string(m.hidden) + " eps " + std::to_string(m.norm_eps)},
                {"batch", std::to_string(m.batch)},
                {"seq_len", std::to_string(m.seq_len)},
                {"bucket_order", std::string(bucket_order_name(plan_.order))},
                {"buckets", std::to_string(plan_.buckets.size())}};
    return sig;
  }

  /// --cuda-graph-plant-violation: what a careless caller does, replacing a parameter by a copy.
  /// Its values are equal, only the address moves: without the check the graphs would go on
  /// reading the old storage and every later update would be lost to them.
  void plant_violation() {
    params_.front().shard = params_.front().shard.clone();
  }

  void gather(const PlanBucket& b, std::vector<at::Tensor>& full) {
    const std::int64_t n = b.numel_per_rank;
    const std::int64_t world = env_.world_size;
    auto in = at::empty({n}, topts_);
    for (const auto& m : b.members)
      in.narrow(0, m.offset_elems, m.numel).copy_(params_[m.param].shard.reshape({-1}));
    auto out = at::empty({world * n}, topts_);
    comm_.all_gather(in, out, "all_gather");
    const auto grid = out.view({world, n});
    for (const auto& m : b.members) {
      const auto& p = params_[m.param];
      auto shape = p.slot_shape();
      shape[0] *= world;
      auto t = grid.narrow(1, m.offset_elems, m.numel).reshape(shape).narrow(0, 0, p.spec.global_shape[0]);
      full[m.param] = t.contiguous().detach();
      full[m.param].set_requires_grad(true);
    }
  }

  void reduce_scatter(const PlanBucket& b, const std::vector<at::Tensor>& full) {
    const std::int64_t n = b.numel_per_rank;
    const std::int64_t world = env_.world_size;
    auto in = at::zeros({world, n}, topts_);
    for (const auto& m : b.members) {
      const auto& p = params_[m.param];
      auto shape = p.slot_shape();
      shape[0] *= world;
      auto padded = at::zeros(shape, topts_);
      padded.narrow(0, 0, p.spec.global_shape[0]).copy_(full[m.param].grad());
      in.narrow(1, m.offset_elems, m.numel).copy_(padded.view({world, m.numel}));
    }
    auto out = at::empty({n}, topts_);
    comm_.reduce_scatter_sum(in.view({-1}), out, "reduce_scatter");
    out.div_(static_cast<double>(world));
    for (const auto& m : b.members) {
      auto& p = params_[m.param];
      p.grad = out.narrow(0, m.offset_elems, m.numel).view(p.slot_shape());
    }
  }

  void optimizer_step(std::int64_t step) {
    if (o_.optimizer == "sgd") {
      for (auto& p : params_) p.shard.add_(p.grad, -o_.lr);
      return;
    }
    // torch.optim.AdamW (decoupled weight decay, non-fused, non-capturable), element by element.
    constexpr double b1 = 0.9, b2 = 0.95, eps = 1e-8;
    const double bc1 = 1.0 - std::pow(b1, static_cast<double>(step));
    const double bc2 = 1.0 - std::pow(b2, static_cast<double>(step));
    for (auto& p : params_) {
      p.shard.mul_(1.0 - o_.lr * o_.weight_decay);
      p.exp_avg.lerp_(p.grad, 1.0 - b1);
      p.exp_avg_sq.mul_(b2).addcmul_(p.grad, p.grad, 1.0 - b2);
      const auto denom = (p.exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(eps);
      p.shard.addcdiv_(p.exp_avg, denom, -o_.lr / bc1);
    }
  }

  const RunOptions& o_;
  RankEnv env_;
  Comm& comm_;
  Recorder& rec_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_{at::kCPU};
  at::TensorOptions topts_;
  std::vector<ParamDef> defs_;
  FsdpPlan plan_;
  std::vector<Param> params_;
  // --cuda-graph
  std::unique_ptr<StepGraphs> graphs_;
  at::Tensor static_tokens_;  // the one non-static input: copied into before each replay
  at::Tensor static_loss_;
  std::vector<at::Tensor> static_full_;  // the gathered parameters the forward graph writes
  GraphSignature signature_;
  CopyStats copies_;
  DeviceMemory warmup_memory_;
  std::int64_t capture_step_ = 0;
};

/// Where every rank runs (host, node, device), gathered through the rendezvous store: across
/// nodes only each rank knows its own host.
std::vector<model::RankInfo> gather_rank_infos(const RunOptions& o, const RankEnv& env, Comm& comm) {
  const std::string device = o.device == "cuda" ? "cuda:" + std::to_string(env.local_rank) : "cpu";
  const auto texts = comm.all_gather_text("rank_info", rank_info_text(own_rank_info(env, device)));
  std::vector<model::RankInfo> ranks;
  for (std::size_t r = 0; r < texts.size(); ++r)
    ranks.push_back(rank_info_from_text(texts[r], static_cast<int>(r)));
  return ranks;
}

void write_manifest_rank0(const RunOptions& o, const RankEnv& env, const Comm& comm,
                          std::vector<model::RankInfo> ranks) {
  model::RunManifest m;
  m.run_id = "gparity-run-" + iso_now() + "-" + std::to_string(getpid());
  m.world_size = env.world_size;
  m.steps = o.steps;
  m.mesh_shape = {env.world_size};
  m.mesh_dim_names = {"dp"};
  m.ranks = std::move(ranks);
  m.framework_versions = {{"torch", TORCH_VERSION}, {"gparity", "0.1.0"}, {"backend", comm.backend_name()}};
  m.command_line = o.command_line;
  m.config_fingerprint = config_fingerprint(o, env.world_size);
  m.start_time = iso_now();
  m.extra["bucket_order"] = std::string(bucket_order_name(o.bucket_order));
  if (o.device == "cuda") m.nccl = nccl_graph_info(o);
  m.extra["model"] = {{"kind", "debug-llama"},      {"vocab", o.model.vocab}, {"dim", o.model.dim},
                      {"layers", o.model.layers},   {"heads", o.model.heads}, {"hidden", o.model.hidden},
                      {"seq_len", o.model.seq_len}, {"batch", o.model.batch}};
  m.extra["train"] = {{"steps", o.steps},
                      {"seed", o.seed},
                      {"dtype", o.dtype},
                      {"optimizer", o.optimizer},
                      {"lr", o.lr},
                      {"weight_decay", o.weight_decay},
                      {"clip", o.clip},
                      {"hash_every", o.hash_every},
                      {"hash_async", o.hash_async && o.device == "cuda"}};
  m.extra["cuda_graph"] = {{"mode", o.cuda_graph ? "cuda_graph" : "eager"},
                           {"warmup_steps", o.cuda_graph ? o.cuda_graph_warmup : 0},
                           {"check", o.cuda_graph && o.cuda_graph_check},
                           {"optimizer_in_graph", false}};
  model::write_manifest(o.out_dir, m);
}

}  // namespace

void validate(const RunOptions& o) {
  validate(o.model);
  if (o.steps < 1) throw std::invalid_argument("--steps must be at least 1");
  if (o.dtype != "f32" && o.dtype != "bf16") throw std::invalid_argument("--dtype must be f32 or bf16");
  if (o.optimizer != "adamw" && o.optimizer != "sgd")
    throw std::invalid_argument("--optimizer must be adamw or sgd");
  if (o.hash_every < 0) throw std::invalid_argument("--hash-every must not be negative (0: never)");
  if (o.clip < 0) throw std::invalid_argument("--clip must not be negative");
  if (o.device != "cpu" && o.device != "cuda") throw std::invalid_argument("--device must be cpu or cuda");
  if (o.timeout.count() < 1) throw std::invalid_argument("--timeout must be positive");
  if (o.out_dir.empty()) throw std::invalid_argument("--out is required");
  if (o.cuda_graph) {
    if (o.device != "cuda") throw std::invalid_argument("--cuda-graph needs --device cuda");
    if (!cuda_graphs_available())
      throw std::invalid_argument("--cuda-graph needs a LibTorch with CUDA; this build has none");
    // The first collectives create the NCCL communicators, which cannot happen inside a capture.
    if (o.cuda_graph_warmup < 1) throw std::invalid_argument("--cuda-graph-warmup must be at least 1");
    if (o.cuda_graph_warmup >= o.steps)
      throw std::invalid_argument("--cuda-graph-warmup (" + std::to_string(o.cuda_graph_warmup) +
                                  ") must be less than --steps (" + std::to_string(o.steps) +
                                  "): no step would be replayed");
  } else if (o.cuda_graph_check || o.cuda_graph_plant_violation != 0) {
    throw std::invalid_argument("--cuda-graph-check and --cuda-graph-plant-violation need --cuda-graph");
  }
  if (o.cuda_graph_plant_violation != 0 &&
      (o.cuda_graph_plant_violation <= o.cuda_graph_warmup || o.cuda_graph_plant_violation > o.steps))
    throw std::invalid_argument("--cuda-graph-plant-violation must name a replayed step (" +
                                std::to_string(o.cuda_graph_warmup + 1) + ".." + std::to_string(o.steps) +
                                ")");
  if (!o.ring_orders.empty() && o.device != "cuda")
    throw std::invalid_argument("--ring-orders sets NCCL's rings: it needs --device cuda");
}

RunSummary run_rank(const RunOptions& o, const RankEnv& env,
                    const std::function<void(const StepReport&)>& on_step) {
  validate(o);
  // One intra-op thread per rank: ranks share the cores, and the reduction order of CPU kernels
  // then never depends on the machine's core count.
  at::set_num_threads(1);
#if GPARITY_HAVE_NCCL
  if (o.device == "cuda") c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
#endif
  if (o.cuda_graph) {
    // Without it, c10d marks every collective's buffers as used on its NCCL stream, and the
    // caching allocator may not reuse a block so marked until the capture is over: each bucket's
    // gather and reduce-scatter buffers then take their own memory in the graphs' pool (measured
    // on one H100: peak reserved 1.106x eager's at dim 1024). Stashed instead, they are released at
    // wait() and reused within the capture. Numerics are unchanged; a user's setting wins.
    setenv("TORCH_NCCL_AVOID_RECORD_STREAMS", "1", 0);
  }
  const CommBackend backend = o.device == "cuda" ? CommBackend::Nccl : CommBackend::Gloo;
  Comm comm(env, backend, o.timeout);
  setup_ring_orders(o, env, comm);  // before the first collective makes NCCL's communicator
  Recorder rec(o.out_dir, env.rank);
  auto rank_infos = gather_rank_infos(o, env, comm);
  if (env.rank == 0) write_manifest_rank0(o, env, comm, std::move(rank_infos));
  const bool cuda = o.device == "cuda";
  // --cuda-graph: the whole run (weights' initialisation, warm-up, capture, replays, optimizer,
  // recorder) on one side stream, as a capture needs a stream other than the default one.
  std::optional<CaptureStream> capture_stream;
  if (o.cuda_graph) capture_stream.emplace(env.local_rank);
  // Peaks from here: the run's own (a process may run several, as bench_cuda_graph does).
  if (cuda) reset_peak_device_memory(env.local_rank);
  Trainer trainer(o, env, comm, rec);
  trainer.record_plan();

  RunSummary summary;
  std::vector<double> step_ns, recorder_ns;
  std::int64_t step = 0;
  const auto record_memory = [&] {
    if (!cuda) return;
    const auto mem = device_memory(env.local_rank);
    summary.peak_allocated = mem.peak_allocated;
    summary.peak_reserved = mem.peak_reserved;
    nlohmann::json data{{"mode", o.cuda_graph ? "cuda_graph" : "eager"},
                        {"device", "cuda:" + std::to_string(env.local_rank)},
                        {"peak_allocated", mem.peak_allocated},
                        {"peak_reserved", mem.peak_reserved}};
    if (o.cuda_graph && trainer.capture_step() > 0) {
      const auto& c = trainer.copies();
      summary.graph_replays = c.replays;
      data["warmup_steps"] = o.cuda_graph_warmup;
      data["warmup_peak_allocated"] = trainer.warmup_memory().peak_allocated;
      data["warmup_peak_reserved"] = trainer.warmup_memory().peak_reserved;
      data["replays"] = c.replays;
      data["static_input_copies"] = c.copies;
      data["static_input_bytes"] = c.bytes;
      data["copies_per_replay"] = c.copies_per_replay();
      data["bytes_per_replay"] = c.bytes_per_replay();
    }
    rec.event({"device_memory", step > o.steps ? o.steps : step, "peak device memory of this rank", data});
  };
  try {
    const std::int64_t start = now_ns();
    for (step = 1; step <= o.steps; ++step) {
      auto r = trainer.step(step);
      r.steps_per_s = static_cast<double>(step) * 1e9 / static_cast<double>(now_ns() - start);
      summary.steps = step;
      summary.mean_step_ns += static_cast<double>(r.step_ns);
      summary.mean_recorder_ns += static_cast<double>(r.recorder_ns);
      step_ns.push_back(static_cast<double>(r.step_ns));
      recorder_ns.push_back(static_cast<double>(r.recorder_ns));
      if (on_step) on_step(r);
    }
    rec.flush();  // the last step's record, when it was hashed asynchronously
    comm.barrier("final barrier");
    record_memory();
    // Graphs hold NCCL kernels of this process group: they go before it does.
    trainer.release_graphs();
  } catch (const CudaGraphCheckFailure& e) {
    try {
      rec.flush();
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the violation is what gets reported
    }
    rec.event({"failure", step, e.what(), {{"cuda_graph_check", true}}});
    trainer.release_graphs(false);
    throw;
  } catch (const RankFailure& e) {
    try {
      rec.flush();                     // every completed step's line stays in the trace
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the failure is what gets reported
    }
    rec.event({"failure", step, e.what(), nlohmann::json::object()});
    // A peer is gone: the graphs' collectives may never finish, so no waiting for them here.
    trainer.release_graphs(false);
    throw;
  }
  comm.announce_done();
  if (summary.steps) {
    summary.mean_step_ns /= static_cast<double>(summary.steps);
    summary.mean_recorder_ns /= static_cast<double>(summary.steps);
    summary.median_step_ns = median(step_ns);
    summary.median_recorder_ns = median(recorder_ns);
  }
  return summary;
}

}  // namespace gparity::runtime
