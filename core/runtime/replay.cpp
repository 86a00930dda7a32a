// The orchestration of `gparity replay` on one rank (replay.hpp).

#include "core/runtime/replay.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string_view>

#include "core/model/base/atomic_file.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/graph/graph_json.hpp"
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
#include "core/runtime/replay_options.hpp"
#include "hash/shard_hash.hpp"

namespace gparity::runtime {

using json = nlohmann::json;

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(f, a, '\0');) args.push_back(a);
  return args;
}

namespace {

std::string own_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string("gparity-run");
}

json timing_json(const std::vector<double>& ms) {
  return {{"runs", ms.size()},
          {"median_ms", median(ms)},
          {"min_ms", ms.empty() ? 0.0 : *std::min_element(ms.begin(), ms.end())},
          {"ms", ms}};
}

json memory_json(const DeviceMemory& m) {
  return {{"peak_allocated", m.peak_allocated}, {"peak_reserved", m.peak_reserved}};
}

/// What rank 0 says when ranks share GPUs: the map, and the groups left without a GPU per rank
/// (a collective on one of them is refused when the graph reaches it).
std::string gpu_sharing_note(const std::vector<int>& gpu_of_rank, int gpus, const GroupRanks& groups) {
  std::string note =
      std::to_string(gpu_of_rank.size()) + " ranks on " + std::to_string(gpus) + " GPU(s), rank->GPU:";
  for (std::size_t r = 0; r < gpu_of_rank.size(); ++r)
    note += (r ? ", " : " ") + std::to_string(r) + "->" + std::to_string(gpu_of_rank[r]);
  std::string shared;
  for (const auto& [name, ranks] : groups)
    if (!gpu_share_conflict(ranks, gpu_of_rank).empty()) shared += (shared.empty() ? "" : ", ") + name;
  return note + (shared.empty()
                     ? "; every process group has a GPU per rank"
                     : "; process group(s) " + shared +
                           " share a GPU, so a collective on them would be refused (NCCL needs a GPU "
                           "per rank of a group)");
}

}  // namespace

struct ReplaySession::Impl {
  ReplayOptions o;
  std::ostream& out;
  std::ostream& err;
  RankEnv env;
  model::GraphCollection coll;
  std::optional<model::GraphCollection> other;  // --against's source
  GroupRanks groups;
  std::vector<int> gpu_of_rank;
  std::string device;
  std::map<std::string, std::int64_t> symbols;
  InputOptions inputs_opts;
  std::vector<ReplayJob> jobs;
  std::unique_ptr<GroupComm> comm;
  std::unique_ptr<model::TraceWriter> writer;
  std::vector<model::RankInfo> rank_infos;  // every rank's host, node and device (manifest)
  std::string node_hash;                    // the mode in force: shard, both or lazy (node_hash_mode)
  bool holding = false;                     // lazy with two executions: records held back (run())
  /// Each job's collective results (several ranks), by job: the own job's for --coor's run_alone(),
  /// and with --node-hash lazy both jobs', for the second pass of a rank whose first pass differed.
  std::array<CollectiveResults, 2> kept;
  json summary;

  Impl(ReplayOptions options, std::ostream& o_, std::ostream& e_)
      : o(std::move(options)), out(o_), err(e_), env(rank_env_from_environment()) {}

  [[nodiscard]] int device_index() const { return o.device == "cuda" ? env.local_rank : -1; }

  /// With fewer GPUs than ranks on one node, the GPU of every rank (share_gpus: ranks of a
  /// process group on distinct GPUs), and this rank's put in env.local_rank; else empty, every
  /// rank on GPU LOCAL_RANK.
  std::vector<int> place_on_gpus() {
    if (o.device != "cuda") return {};
    const int visible = cuda_device_count();
    if (visible == 0) require_cuda_device(env.local_rank);  // says there is no GPU here
    if (o.gpus > visible)
      throw std::invalid_argument("--gpus " + std::to_string(o.gpus) + ": this machine has " +
                                  std::to_string(visible) + " GPU(s)");
    const int gpus = o.gpus > 0 ? o.gpus : visible;
    const bool one_node = env.local_world_size == env.world_size;
    if (!one_node || (env.world_size <= gpus && env.local_rank < gpus)) {
      require_cuda_device(env.local_rank);
      return {};
    }
    auto map = share_gpus(env.world_size, gpus, groups);
    env.local_rank = map[static_cast<std::size_t>(env.rank)];
    if (env.rank == 0) err << "gparity replay: " << gpu_sharing_note(map, gpus, groups) << std::endl;
    return map;
  }

