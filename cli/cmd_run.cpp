// `gparity run`: trains the built-in debug model on N ranks over c10d and records a trace v1 run
// directory. With --nproc N it starts the N local ranks itself (like torchrun --standalone, or
// one node's share with --nnodes/--node-rank/--master-addr/--master-port) and prefixes their
// output with the rank; without it, it is one rank of a run launched elsewhere (torchrun
// --no-python, srun, mpirun) and reads RANK / WORLD_SIZE / MASTER_ADDR / ... or Slurm's SLURM_*.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/node_options.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/display_text.hpp"
#include "core/runtime/launcher.hpp"
#include "core/runtime/runner.hpp"
#include "core/runtime/static_inputs.hpp"

namespace gparity::cli {
namespace {

struct RunCliOptions {
  runtime::RunOptions run;
  int nproc = 0;
  NodeOptions nodes;
  double timeout_s = 60;
  std::string bucket_order = "registration";
  std::string fault;
  bool json = false;
};

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(f, a, '\0')) args.push_back(a);
  return args;
}

std::string own_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string("gparity");
}

runtime::FaultSpec parse_fault(const std::string& text) {
  runtime::FaultSpec f;
  if (text.empty()) return f;
  std::istringstream in(text);
  std::string kind, rank, step;
  if (!std::getline(in, kind, ':') || !std::getline(in, rank, ':') || !std::getline(in, step))
    throw std::invalid_argument("--inject-fault takes KIND:RANK:STEP, e.g. kill:1:3");
  if (kind == "kill")
    f.kind = runtime::FaultKind::Kill;
  else if (kind == "hang")
    f.kind = runtime::FaultKind::Hang;
  else if (kind == "exit")
    f.kind = runtime::FaultKind::Exit;
  else
    throw std::invalid_argument("--inject-fault kind must be kill, hang or exit");
  f.rank = std::stoi(rank);
  f.step = std::stoll(step);
  return f;
}

std::string step_line(const runtime::StepReport& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "step %lld/%lld  loss %.6f  grad_norm %.6f  %.2f steps/s  recorder %.2f ms",
                static_cast<long long>(r.step), static_cast<long long>(r.steps), r.loss, r.grad_norm,
                r.steps_per_s, static_cast<double>(r.recorder_ns) / 1e6);
  return buf;
}

int run_one_rank(const RunCliOptions& o) {
  const auto env = runtime::rank_env_from_environment();
  const bool launched = std::getenv("GPARITY_LAUNCHED") != nullptr;
  const bool bar = !launched && env.rank == 0 && colour_enabled(stderr) && !o.json;
  ProgressBar progress("training", static_cast<std::uint64_t>(o.run.steps));
  try {
    const auto summary = runtime::run_rank(o.run, env, [&](const runtime::StepReport& r) {
      if (bar) {
        progress.update(static_cast<std::uint64_t>(r.step), step_line(r).substr(step_line(r).find("  ") + 2));
      } else if (!o.json) {
        std::cout << step_line(r) << std::endl;
      }
    });
    progress.finish();
    if (o.json) {
      std::cout << nlohmann::json{{"rank", env.rank},
                                  {"steps", summary.steps},
                                  {"mean_step_ns", summary.mean_step_ns},
                                  {"mean_recorder_ns", summary.mean_recorder_ns},
                                  {"median_step_ns", summary.median_step_ns},
                                  {"median_recorder_ns", summary.median_recorder_ns},
                                  {"peak_allocated", summary.peak_allocated},
                                  {"peak_reserved", summary.peak_reserved},
                                  {"graph_replays", summary.graph_replays},
                                  {"out", o.run.out_dir.string()}}
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << std::endl;
    } else if (env.rank == 0 || !launched) {
      std::cout << "run complete: " << summary.steps << " steps, trace in "
                << model::shown(o.run.out_dir.string()) << std::endl;
    }
    return kExitParity;
  } catch (const runtime::RankFailure& e) {
    progress.finish();
    std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    progress.finish();
    std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
    return kExitBadInput;
  } catch (const runtime::CudaGraphCheckFailure& e) {
    progress.finish();
    std::cerr << "gparity: error: rank " << env.rank << ": " << model::display_lines(e.what()) << std::endl;
    return kExitBadInput;
  } catch (const std::exception& e) {  // a failed capture, a CUDA error: said, not a crash
    progress.finish();
    std::cerr << "gparity: error: rank " << env.rank << ": " << model::display_lines(e.what()) << std::endl;
    return kExitBadInput;
  }
}

int launch(const RunCliOptions& o) {
  runtime::LaunchOptions lo;
  lo.nproc = o.nproc;
  lo.node = o.nodes.layout;
  lo.exe = own_executable();
  lo.args = runtime::rank_arguments(own_command_line());
  lo.grace = o.run.timeout + std::chrono::seconds(3);
  const bool tty = colour_enabled(stderr) && !o.json;
  ProgressBar progress("training", static_cast<std::uint64_t>(o.run.steps));
  const auto result = runtime::launch_local(lo, [&](int rank, bool is_stderr, std::string_view line) {
    if (tty && line.starts_with("step ")) {
      if (rank == 0) {
        const auto slash = line.find('/');
        const auto gap = line.find("  ");
        if (slash != std::string_view::npos && gap != std::string_view::npos)
          progress.update(std::strtoull(std::string(line.substr(5, slash - 5)).c_str(), nullptr, 10),
                          line.substr(gap + 2));
      }
      return;
    }
    if (tty) progress.finish();
    auto& stream = is_stderr ? std::cerr : std::cout;
    stream << "[rank " << rank << "] " << model::shown(line) << std::endl;
  });
  progress.finish();
  if (!result.ok()) {
    std::cerr << paint("gparity: error: run failed: " + model::display_text(result.failure), Colour::Red,
                       colour_enabled(stderr))
              << "; trace so far in " << o.run.out_dir.string() << std::endl;
    return kExitBadInput;
  }
  return kExitParity;
}

}  // namespace

