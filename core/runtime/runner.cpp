#include "core/runtime/runner.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <stdexcept>
#include <thread>

#include "core/model/run/trace_writer.hpp"
#include "core/runtime/clock.hpp"
#include "core/runtime/nccl_rings.hpp"
#include "core/runtime/recorder.hpp"
#include "hash/xxh3.hpp"

#if GPARITY_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gparity::runtime {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
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

    std::vector<at::Tensor> full(params_.size());
    for (auto it = plan_.buckets.rbegin(); it != plan_.buckets.rend(); ++it) gather(*it, full);
    const auto tokens = synthetic_tokens(o_.model, o_.seed, env_.rank, step);
    const auto loss = debug_model_loss(o_.model, full, tokens);
    loss.backward();
    for (const auto& b : plan_.buckets) reduce_scatter(b, full);

    auto norm_sq = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device_));
    for (const auto& p : params_) norm_sq += p.grad.to(at::kFloat).pow(2).sum();
    comm_.all_reduce_sum(norm_sq, "all_reduce grad_norm");
    const auto grad_norm = norm_sq.sqrt().squeeze();
    if (o_.clip > 0) {
      const auto coef = (o_.clip / (grad_norm + 1e-6)).clamp_max(1.0);
      for (auto& p : params_) p.grad.mul_(coef.to(dtype_));
    }
    StepReport r;
    const bool async = device_.is_cuda() && o_.hash_async;
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

 private:
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
};

void write_manifest_rank0(const RunOptions& o, const RankEnv& env, const Comm& comm) {
  model::RunManifest m;
  m.run_id = "gparity-run-" + iso_now() + "-" + std::to_string(getpid());
  m.world_size = env.world_size;
  m.mesh_shape = {env.world_size};
  m.mesh_dim_names = {"dp"};
  for (int r = 0; r < env.world_size; ++r) {
    // Local ranks are r modulo the ranks of this host only for --nproc launches; torchrun-style
    // launches on one host give the same numbers.
    m.ranks.push_back({r, r == env.rank ? env.local_rank : r, hostname(),
                       o.device == "cuda" ? "cuda:" + std::to_string(r) : "cpu"});
  }
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
  const CommBackend backend = o.device == "cuda" ? CommBackend::Nccl : CommBackend::Gloo;
  Comm comm(env, backend, o.timeout);
  setup_ring_orders(o, env, comm);  // before the first collective makes NCCL's communicator
  Recorder rec(o.out_dir, env.rank);
  if (env.rank == 0) write_manifest_rank0(o, env, comm);
  Trainer trainer(o, env, comm, rec);
  trainer.record_plan();

  RunSummary summary;
  std::vector<double> step_ns, recorder_ns;
  std::int64_t step = 0;
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
  } catch (const RankFailure& e) {
    try {
      rec.flush();                     // every completed step's line stays in the trace
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the failure is what gets reported
    }
    rec.event({"failure", step, e.what(), nlohmann::json::object()});
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
