// `gparity replay`: runs captured graphs (TORCH_TRACE, print_readable text, .pt2, our JSON) in C++
// on every rank through the c10 dispatcher, hashes every tensor each node produces and writes them
// as trace v1 "node" records (docs/replay.md). --against B runs a second graph on the same inputs
// and reports the first divergent aligned node; --coor runs rank 0's graph, hoisted to this rank,
// beside this rank's own graph. With --nproc N it starts the N local ranks itself.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/group_options.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/atomic_file.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/graph/graph_json.hpp"
#include "core/model/graph/graph_load.hpp"
#include "core/model/graph/hoist.hpp"
#include "core/model/graph/process_groups.hpp"
#include "core/model/run/trace_writer.hpp"
#include "core/runtime/clock.hpp"
#include "core/runtime/cuda_graph.hpp"
#include "core/runtime/gpu_share.hpp"
#include "core/runtime/interpreter/captured_replay.hpp"
#include "core/runtime/interpreter/collectives.hpp"
#include "core/runtime/interpreter/device_remap.hpp"
#include "core/runtime/interpreter/inputs.hpp"
#include "core/runtime/interpreter/interpreter.hpp"
#include "core/runtime/launcher.hpp"
#include "diff/node_compare.hpp"

namespace gparity::cli {
namespace {

struct ReplayCliOptions {
  std::string source;
  std::string against;
  bool coor = false;
  std::string kind, against_kind, compile_id;
  std::optional<std::size_t> index;
  std::optional<int> rank;
  int nproc = 0;
  std::string device = "cpu";
  std::string out;
  std::string inputs;
  std::uint64_t seed = 0;
  std::string int_range;
  bool per_rank_inputs = false;
  std::vector<std::string> syms;
  GroupOptions groups;  // --group, --flight-recorder, --no-flight-recorder
  bool no_hash = false;
  std::string node_hash = "both";
  bool no_view_hashes = false;
  int repeat = 0;  // timed runs after the recorded one
  bool cuda_graph = false;
  int cuda_graph_warmup = 2;
  bool cuda_graph_check = false;
  bool json = false;
  double timeout_s = 120;
  int gpus = 0;  // 0: every visible GPU
};

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(f, a, '\0');) args.push_back(a);
  return args;
}

std::string own_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string("gparity-run");
}

/// pick()'s rank when the caller names none: the source's first rank. (An int, not an optional:
/// GCC 12 cannot follow an optional through pick()'s inlining, -Wmaybe-uninitialized.)
constexpr int kNoRank = -1;

/// One graph this rank runs, with its label in the records, as it runs it (hoisted to this rank).
struct Job {
  std::string label;
  const model::GraphEntry* entry = nullptr;
  model::HoistResult hoisted;
};

const model::GraphEntry& pick(const model::GraphCollection& c, const std::string& path, int rank,
                              const std::string& kind, const std::string& compile_id,
                              std::optional<std::size_t> index) {
  model::GraphSelector s;
  if (!c.ranks.empty()) s.rank = rank == kNoRank ? c.ranks.front() : rank;
  s.kind = kind;
  s.occurrence = index;
  if (!compile_id.empty()) {
    s.compile = model::CompileId::parse(compile_id);
    if (!s.compile) throw model::InputError(compile_id, "not a compile id (expected e.g. 0/0 or 0/0_1)");
  }
  const auto found = model::select_graphs(c, s);
  if (found.empty())
    throw model::InputError(path, "no graph matches the selection" +
                                      (s.rank ? " for rank " + std::to_string(*s.rank) : std::string()) +
                                      " (see `gparity graph list " + path + "`)");
  if (found.size() > 1) {
    std::string which;
    for (const auto* e : found)
      which += "\n  --compile-id " + e->compile.text() + " --graph " + e->kind + " --index " +
               std::to_string(e->occurrence);
    throw model::InputError(path,
                            std::to_string(found.size()) + " graphs match; narrow the selection:" + which);
  }
  return *found.front();
}