  ReplayJob job(std::string label, const model::GraphEntry& e) const {
    ReplayPlacement p;
    p.source_rank = std::max(e.rank, 0);
    p.target_rank = env.rank;
    p.device = device;
    p.groups = &o.groups;
    return ReplayJob{std::move(label), &e, hoist_for_replay(*e.graph, p), {}, {}};
  }

  void select_jobs() {
    const bool multi = coll.ranks.size() > 1;
    const int own_rank = o.rank ? *o.rank : (multi ? env.rank : kSourceFirstRank);
    if (multi && !o.rank && std::find(coll.ranks.begin(), coll.ranks.end(), env.rank) == coll.ranks.end())
      throw model::InputError(o.source, "the trace has no graphs of rank " + std::to_string(env.rank));
    const auto& own = select_replay_graph(coll, o.source, own_rank, o.kind, o.compile_id, o.index);
    jobs.push_back(job(o.against.empty() && !o.coor ? (o.kind.empty() ? std::string("graph") : o.kind)
                                                    : (o.coor ? "own" : "a"),
                       own));
    if (!o.against.empty()) {
      other = model::load_graphs(o.against);
      const auto& b =
          select_replay_graph(*other, o.against, own_rank, o.against_kind.empty() ? o.kind : o.against_kind,
                              o.compile_id, o.index);
      jobs.push_back(job("b", b));
    } else if (o.coor) {
      jobs.push_back(
          job("coor", select_replay_graph(coll, o.source, kSourceFirstRank, o.kind, o.compile_id, o.index)));
    }
    for (const auto& j : jobs)
      for (const auto& u : j.hoisted.unresolved)
        err << "rank " << env.rank << ": " << model::shown(j.label) << ": hoisting left "
            << model::shown(u.text) << " of node " << model::shown(u.node) << " (" << model::shown(u.target)
            << ", " << model::shown(u.field) << ") as it is: " << model::shown(u.message) << std::endl;
  }

  /// Where every rank runs (host, node, device), for the manifest: across nodes only each rank
  /// knows its own host. Every rank takes part.
  void gather_rank_infos() {
    const auto own = own_rank_info(env, device);
    if (!comm) {
      rank_infos = {own};
      return;
    }
    const auto texts = comm->all_gather_text("rank_info", rank_info_text(own));
    for (std::size_t r = 0; r < texts.size(); ++r)
      rank_infos.push_back(rank_info_from_text(texts[r], static_cast<int>(r)));
  }

  void write_manifest() const {
    model::RunManifest m;
    m.run_id = "gparity-replay-" + std::to_string(getpid());
    m.world_size = env.world_size;
    m.ranks = rank_infos;
    m.framework_versions = {{"torch", torch_version()}, {"gparity", "0.1.0"}};
    m.command_line = o.command_line;
    // The group table: comparisons of replay runs match collectives across ranks by it.
    json table = json::object();
    for (const auto& g : o.groups.groups()) table[g.name] = {{"ranks", g.ranks}, {"desc", g.desc}};
    m.extra["replay"] = {{"source", o.source}, {"against", o.against}, {"coor", o.coor},
                         {"seed", o.seed},     {"groups", table},      {"flight_recorder", o.group_dumps}};
    // What the node records carry (each record says it too: its "xxh3", "shard" and "view" fields).
    // "lazy": outputs and collective inputs, every node on the ranks whose first pass differed.
    if (!o.no_hash)
      m.extra["replay"]["node_hash"] = {{"hashes", node_hash},
                                        {"views", o.hash_views},
                                        {"shard_spec", static_cast<int>(node_shard_spec())},
                                        {"outputs_xxh3", node_hash == "both"},
                                        {"stream", o.node_hash_stream}};
    model::write_manifest(o.out, m);
  }

