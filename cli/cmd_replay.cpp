// `gparity replay`: runs captured graphs (TORCH_TRACE, print_readable text, .pt2, our JSON) in C++
// on every rank through the c10 dispatcher, hashes every tensor each node produces and writes them
// as trace v1 "node" records (docs/replay.md). --against B runs a second graph on the same inputs,
// --coor rank 0's graph hoisted to each rank beside the rank's own. The run is the runtime's
// (core/runtime/replay.hpp), the verdict diff's (diff/replay/replay_verdict.hpp); this file parses the
// options and hands one to the other. With --nproc N it starts the N local ranks itself.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/group_options.hpp"
#include "cli/node_options.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/runtime/comm.hpp"
#include "core/runtime/interpreter/interpreter.hpp"
#include "core/runtime/replay.hpp"
#include "diff/causality/graph_comm.hpp"
#include "diff/replay/replay_verdict.hpp"

namespace gparity::cli {
namespace {

struct ReplayCliOptions {
  runtime::ReplayOptions run;
  GroupOptions groups;  // --group, --flight-recorder, --no-flight-recorder
  int nproc = 0;
  NodeOptions nodes;
};

/// One rank: run the graphs, judge (exchanging with the other ranks), finish.
int run_one_rank(ReplayCliOptions& o) {
  o.run.groups = o.groups.load(o.run.source, o.run.group_dumps);
  o.run.command_line = runtime::own_command_line();
  runtime::ReplaySession session(o.run, std::cout, std::cerr);
  session.run();
  if (!session.comparing()) return session.finish({}, {}, {}, kExitParity);
  const auto rank_run = [&session] {
    const auto& jobs = session.jobs();
    diff::ReplayRankRun run;
    run.rank = session.rank();
    run.label_a = jobs[0].label;
    run.label_b = jobs[1].label;
    run.a = {jobs[0].records, &jobs[0].hoisted.graph};
    run.b = {jobs[1].records, &jobs[1].hoisted.graph};
    run.outputs_a = jobs[0].outputs;
    run.outputs_b = jobs[1].outputs;
    return run;
  };
  // --node-hash lazy: the first pass hashed outputs and collective inputs; where they differ on
  // this rank, every node is hashed again, so the verdict names the node the full mode names.
  if (session.lazy()) (void)session.finish_lazy_pass(!diff::replay_rank_equal(rank_run()));
  const auto run = rank_run();
  const auto mode = o.run.cuda_graph ? diff::ReplayMode::CudaGraph
                    : o.run.coor     ? diff::ReplayMode::Coor
                                     : diff::ReplayMode::Against;
  const auto v = diff::judge_replay(
      mode, run, diff::causality::group_table(o.run.groups),
      [&](const std::string& key, const std::string& text) { return session.exchange(key, text); },
      [&](std::string& problem) { return session.run_alone(problem); });
  return session.finish(v.text, v.overall, v.json, v.exit_code);
}

}  // namespace

void register_replay(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReplayCliOptions>();
  auto& r = o->run;
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Run a captured graph (TORCH_TRACE, print_readable text, .pt2, gparity JSON) in C++ through the "
      "c10 dispatcher on every rank, hash every tensor each node produces and write them as node "
      "records of a trace (docs/replay.md). Exit 0: ran (and with --against/--coor: bitwise equal), "
      "1: divergence, 2: bad input.");
  cmd->add_option("SOURCE", r.source, "Graph source: TORCH_TRACE directory or log, FX text, .pt2, JSON")
      ->required();
  cmd->add_option("--out", r.out, "Run directory to write (manifest.json, rank-<r>.jsonl)")->required();
  cmd->add_option("--graph", r.kind, "Graph kind, e.g. aot_forward_graph, inductor_post_grad_graph");
  cmd->add_option("--compile-id", r.compile_id, "Compile id, e.g. 0/0");
  cmd->add_option("--index", r.index, "Which one when the kind occurs several times (0-based)");
  cmd->add_option("--rank", r.rank, "Replay this rank's graph of a multi-rank trace on every rank");
  cmd->add_option("--against", r.against,
                  "Second graph source: run both on identical inputs and report the first divergent node");
  cmd->add_option("--against-graph", r.against_kind, "Graph kind in the --against source (default: --graph)");
  cmd->add_flag(
      "--coor", r.coor,
      "Compile-on-one-rank check: rank 0's graph, hoisted to each rank, beside the rank's own graph");
  cmd->add_option("--nproc", o->nproc, "Start this many local ranks")->check(CLI::Range(1, 1024));
  o->nodes.add_to(cmd);
  cmd->add_option("--device", r.device, "cpu (Gloo) or cuda (NCCL, one GPU per local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--inputs", r.inputs, "safetensors file with the inputs, by placeholder name");
  cmd->add_option("--seed", r.seed, "Seed of generated inputs (docs/replay.md)")->capture_default_str();
  cmd->add_option("--int-range", r.int_range,
                  "Generated integer inputs uniform in [LO, HI) (default: zeros)");
  cmd->add_flag("--per-rank-inputs", r.per_rank_inputs, "Generated inputs differ between ranks");
  cmd->add_option("--sym", r.syms, "Value of a symbolic size, NAME=INTEGER (repeatable)");
  o->groups.add_to(cmd);
  cmd->add_flag("--no-hash", r.no_hash, "Run without hashing (timing)");
  cmd->add_option("--node-hash", r.node_hash,
                  "shard: the shard-invariant hash of every node's tensors; both: XXH3-64 too (on a "
                  "GPU, XXH3 is a sequential chain per tensor); lazy: the graphs' outputs and "
                  "collective inputs, and every node only on ranks where those differ (docs/replay.md). "
                  "Default: lazy with --against, --coor or --repeat, else shard")
      ->check(CLI::IsMember({"both", "shard", "lazy"}));
  cmd->add_option("--node-hash-spec", r.node_hash_spec,
                  "Spec of the node records' shard hash (docs/hashing.md): v2 reads at memory "
                  "bandwidth; v1 compares with older runs by value (runs of two specs compare by XXH3)")
      ->check(CLI::IsMember({"v1", "v2"}))
      ->capture_default_str();
  cmd->add_option("--node-hash-stream", r.node_hash_stream,
                  "same: CUDA hashes run on the graph's stream after its nodes; side: on a "
                  "low-priority stream beside the graph's later nodes (docs/replay.md)")
      ->check(CLI::IsMember({"same", "side"}))
      ->capture_default_str();
  cmd->add_option("--node-hash-side-share", r.node_hash_side_share,
                  "With --node-hash-stream side: the share of the GPU's resident hash CTAs the hash "
                  "kernels may use, in (0, 1]")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--node-hash-side-batch", r.node_hash_side_batch_mib,
                  "With --node-hash-stream side: MiB of tensors a batch of hashes")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--node-hash-batch", r.node_hash_batch_mib,
                  "With --node-hash-stream same: MiB of tensors a batch of hashes (a batch is enqueued "
                  "once this much waits, before an op that writes in place and at the end of the run)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--node-hash-xxh3-chains", r.node_hash_xxh3_chains,
                  "Where XXH3's sequential scramble chains run: host (the device sums the blocks, "
                  "1/16 of the bytes comes back, CPU threads walk the chains) or device (one warp a "
                  "tensor; docs/replay.md)")
      ->check(CLI::IsMember({"host", "device"}))
      ->capture_default_str();
  cmd->add_flag("--hash-views", r.hash_views,
                "Hash view ops' results too (t, view, permute, ...: the schema says they alias an "
                "argument); by default they are recorded by their base and where they lie in it");
  // The default since issue 24; still accepted so that older command lines run.
  bool no_view_hashes = false;
  cmd->add_flag("--no-view-hashes", no_view_hashes, "Views are not hashed (the default)")->group("");
  cmd->add_option("--repeat", r.repeat,
                  "Run each graph N more times on the same inputs, timed (median in the summary)")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--cuda-graph", r.cuda_graph,
                "Capture the graph as a CUDA graph and replay it beside the uncaptured run; verdict: "
                "bitwise equal or the first divergent node (docs/cuda-graphs.md)");
  cmd->add_option("--cuda-graph-warmup", r.cuda_graph_warmup, "Uncaptured runs before the capture")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_flag("--cuda-graph-check", r.cuda_graph_check,
                "Before every replay, check that the static inputs and symbols are as captured");
  cmd->add_option("--timeout", r.timeout_s, "Seconds a collective may wait")->check(CLI::PositiveNumber);
  cmd->add_option("--gpus", r.gpus,
                  "GPUs to use (default: all visible). Fewer GPUs than ranks: ranks share GPUs, no two "
                  "ranks of a process group on one")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--json", r.json, "One JSON summary line per rank");
  cmd->callback([o, &action] {
    action = [o] {
      try {
        runtime::check_replay_options(o->run);
        const bool launching = o->nproc > 0 && std::getenv("GPARITY_LAUNCHED") == nullptr;
        o->nodes.apply(launching);
        if (launching) {
          const auto l = runtime::launch_replay_ranks(o->nproc, o->nodes.layout, o->run.timeout_s,
                                                      o->run.json, std::cout, std::cerr);
          if (l.exit_code == kExitBadInput)
            std::cerr << paint("gparity: error: replay failed: " + model::display_text(l.failure),
                               Colour::Red, colour_enabled(stderr))
                      << std::endl;
          return l.exit_code;
        }
        return run_one_rank(*o);
      } catch (const runtime::ReplayError& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const model::InputError& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const runtime::RankFailure& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const std::exception& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      }
      return kExitBadInput;
    };
  });
}

}  // namespace gparity::cli