std::string device_of(const ReplayCliOptions& o, const runtime::RankEnv& env) {
  return o.device == "cuda" ? "cuda:" + std::to_string(env.local_rank) : "cpu";
}

runtime::GroupRanks group_ranks(const model::ProcessGroupTable& table) {
  runtime::GroupRanks groups;
  for (const auto& g : table.groups()) groups[g.name] = std::vector<int>(g.ranks.begin(), g.ranks.end());
  return groups;
}

bool same(const std::vector<model::NodeRecord>& a, const std::vector<model::NodeRecord>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i].has_xxh3 && b[i].has_xxh3 && a[i].xxh3 != b[i].xxh3) || a[i].shard != b[i].shard ||
        a[i].dtype != b[i].dtype || a[i].shape != b[i].shape || a[i].output != b[i].output)
      return false;
  return true;
}

struct Verdict {
  bool equal = true;
  std::string text;  // the first divergent node, when not equal
  nlohmann::json json = nlohmann::json::object();
};

/// Outputs of A and B compared bitwise; when they differ, the first divergent node of A as
/// `gparity compare` finds it (diff/node_compare: aligned through graph_align, origin or
/// propagated).
Verdict compare_jobs(const Job& a, const std::vector<model::NodeRecord>& records_a,
                     const std::vector<model::NodeRecord>& out_a, const Job& b,
                     const std::vector<model::NodeRecord>& records_b,
                     const std::vector<model::NodeRecord>& out_b) {
  Verdict v;
  v.equal = same(out_a, out_b);
  v.json["outputs_equal"] = v.equal;
  const auto r =
      diff::compare_node_graph(a.label, {records_a, &a.hoisted.graph}, {records_b, &b.hoisted.graph});
  if (r.first) {
    const auto& d = *r.first;
    const bool origin = d.cause != diff::DivergenceCause::Propagated;
    v.equal = false;
    v.text = "first divergent node: " + d.node_a + " (" + d.op + ")" +
             (d.source.empty() ? "" : " at " + d.source) + " <-> " + b.label + " node " + d.node_b +
             (origin ? "; its inputs are equal (" + std::string(diff::divergence_cause_name(d.cause)) + ")"
                     : "; its inputs already differ (propagated)");
    v.json["first_divergent"] = {{"node", d.node_a},   {"op", d.op},
                                 {"source", d.source}, {"other_node", d.node_b},
                                 {"origin", origin},   {"cause", diff::divergence_cause_name(d.cause)}};
  }
  if (!v.equal && v.text.empty()) v.text = "outputs differ, but no aligned node's tensors do";
  return v;
}