  /// Writes the graph a job runs (as hoisted and placed) as graph JSON into the run directory,
  /// graphs/<label>.rank<r>.json, and a "graph" record naming it by its label, so that `gparity
  /// compare` of two replay runs aligns their nodes through the graphs. Subgraphs run by
  /// higher-order ops (records labelled "<label>/<subgraph>") get a file and a record each.
  void write_graph_records(const ReplayJob& j) {
    namespace fs = std::filesystem;
    fs::create_directories(fs::path(o.out) / "graphs");
    const auto write = [&](const auto& self, const model::Graph& g, const std::string& label) -> void {
      std::string file = label;
      std::replace_if(
          file.begin(), file.end(), [](char c) { return c == '/' || c == '\\' || c == ' '; }, '.');
      const std::string rel = "graphs/" + file + ".rank" + std::to_string(env.rank) + ".json";
      model::write_file_atomically(fs::path(o.out) / rel,
                                   model::json_output(model::graph_to_json(g), -1) + '\n');
      model::GraphRef ref;
      ref.path = rel;
      ref.kind = j.entry->kind;
      if (j.entry->compile.frame_id >= 0) ref.compile_id = j.entry->compile.text();
      ref.extra = {{"name", label}, {"source", j.entry->source}};
      if (j.entry->rank >= 0) ref.extra["rank"] = j.entry->rank;
      writer->write_graph(ref);
      for (const auto& sub : g.subgraphs) self(self, sub, label + "/" + std::string(sub.str(sub.name)));
    };
    write(write, j.hoisted.graph, j.label);
  }

  /// The node records' shard hash spec (--node-hash-spec; checked by check_replay_options).
  hash::ShardSpec node_shard_spec() const {
    return hash::parse_shard_spec(o.node_hash_spec).value_or(hash::ShardSpec::V2);
  }

  InterpretOptions interpret_options(const ReplayJob& j) const {
    InterpretOptions io;
    io.label = j.label;
    io.source = j.entry->source;
    io.device = device;
    io.hash = !o.no_hash;
    io.node_xxh3 = node_hash == "both";
    io.every_node = node_hash != "lazy";
    io.shard_spec = node_shard_spec();
    io.view_hashes = o.hash_views;
    io.hash_side_stream = o.node_hash_stream == "side";
    io.side_share = o.node_hash_side_share;
    io.side_batch_bytes = std::int64_t{o.node_hash_side_batch_mib} << 20;
    io.batch_bytes = std::int64_t{o.node_hash_batch_mib} << 20;
    io.xxh3_host_chains = o.node_hash_xxh3_chains != "device";
    io.symbols = symbols;
    io.comm = comm.get();
    io.rng_seed = o.seed;  // every job of a comparison starts from the same generator state
    return io;
  }

  /// --repeat: the graph again on the same bound inputs, each run timed (device synchronised),
  /// hashing as the recorded run did (the records are not written again).
  std::vector<double> timed_reruns(Interpreter& interp, InputSource& inputs) const {
    std::vector<double> ms;
    for (int r = 0; r < o.repeat; ++r)
      ms.push_back(timed_on_device(device_index(), [&] {
        (void)interp.rerun(inputs, {.hash = !o.no_hash, .keep_collectives = false});
      }));
    return ms;
  }

  /// How run_job runs a job.
  struct JobRun {
    CollectiveResults* keep = nullptr;  // keep its collectives' results here ...
    CollectiveResults* take = nullptr;  // ... or take them from here (no timed reruns then)
    bool every_node = true;             // false: --node-hash lazy's first pass
    bool hold = false;                  // hold the records back in j.held instead of writing them
    bool timed = true;                  // the --repeat reruns
  };