void register_run(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Train the built-in debug model (a small Llama-style transformer) with FSDP-style sharding over "
      "c10d (Gloo on CPU, NCCL on GPU) and record a trace. With --nproc N, start N local ranks; "
      "otherwise read RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT (torchrun --no-python).");
  auto& r = o->run;
  cmd->add_option("--out", r.out_dir, "Run directory to write (manifest.json, rank-<r>.jsonl)")->required();
  cmd->add_option("--nproc", o->nproc, "Start this many local ranks")->check(CLI::Range(1, 1024));
  o->nodes.add_to(cmd);
  cmd->add_option("--steps", r.steps, "Training steps")->capture_default_str();
  cmd->add_option("--seed", r.seed, "Seed of weights and synthetic data")->capture_default_str();
  cmd->add_option("--dtype", r.dtype, "Parameter and compute dtype")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--optimizer", r.optimizer, "Optimizer")
      ->check(CLI::IsMember({"adamw", "sgd"}))
      ->capture_default_str();
  cmd->add_option("--lr", r.lr, "Learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", r.weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--clip", r.clip, "Clip the gradient norm to this (0: off)")->capture_default_str();
  cmd->add_option("--hash-every", r.hash_every, "Hash all weights every N steps (and the last); 0: never")
      ->capture_default_str();
  cmd->add_flag("!--hash-sync", r.hash_async,
                "CUDA: hash on the training stream and wait each step (default: on a side stream while the "
                "next step runs, each step's record written once its hashes are back, a step or two late)");
  cmd->add_flag("--hash-grads", r.hash_grads, "Also hash gradients (after reduce-scatter and clipping)");
  cmd->add_flag("--hash-optim", r.hash_optim, "Also hash optimizer state");
  cmd->add_option("--bucket-order", o->bucket_order,
                  "Reduce-scatter payload order: registration (eager FSDP2) or execution (graph order)")
      ->check(CLI::IsMember({"registration", "execution"}))
      ->capture_default_str();
  cmd->add_option(
         "--ring-orders", r.ring_orders,
         "CUDA: run NCCL's rings in other rank orders per channel, as multi-node jobs do "
         "(reverse-odd, rotate, random; sets NCCL_ALGO=Ring and NCCL_GRAPH_FILE; docs/ring-orders.md)")
      ->check(CLI::IsMember({"reverse-odd", "rotate", "random"}));
  cmd->add_option("--ring-seed", r.ring_seed, "Seed of --ring-orders random")->capture_default_str();
  cmd->add_option("--device", r.device, "cpu (Gloo) or cuda (NCCL, one GPU per local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds a collective may wait before the run stops, naming the stuck rank")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto& m = r.model;
  cmd->add_option("--vocab", m.vocab, "Vocabulary size")->capture_default_str()->group("Model");
  cmd->add_option("--dim", m.dim, "Model width")->capture_default_str()->group("Model");
  cmd->add_option("--layers", m.layers, "Transformer blocks")->capture_default_str()->group("Model");
  cmd->add_option("--heads", m.heads, "Attention heads")->capture_default_str()->group("Model");
  cmd->add_option("--hidden", m.hidden, "MLP width")->capture_default_str()->group("Model");
  cmd->add_option("--seq-len", m.seq_len, "Tokens per sequence")->capture_default_str()->group("Model");
  cmd->add_option("--batch", m.batch, "Sequences per rank per step")->capture_default_str()->group("Model");
  cmd->add_flag("--cuda-graph", r.cuda_graph,
                "Capture forward and backward (NCCL collectives included) into CUDA graphs after the warm-up "
                "steps and replay them every later step (--device cuda; docs/cuda-graphs.md)")
      ->group("CUDA graphs");
  cmd->add_option("--cuda-graph-warmup", r.cuda_graph_warmup,
                  "Eager steps on the capture stream before capturing")
      ->capture_default_str()
      ->group("CUDA graphs");
  cmd->add_flag(
         "--cuda-graph-check", r.cuda_graph_check,
         "Before each replay, check every static input's address, shape and dtype and every non-tensor "
         "argument against capture time; stop naming the first that changed")
      ->group("CUDA graphs");
  // Hidden, for tests: reallocates the first parameter at the start of this (replayed) step.
  cmd->add_option("--cuda-graph-plant-violation", r.cuda_graph_plant_violation)->group("");
  cmd->add_option("--inject-fault", o->fault, "Testing: KIND:RANK:STEP with KIND kill, hang or exit")
      ->group("Testing");
  cmd->add_flag("--json", o->json, "Machine-readable summary line per rank");
  cmd->callback([o, &action] {
    action = [o] {
      try {
        o->run.bucket_order = o->bucket_order == "execution" ? runtime::BucketOrder::Execution
                                                             : runtime::BucketOrder::Registration;
        o->run.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o->timeout_s * 1000));
        o->run.fault = parse_fault(o->fault);
        o->run.command_line = own_command_line();
        runtime::validate(o->run);
        o->nodes.apply(o->nproc > 0 && std::getenv("GPARITY_LAUNCHED") == nullptr);
      } catch (const std::invalid_argument& e) {
        std::cerr << "gparity: error: " << e.what() << '\n';
        return kExitBadInput;
      }
      if (o->nproc > 0 && std::getenv("GPARITY_LAUNCHED") == nullptr) return launch(*o);
      return run_one_rank(*o);
    };
  });
}

}  // namespace gparity::cli