std::map<std::string, std::int64_t> parse_syms(const std::vector<std::string>& syms) {
  std::map<std::string, std::int64_t> out;
  for (const auto& s : syms) {
    const auto eq = s.find('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument("");
      std::size_t used = 0;
      out[s.substr(0, eq)] = std::stoll(s.substr(eq + 1), &used);
      if (used != s.size() - eq - 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("--sym takes NAME=INTEGER, got \"" + s + "\"");
    }
  }
  return out;
}

runtime::InputOptions input_options(const ReplayCliOptions& o, int rank) {
  runtime::InputOptions io;
  io.safetensors = o.inputs;
  io.seed = o.seed;
  io.per_rank = o.per_rank_inputs;
  io.rank = rank;
  if (!o.int_range.empty()) {
    const auto colon = o.int_range.find(':', 1);
    try {
      if (colon == std::string::npos) throw std::invalid_argument("");
      io.int_range =
          std::pair{std::stoll(o.int_range.substr(0, colon)), std::stoll(o.int_range.substr(colon + 1))};
    } catch (const std::exception&) {
      throw std::invalid_argument("--int-range takes LO:HI, got \"" + o.int_range + "\"");
    }
  }
  return io;
}

void write_manifest(const ReplayCliOptions& o, const runtime::RankEnv& env) {
  model::RunManifest m;
  m.run_id = "gparity-replay-" + std::to_string(getpid());
  m.world_size = env.world_size;
  for (int r = 0; r < env.world_size; ++r)
    m.ranks.push_back({r, r, "", o.device == "cuda" ? "cuda:" + std::to_string(r) : "cpu"});
  m.framework_versions = {{"torch", runtime::torch_version()}, {"gparity", "0.1.0"}};
  m.command_line = own_command_line();
  m.extra["replay"] = {{"source", o.source}, {"against", o.against}, {"coor", o.coor}, {"seed", o.seed}};
  model::write_manifest(o.out, m);
}

/// Writes the graph a job runs (as hoisted and placed) as graph JSON into the run directory,
/// graphs/<label>.rank<r>.json, and a "graph" record naming it by its label, so that `gparity
/// compare` of two replay runs aligns their nodes through the graphs. Subgraphs run by
/// higher-order ops (records labelled "<label>/<subgraph>") get a file and a record each.
void write_graph_records(const std::string& run_dir, int rank, const Job& j, model::TraceWriter& writer) {
  namespace fs = std::filesystem;
  fs::create_directories(fs::path(run_dir) / "graphs");
  const auto write = [&](const auto& self, const model::Graph& g, const std::string& label) -> void {
    std::string file = label;
    std::replace_if(
        file.begin(), file.end(), [](char c) { return c == '/' || c == '\\' || c == ' '; }, '.');
    const std::string rel = "graphs/" + file + ".rank" + std::to_string(rank) + ".json";
    model::write_file_atomically(fs::path(run_dir) / rel, model::graph_to_json(g).dump() + '\n');
    model::GraphRef ref;
    ref.path = rel;
    ref.kind = j.entry->kind;
    if (j.entry->compile.frame_id >= 0) ref.compile_id = j.entry->compile.text();
    ref.extra = {{"name", label}, {"source", j.entry->source}};
    if (j.entry->rank >= 0) ref.extra["rank"] = j.entry->rank;
    writer.write_graph(ref);
    for (const auto& sub : g.subgraphs) self(self, sub, label + "/" + std::string(sub.str(sub.name)));
  };
  write(write, j.hoisted.graph, j.label);
}

nlohmann::json timing_json(const std::vector<double>& ms) {
  return {{"runs", ms.size()},
          {"median_ms", runtime::median(ms)},
          {"min_ms", ms.empty() ? 0.0 : *std::min_element(ms.begin(), ms.end())},
          {"ms", ms}};
}

nlohmann::json memory_json(const runtime::DeviceMemory& m) {
  return {{"peak_allocated", m.peak_allocated}, {"peak_reserved", m.peak_reserved}};
}

/// --repeat: the graph again on the same bound inputs, each run timed (device synchronised),
/// hashing as the recorded run did (the records are not written again).
std::vector<double> timed_reruns(runtime::Interpreter& interp, runtime::InputSource& inputs, int runs,
                                 bool hash, int device_index) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r)
    ms.push_back(runtime::timed_on_device(device_index, [&] { (void)interp.rerun(inputs, {.hash = hash}); }));
  return ms;
}