  /// Runs job `j` once (records written or held, top-level ones kept), then the timed reruns;
  /// returns its summary.
  json run_job(ReplayJob& j, const JobRun& how) {
    auto io = interpret_options(j);
    io.keep_collectives = how.keep;
    io.take_collectives = how.take;
    io.every_node = how.every_node;
    Interpreter interp(j.hoisted.graph, io);
    InputSource inputs(inputs_opts);
    std::size_t count = 0;
    const auto t0 = std::chrono::steady_clock::now();
    j.outputs = interp.run(inputs, [&](const model::NodeRecord& r) {
      if (how.hold) {
        j.held.push_back(r);
      } else {
        writer->write_node(r);
      }
      if (r.graph == j.label) j.records.push_back(r);
      ++count;
    });
    const double ms = ms_since(t0);
    const auto reruns =
        how.take != nullptr || !how.timed ? std::vector<double>{} : timed_reruns(interp, inputs);
    json g = {{"label", j.label},
              {"source", j.entry->source},
              {"ops", interp.op_nodes()},
              {"tensors", count},
              {"ms", ms},
              {"hoisted",
               {{"device", j.hoisted.count(model::HoistChangeKind::DeviceLiteral)},
                {"annotation", j.hoisted.count(model::HoistChangeKind::Annotation)},
                {"group", j.hoisted.count(model::HoistChangeKind::ProcessGroup)},
                {"unresolved", j.hoisted.unresolved.size()}}}};
    if (!reruns.empty()) {
      g["repeat"] = timing_json(reruns);
      const auto p = interp.last_run_profile();
      g["repeat"]["last_run_hashing"] = {{"record_ms", p.record_ms},   {"enqueue_ms", p.enqueue_ms},
                                         {"collect_ms", p.collect_ms}, {"batches", p.batches},
                                         {"tensors", p.tensors},       {"bytes", p.bytes},
                                         {"same_bytes", p.same_bytes}};
    }
    if (!o.json) {
      out << "rank " << env.rank << ": " << model::shown(j.label) << " (" << model::shown(j.entry->source)
          << "): " << interp.op_nodes() << " ops, " << count << " tensors hashed"
          << (how.every_node ? "" : " (lazy: outputs, collective inputs, in-place writes)") << ", " << ms
          << " ms";
      if (!reruns.empty())
        out << "; " << reruns.size() << " more runs" << (o.no_hash ? " without hashing" : "") << ": median "
            << median(reruns) << " ms";
      out << std::endl;
    }
    return g;
  }

  /// Lazy: every job again with every node hashed, each collective taking the result its job's
  /// first pass had (no communication: only this rank runs), no timed reruns. Returns what the
  /// first pass recorded that the second does not record alike (empty: the replay was deterministic).
  std::vector<std::string> every_node_pass() {
    std::vector<std::string> differing;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      auto& j = jobs[k];
      auto first = std::move(j.held);
      auto first_outputs = std::move(j.outputs);
      j.held.clear();
      j.records.clear();
      const JobRun how{.take = env.world_size > 1 ? &kept[k] : nullptr, .hold = true, .timed = false};
      auto g = run_job(j, how);
      for (auto& d : records_not_alike(first, j.held)) differing.push_back(std::move(d));
      j.outputs = std::move(first_outputs);  // the verdict's outputs stay the first pass's
      for (auto& entry : summary["graphs"])
        if (entry["label"] == j.label && !entry.contains("every_node_pass"))
          entry["every_node_pass"] = {{"tensors", g["tensors"]}, {"ms", g["ms"]}};
    }
    return differing;
  }

  /// --cuda-graph: the graph uncaptured and captured (core/runtime/interpreter/captured_replay),
  /// both hashed after they finish; records labelled with the job's label and "cuda-graph".
  void run_captured_job() {
    ReplayJob captured = jobs[0];
    captured.label = "cuda-graph";
    write_graph_records(captured);
    auto& plain = jobs[0];
    const auto keep = [&](std::vector<model::NodeRecord>& into, const std::string& label) {
      return [&into, this, label, top = plain.label](const model::NodeRecord& r) {
        model::NodeRecord copy = r;
        const bool top_level = copy.graph == top;
        copy.graph = label + copy.graph.substr(top.size());
        writer->write_node(copy);
        if (top_level) into.push_back(std::move(copy));
      };
    };
    auto io = interpret_options(plain);
    io.hash = true;
    Interpreter interp(plain.hoisted.graph, io);
    InputSource inputs(inputs_opts);
    CapturedReplayOptions co;
    co.device_index = env.local_rank;
    co.warmup = o.cuda_graph_warmup;
    co.runs = std::max(1, o.repeat);
    co.check = o.cuda_graph_check;
    co.comm = comm.get();
    interp.bind_inputs(inputs);
    const auto r = run_captured(interp, inputs, co, keep(plain.records, plain.label),
                                keep(captured.records, "cuda-graph"));
    plain.outputs = r.uncaptured_outputs;
    captured.outputs = r.captured_outputs;
    json cg = {{"warmup", co.warmup},
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
    writer->write_event({"cuda_graph", std::nullopt, "captured replay", cg});
    if (!o.json)
      out << "rank " << env.rank << ": " << model::shown(plain.label) << " captured as a CUDA graph ("
          << r.static_inputs << " static inputs, " << r.copied_inputs.size() << " copied per replay, "
          << r.copies.bytes_per_replay() << " bytes): uncaptured " << median(r.uncaptured_ms)
          << " ms, replay " << median(r.replay_ms) << " ms (median of " << co.runs << ")" << std::endl;
    jobs.push_back(std::move(captured));
  }
};