/// --cuda-graph: the job's graph uncaptured and captured (core/runtime/interpreter/captured_replay),
/// both hashed after they finish; records labelled `job.label` and "cuda-graph". Returns the
/// verdict's exit code.
int replay_captured(const ReplayCliOptions& o, const runtime::RankEnv& env, const Job& job,
                    runtime::Interpreter& interp, runtime::InputSource& inputs, runtime::GroupComm* comm,
                    model::TraceWriter& writer, nlohmann::json& summary) {
  Job captured_job = job;
  captured_job.label = "cuda-graph";
  write_graph_records(o.out, env.rank, captured_job, writer);
  std::vector<model::NodeRecord> plain, captured;
  const auto keep = [&](std::vector<model::NodeRecord>& into, const std::string& label) {
    return [&into, &writer, label, top = job.label](const model::NodeRecord& r) {
      model::NodeRecord copy = r;
      const bool top_level = copy.graph == top;
      copy.graph = label + copy.graph.substr(top.size());
      writer.write_node(copy);
      if (top_level) into.push_back(std::move(copy));
    };
  };
  runtime::CapturedReplayOptions co;
  co.device_index = env.local_rank;
  co.warmup = o.cuda_graph_warmup;
  co.runs = std::max(1, o.repeat);
  co.check = o.cuda_graph_check;
  co.comm = comm;
  interp.bind_inputs(inputs);
  const auto r =
      runtime::run_captured(interp, inputs, co, keep(plain, job.label), keep(captured, "cuda-graph"));
  const auto v = compare_jobs(job, plain, r.uncaptured_outputs, captured_job, captured, r.captured_outputs);
  const std::string text = (v.equal ? "captured replay bitwise equal to the uncaptured run"
                                    : "captured replay differs from the uncaptured run") +
                           (v.text.empty() ? "" : "; " + v.text);
  nlohmann::json cg = {{"warmup", co.warmup},
                       {"static_inputs", r.static_inputs},
                       {"static_bytes", r.static_bytes},
                       {"copied_inputs", r.copied_inputs},
                       {"copies_per_replay", r.copies.copies_per_replay()},
                       {"bytes_per_replay", r.copies.bytes_per_replay()},
                       {"uncaptured", timing_json(r.uncaptured_ms)},
                       {"captured", timing_json(r.replay_ms)},
                       {"memory_uncaptured", memory_json(r.uncaptured_memory)},
                       {"memory_captured", memory_json(r.captured_memory)},
                       {"check", co.check}};
  summary["cuda_graph"] = cg;
  summary["verdict"] = v.json;
  summary["verdict"]["text"] = text;
  writer.write_event({"cuda_graph", std::nullopt, text, cg});
  writer.write_event({"replay_verdict", std::nullopt, text, summary["verdict"]});
  if (!o.json)
    std::cout << "rank " << env.rank << ": " << model::shown(job.label) << " captured as a CUDA graph ("
              << r.static_inputs << " static inputs, " << r.copied_inputs.size() << " copied per replay, "
              << r.copies.bytes_per_replay() << " bytes): uncaptured " << runtime::median(r.uncaptured_ms)
              << " ms, replay " << runtime::median(r.replay_ms) << " ms (median of " << co.runs << ")\n"
              << "rank " << env.rank << ": " << model::shown(text) << std::endl;
  return v.equal ? kExitParity : kExitDivergence;
}

/// What rank 0 says when ranks share GPUs: the map, and the groups left without a GPU per rank
/// (a collective on one of them is refused when the graph reaches it).
std::string gpu_sharing_note(const std::vector<int>& gpu_of_rank, int gpus,
                             const runtime::GroupRanks& groups) {
  std::string note =
      std::to_string(gpu_of_rank.size()) + " ranks on " + std::to_string(gpus) + " GPU(s), rank->GPU:";
  for (std::size_t r = 0; r < gpu_of_rank.size(); ++r)
    note += (r ? ", " : " ") + std::to_string(r) + "->" + std::to_string(gpu_of_rank[r]);
  std::string shared;
  for (const auto& [name, ranks] : groups)
    if (!runtime::gpu_share_conflict(ranks, gpu_of_rank).empty())
      shared += (shared.empty() ? "" : ", ") + name;
  return note + (shared.empty()
                     ? "; every process group has a GPU per rank"
                     : "; process group(s) " + shared +
                           " share a GPU, so a collective on them would be refused (NCCL needs a GPU "
                           "per rank of a group)");
}