ReplaySession::ReplaySession(ReplayOptions options, std::ostream& out, std::ostream& err)
    : impl_(std::make_unique<Impl>(std::move(options), out, err)) {
  auto& m = *impl_;
  const auto& o = m.o;
  check_replay_options(o);
  m.coll = model::load_graphs(o.source);
  m.groups = replay_group_ranks(o.groups);
  m.gpu_of_rank = m.place_on_gpus();
  m.device = o.device == "cuda" ? "cuda:" + std::to_string(m.env.local_rank) : "cpu";
  m.node_hash = node_hash_mode(o);
  m.symbols = parse_replay_syms(o.syms);
  m.inputs_opts = replay_input_options(o, m.env.rank);
  m.select_jobs();
  if (m.env.world_size > 1) {
    const auto backend = o.device == "cuda" ? CommBackend::Nccl : CommBackend::Gloo;
    const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000));
    m.comm = std::make_unique<GroupComm>(m.env, backend, m.groups, timeout, m.gpu_of_rank);
  }
  m.gather_rank_infos();
  if (m.env.rank == 0) m.write_manifest();
  m.writer = std::make_unique<model::TraceWriter>(o.out, m.env.rank);
  for (const auto& j : m.jobs) m.write_graph_records(j);
  m.summary = {{"rank", m.env.rank}, {"graphs", json::array()}, {"node_hash", {{"mode", m.node_hash}}}};
}

ReplaySession::~ReplaySession() = default;

int ReplaySession::rank() const noexcept {
  return impl_->env.rank;
}
int ReplaySession::world_size() const noexcept {
  return impl_->env.world_size;
}
const ReplayOptions& ReplaySession::options() const noexcept {
  return impl_->o;
}
bool ReplaySession::comparing() const noexcept {
  return impl_->jobs.size() == 2;
}
const std::vector<ReplayJob>& ReplaySession::jobs() const noexcept {
  return impl_->jobs;
}

void ReplaySession::run() {
  auto& m = *impl_;
  if (m.o.cuda_graph) {
    m.run_captured_job();
    return;
  }
  // Lazy with two executions: the records wait until the verdict knows whether this rank's
  // first pass differed (finish_lazy_pass).
  m.holding = m.node_hash == "lazy" && m.jobs.size() == 2;
  for (std::size_t j = 0; j < m.jobs.size(); ++j) {
    // On several ranks the own job of --coor keeps its collectives' results for run_alone(), and
    // a lazy first pass every job's, for the second pass.
    const bool keep = m.env.world_size > 1 && ((m.o.coor && j == 0) || m.holding);
    const Impl::JobRun how{
        .keep = keep ? &m.kept[j] : nullptr, .every_node = m.node_hash != "lazy", .hold = m.holding};
    m.summary["graphs"].push_back(m.run_job(m.jobs[j], how));
  }
}

bool ReplaySession::lazy() const noexcept {
  return impl_->holding;
}

LazyPass ReplaySession::finish_lazy_pass(bool first_pass_differs) {
  auto& m = *impl_;
  if (!m.holding) throw std::logic_error("finish_lazy_pass without a lazy first pass");
  LazyPass p;
  p.every_node = first_pass_differs;
  if (p.every_node) p.not_alike = m.every_node_pass();
  for (auto& j : m.jobs) {
    for (const auto& r : j.held) m.writer->write_node(r);
    j.held.clear();
  }
  m.holding = false;
  json data = {
      {"every_node_pass", p.every_node}, {"deterministic", p.not_alike.empty()}, {"not_alike", p.not_alike}};
  m.summary["node_hash"].update(data);
  if (!p.every_node) return p;
  std::string text = "the first pass (outputs, collective inputs) differed: every node hashed again";
  if (p.not_alike.empty()) {
    text += "; every tensor the first pass hashed hashed alike (deterministic)";
  } else {
    text += "; NOT deterministic: " + std::to_string(p.not_alike.size()) +
            " tensor(s) of the first pass hashed otherwise, first " + p.not_alike.front();
    m.err << "gparity: warning: rank " << m.env.rank
          << ": replay is not deterministic: " << model::shown(p.not_alike.front())
          << " hashed otherwise when every node was hashed; the verdict keeps the first pass's outputs"
          << std::endl;
  }
  m.writer->write_event({"lazy_node_hash", std::nullopt, text, data});
  return p;
}

std::vector<std::string> ReplaySession::exchange(const std::string& key, const std::string& text) {
  if (!impl_->comm) return {text};
  return impl_->comm->all_gather_text(key, text);
}

std::vector<model::NodeRecord> ReplaySession::run_alone(std::string& problem) {
  auto& m = *impl_;
  if (!m.o.coor || m.jobs.size() < 2) throw std::logic_error("run_alone without --coor");
  ReplayJob alone = m.jobs[1];
  alone.label = "coor-alone";
  alone.records.clear();
  alone.outputs.clear();
  m.write_graph_records(alone);
  try {
    m.summary["graphs"].push_back(m.run_job(alone, {.take = &m.kept[0]}));
  } catch (const ReplayError& e) {
    problem = e.what();
    return {};
  }
  return alone.records;
}

int ReplaySession::finish(const std::string& text, const std::string& overall, const json& verdict,
                          int code) {
  auto& m = *impl_;
  if (!text.empty()) {
    m.summary["verdict"] = verdict;
    m.writer->write_event({"replay_verdict", std::nullopt, text, verdict});
    if (!m.o.json) {
      if (m.env.rank == 0 && !overall.empty()) m.out << model::shown(overall) << std::endl;
      m.out << "rank " << m.env.rank << ": " << model::shown(text) << std::endl;
    }
  }
  if (m.comm) m.comm->barrier("end of replay");
  if (m.o.json) m.out << model::json_output(m.summary, -1) << std::endl;
  return code;
}

ReplayLaunch launch_replay_ranks(int nproc, const NodeLayout& node, double timeout_s, bool json_lines,
                                 std::ostream& out, std::ostream& err) {
  LaunchOptions lo;
  lo.nproc = nproc;
  lo.node = node;
  lo.exe = own_executable();
  lo.args = rank_arguments(own_command_line());
  lo.grace = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000) + 3000);
  const auto result = launch_local(lo, [&](int rank, bool is_stderr, std::string_view line) {
    auto& stream = is_stderr ? err : out;
    if (json_lines && !is_stderr) {
      stream << line << std::endl;
    } else {
      stream << "[rank " << rank << "] " << model::shown(line) << std::endl;
    }
  });
  ReplayLaunch r;
  for (const auto& e : result.exits) {
    if (e.signalled || e.exit_code > 1) {
      r.exit_code = 2;
    } else if (e.exit_code == 1 && r.exit_code == 0) {
      r.exit_code = 1;
    }
  }
  if (r.exit_code == 2) r.failure = result.failure;
  return r;
}

}  // namespace gparity::runtime