/// With fewer GPUs than ranks on one node, the GPU of every rank (runtime::share_gpus: ranks of
/// a process group on distinct GPUs), and this rank's put in env.local_rank; else empty, every
/// rank on GPU LOCAL_RANK.
std::vector<int> place_on_gpus(const ReplayCliOptions& o, runtime::RankEnv& env,
                               const runtime::GroupRanks& groups) {
  if (o.device != "cuda") return {};
  const int visible = runtime::cuda_device_count();
  if (visible == 0) runtime::require_cuda_device(env.local_rank);  // says there is no GPU here
  if (o.gpus > visible)
    throw std::invalid_argument("--gpus " + std::to_string(o.gpus) + ": this machine has " +
                                std::to_string(visible) + " GPU(s)");
  const int gpus = o.gpus > 0 ? o.gpus : visible;
  const bool one_node = env.local_world_size == env.world_size;
  if (!one_node || (env.world_size <= gpus && env.local_rank < gpus)) {
    runtime::require_cuda_device(env.local_rank);
    return {};
  }
  auto gpu_of_rank = runtime::share_gpus(env.world_size, gpus, groups);
  env.local_rank = gpu_of_rank[static_cast<std::size_t>(env.rank)];
  if (env.rank == 0)
    std::cerr << "gparity replay: " << gpu_sharing_note(gpu_of_rank, gpus, groups) << std::endl;
  return gpu_of_rank;
}

int run_one_rank(const ReplayCliOptions& o) {
  auto env = runtime::rank_env_from_environment();
  const auto coll = model::load_graphs(o.source);
  std::vector<std::string> dumps_used;
  const auto table = o.groups.load(o.source, dumps_used);
  auto groups = group_ranks(table);
  const auto gpu_of_rank = place_on_gpus(o, env, groups);
  const auto device = device_of(o, env);
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000));
  const auto symbols = parse_syms(o.syms);
  const auto inputs_opts = input_options(o, env.rank);

  const bool multi = coll.ranks.size() > 1;
  const int own_rank = o.rank ? *o.rank : (multi ? env.rank : kNoRank);
  if (multi && !o.rank && std::find(coll.ranks.begin(), coll.ranks.end(), env.rank) == coll.ranks.end())
    throw model::InputError(o.source, "the trace has no graphs of rank " + std::to_string(env.rank));
  const auto& own = pick(coll, o.source, own_rank, o.kind, o.compile_id, o.index);
  const auto job = [&](std::string label, const model::GraphEntry& e) {
    runtime::ReplayPlacement p;
    p.source_rank = std::max(e.rank, 0);
    p.target_rank = env.rank;
    p.device = device;
    p.groups = &table;
    return Job{std::move(label), &e, runtime::hoist_for_replay(*e.graph, p)};
  };
  std::vector<Job> jobs;
  jobs.push_back(job(o.against.empty() && !o.coor ? (o.kind.empty() ? std::string("graph") : o.kind)
                                                  : (o.coor ? "own" : "a"),
                     own));
  std::optional<model::GraphCollection> other;
  if (!o.against.empty()) {
    other = model::load_graphs(o.against);
    const auto& b = pick(*other, o.against, own_rank, o.against_kind.empty() ? o.kind : o.against_kind,
                         o.compile_id, o.index);
    jobs.push_back(job("b", b));
  } else if (o.coor) {
    const auto& r0 = pick(coll, o.source, kNoRank, o.kind, o.compile_id, o.index);
    jobs.push_back(job("coor", r0));
  }
  for (const auto& j : jobs) {
    for (const auto& u : j.hoisted.unresolved)
      std::cerr << "rank " << env.rank << ": " << model::shown(j.label) << ": hoisting left "
                << model::shown(u.text) << " of node " << model::shown(u.node) << " ("
                << model::shown(u.target) << ", " << model::shown(u.field)
                << ") as it is: " << model::shown(u.message) << std::endl;
  }

  std::unique_ptr<runtime::GroupComm> comm;
  if (env.world_size > 1) {
    auto backend = o.device == "cuda" ? runtime::CommBackend::Nccl : runtime::CommBackend::Gloo;
    comm = std::make_unique<runtime::GroupComm>(env, backend, std::move(groups), timeout, gpu_of_rank);
  }
  if (env.rank == 0) write_manifest(o, env);
  model::TraceWriter writer(o.out, env.rank);
  for (const auto& j : jobs) write_graph_records(o.out, env.rank, j, writer);

  std::vector<std::vector<model::NodeRecord>> records(jobs.size());
  std::vector<std::vector<model::NodeRecord>> outputs(jobs.size());
  nlohmann::json summary = {{"rank", env.rank}, {"graphs", nlohmann::json::array()}};
  const int device_index = o.device == "cuda" ? env.local_rank : -1;
  if (o.cuda_graph) {
    runtime::InterpretOptions io;
    io.label = jobs[0].label;
    io.source = jobs[0].entry->source;
    io.device = device;
    io.symbols = symbols;
    io.comm = comm.get();
    io.rng_seed = o.seed;
    io.node_xxh3 = o.node_hash == "both";
    io.view_hashes = !o.no_view_hashes;
    runtime::Interpreter interp(jobs[0].hoisted.graph, io);
    runtime::InputSource inputs(inputs_opts);
    const int code = replay_captured(o, env, jobs[0], interp, inputs, comm.get(), writer, summary);
    if (comm) comm->barrier("end of replay");
    if (o.json) std::cout << summary.dump() << std::endl;
    return code;
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    runtime::InterpretOptions io;
    io.label = jobs[j].label;
    io.source = jobs[j].entry->source;
    io.device = device;
    io.hash = !o.no_hash;
    io.node_xxh3 = o.node_hash == "both";
    io.view_hashes = !o.no_view_hashes;
    io.symbols = symbols;
    io.comm = comm.get();
    io.rng_seed = o.seed;  // every job of a comparison starts from the same generator state
    runtime::Interpreter interp(jobs[j].hoisted.graph, io);
    runtime::InputSource inputs(inputs_opts);
    std::size_t count = 0;
    const auto t0 = std::chrono::steady_clock::now();
    outputs[j] = interp.run(inputs, [&](const model::NodeRecord& r) {
      writer.write_node(r);
      if (r.graph == jobs[j].label) records[j].push_back(r);
      ++count;
    });
    const double ms = runtime::ms_since(t0);
    const auto reruns = timed_reruns(interp, inputs, o.repeat, !o.no_hash, device_index);
    summary["graphs"].push_back({{"label", jobs[j].label},
                                 {"source", jobs[j].entry->source},
                                 {"ops", interp.op_nodes()},
                                 {"tensors", count},
                                 {"ms", ms},
                                 {"hoisted",
                                  {{"device", jobs[j].hoisted.count(model::HoistChangeKind::DeviceLiteral)},
                                   {"annotation", jobs[j].hoisted.count(model::HoistChangeKind::Annotation)},
                                   {"group", jobs[j].hoisted.count(model::HoistChangeKind::ProcessGroup)},
                                   {"unresolved", jobs[j].hoisted.unresolved.size()}}}});
    if (!reruns.empty()) {
      summary["graphs"].back()["repeat"] = timing_json(reruns);
      const auto p = interp.last_run_profile();
      summary["graphs"].back()["repeat"]["last_run_hashing"] = {
          {"record_ms", p.record_ms},  {"enqueue_ms", p.enqueue_ms}, {"collect_ms", p.collect_ms},
          {"batches", p.batches},      {"tensors", p.tensors},       {"bytes", p.bytes},
          {"same_bytes", p.same_bytes}};
    }
    if (!o.json) {
      std::cout << "rank " << env.rank << ": " << model::shown(jobs[j].label) << " ("
                << model::shown(jobs[j].entry->source) << "): " << interp.op_nodes() << " ops, " << count
                << " tensors hashed, " << ms << " ms";
      if (!reruns.empty())
        std::cout << "; " << reruns.size() << " more runs" << (o.no_hash ? " without hashing" : "")
                  << ": median " << runtime::median(reruns) << " ms";
      std::cout << std::endl;
    }
  }
  int code = kExitParity;
  if (jobs.size() == 2) {
    if (o.no_hash) throw std::invalid_argument("--against and --coor compare hashes: drop --no-hash");
    const auto v = compare_jobs(jobs[0], records[0], outputs[0], jobs[1], records[1], outputs[1]);
    summary["verdict"] = v.json;
    const std::string what = o.coor ? (v.equal ? "safe: rank 0's graph, hoisted, gives this rank's bits"
                                               : "unsafe: rank 0's graph, hoisted, differs from this rank's")
                                    : (v.equal ? "outputs bitwise equal" : "outputs differ");
    summary["verdict"]["text"] = what + (v.text.empty() ? "" : "; " + v.text);
    model::EventRecord ev{"replay_verdict", std::nullopt, summary["verdict"]["text"].get<std::string>(),
                          summary["verdict"]};
    writer.write_event(ev);
    if (!o.json)
      std::cout << "rank " << env.rank << ": " << model::shown(summary["verdict"]["text"].get<std::string>())
                << std::endl;
    code = v.equal ? kExitParity : kExitDivergence;
  }
  if (comm) comm->barrier("end of replay");
  if (o.json) std::cout << summary.dump() << std::endl;
  return code;
}

int launch(const ReplayCliOptions& o) {
  runtime::LaunchOptions lo;
  lo.nproc = o.nproc;
  lo.exe = own_executable();
  const auto cmdline = own_command_line();
  for (std::size_t i = 1; i < cmdline.size(); ++i) {
    if (cmdline[i] == "--nproc") {
      ++i;
      continue;
    }
    if (!cmdline[i].starts_with("--nproc=")) lo.args.push_back(cmdline[i]);
  }
  lo.grace = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000) + 3000);
  const auto result = runtime::launch_local(lo, [&](int rank, bool is_stderr, std::string_view line) {
    auto& stream = is_stderr ? std::cerr : std::cout;
    if (o.json && !is_stderr) {
      stream << line << std::endl;
    } else {
      stream << "[rank " << rank << "] " << model::shown(line) << std::endl;
    }
  });
  int code = kExitParity;
  for (const auto& e : result.exits) {
    if (e.signalled || e.exit_code > kExitDivergence) {
      code = kExitBadInput;
    } else if (e.exit_code == kExitDivergence && code == kExitParity) {
      code = kExitDivergence;
    }
  }
  if (code == kExitBadInput)
    std::cerr << paint("gparity: error: replay failed: " + model::display_text(result.failure), Colour::Red,
                       colour_enabled(stderr))
              << std::endl;
  return code;
}

}  // namespace

void register_replay(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReplayCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Run a captured graph (TORCH_TRACE, print_readable text, .pt2, gparity JSON) in C++ through the "
      "c10 dispatcher on every rank, hash every tensor each node produces and write them as node "
      "records of a trace (docs/replay.md). Exit 0: ran (and with --against/--coor: bitwise equal), "
      "1: divergence, 2: bad input.");
  cmd->add_option("SOURCE", o->source, "Graph source: TORCH_TRACE directory or log, FX text, .pt2, JSON")
      ->required();
  cmd->add_option("--out", o->out, "Run directory to write (manifest.json, rank-<r>.jsonl)")->required();
  cmd->add_option("--graph", o->kind, "Graph kind, e.g. aot_forward_graph, inductor_post_grad_graph");
  cmd->add_option("--compile-id", o->compile_id, "Compile id, e.g. 0/0");
  cmd->add_option("--index", o->index, "Which one when the kind occurs several times (0-based)");
  cmd->add_option("--rank", o->rank, "Replay this rank's graph of a multi-rank trace on every rank");
  cmd->add_option("--against", o->against,
                  "Second graph source: run both on identical inputs and report the first divergent node");
  cmd->add_option("--against-graph", o->against_kind,
                  "Graph kind in the --against source (default: --graph)");
  cmd->add_flag(
      "--coor", o->coor,
      "Compile-on-one-rank check: rank 0's graph, hoisted to each rank, beside the rank's own graph");
  cmd->add_option("--nproc", o->nproc, "Start this many local ranks")->check(CLI::Range(1, 1024));
  cmd->add_option("--device", o->device, "cpu (Gloo) or cuda (NCCL, one GPU per local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--inputs", o->inputs, "safetensors file with the inputs, by placeholder name");
  cmd->add_option("--seed", o->seed, "Seed of generated inputs (docs/replay.md)")->capture_default_str();
  cmd->add_option("--int-range", o->int_range,
                  "Generated integer inputs uniform in [LO, HI) (default: zeros)");
  cmd->add_flag("--per-rank-inputs", o->per_rank_inputs, "Generated inputs differ between ranks");
  cmd->add_option("--sym", o->syms, "Value of a symbolic size, NAME=INTEGER (repeatable)");
  o->groups.add_to(cmd);
  cmd->add_flag("--no-hash", o->no_hash, "Run without hashing (timing)");
  cmd->add_option("--node-hash", o->node_hash,
                  "both: XXH3-64 and the shard-invariant hash of every node's tensors; shard: the "
                  "shard-invariant hash only (on a GPU, XXH3 is a sequential chain per tensor)")
      ->check(CLI::IsMember({"both", "shard"}))
      ->capture_default_str();
  cmd->add_flag("--no-view-hashes", o->no_view_hashes,
                "Record view ops' results (t, view, permute, ...) by dtype and shape only: their bytes "
                "are their base's, hashed where the base was made");
  cmd->add_option("--repeat", o->repeat,
                  "Run each graph N more times on the same inputs, timed (median in the summary)")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--cuda-graph", o->cuda_graph,
                "Capture the graph as a CUDA graph and replay it beside the uncaptured run; verdict: "
                "bitwise equal or the first divergent node (docs/cuda-graphs.md)");
  cmd->add_option("--cuda-graph-warmup", o->cuda_graph_warmup, "Uncaptured runs before the capture")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_flag("--cuda-graph-check", o->cuda_graph_check,
                "Before every replay, check that the static inputs and symbols are as captured");
  cmd->add_option("--timeout", o->timeout_s, "Seconds a collective may wait")->check(CLI::PositiveNumber);
  cmd->add_option("--gpus", o->gpus,
                  "GPUs to use (default: all visible). Fewer GPUs than ranks: ranks share GPUs, no two "
                  "ranks of a process group on one")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--json", o->json, "One JSON summary line per rank");
  cmd->callback([o, &action] {
    action = [o] {
      if (!o->against.empty() && o->coor) {
        std::cerr << "gparity: error: --against and --coor exclude each other\n";
        return kExitBadInput;
      }
      if (o->cuda_graph && (!o->against.empty() || o->coor || o->device != "cuda" || o->no_hash)) {
        std::cerr << "gparity: error: --cuda-graph runs one graph on --device cuda and compares hashes "
                     "(no --against, --coor or --no-hash)\n";
        return kExitBadInput;
      }
      try {
        if (o->nproc > 0 && std::getenv("GPARITY_LAUNCHED") == nullptr) return launch(*o);
        return run_one_rank(*o);
      } catch (const runtime::ReplayError& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const model::InputError& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const runtime::RankFailure& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const std::invalid_argument& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      } catch (const std::exception& e) {
        std::cerr << "gparity: error: " << model::display_lines(e.what()) << std::endl;
      }
      return kExitBadInput;
    };
  });
}

}  // namespace gparity::cli
