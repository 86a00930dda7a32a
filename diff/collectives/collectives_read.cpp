#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <filesystem>
#include <map>
#include <thread>

#include "core/model/base/dtype.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/flight_recorder_pickle.hpp"
#include "core/model/formats/format_detect.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "diff/collectives/collectives.hpp"
#include "diff/collectives/collectives_internal.hpp"
#include "diff/collectives/output_code_sites.hpp"
#include "diff/graphs/trace_facts.hpp"

// Reading collective sequences: Flight Recorder dumps (JSON, pickle) and TORCH_TRACE graphs.

namespace gparity::diff {
namespace {

namespace fs = std::filesystem;
using collectives::join;
using model::Graph;
using model::Node;
using model::NodeId;
using model::Value;
using model::ValueKind;

/// Flight Recorder prints c10 scalar type names ("Float", "BFloat16"); graphs print "f32". Both
/// become the canonical torch name so sequences from either source read alike.
std::string canonical_dtype(std::string_view text) {
  if (const auto d = model::parse_dtype(text)) return std::string(model::dtype_name(*d));
  std::string lower(text);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (const auto d = model::parse_dtype(lower)) return std::string(model::dtype_name(*d));
  return std::string(text);
}

std::string dims_text(std::span<const std::int64_t> dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string meta_shape(const Graph& g, const model::TensorMeta& m) {
  if (m.kind != model::TensorMeta::Kind::Tensor) return "?";
  std::string s = "[";
  for (std::size_t i = 0; i < m.sizes.size(); ++i) {
    const auto& d = m.sizes[i];
    s += (i ? ", " : "") + (d.is_symbolic() ? std::string(g.str(d.expr)) : std::to_string(d.value));
  }
  return s + "]";
}

std::string meta_dtype(const model::TensorMeta& m) {
  return m.kind == model::TensorMeta::Kind::Tensor ? std::string(model::dtype_name(m.dtype)) : "?";
}

/// "_c10d_functional.all_reduce.default" -> "all_reduce".
std::string op_kind(std::string_view target) {
  auto rest = target.substr(target.find('.') + 1);
  if (const auto dot = rest.rfind('.'); dot != std::string_view::npos) rest = rest.substr(0, dot);
  return std::string(rest);
}

std::string scalar_text(const Graph& g, const Value& v) {
  switch (v.kind) {
    case ValueKind::Int: return std::to_string(v.i);
    case ValueKind::Bool: return v.i ? "True" : "False";
    case ValueKind::String:
    case ValueKind::Float:
    case ValueKind::Symbolic: return std::string(g.str(v.s));
    case ValueKind::None: return "None";
    default: return "";
  }
}

void add_graph_ops(const Graph& g, const std::string& prefix, CollectiveStream& out) {
  std::vector<std::string> group_of(g.nodes.size());
  for (NodeId id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.node(id);
    if (n.kind != model::NodeKind::CallFunction || !model::is_functional_collective(g.str(n.target)))
      continue;
    CollectiveOp op;
    op.kind = op_kind(g.str(n.target));
    const int pg = model::process_group_arg(g, n);
    std::vector<std::string> params;
    for (std::size_t i = 0; i < n.args.size(); ++i) {
      const Value& a = n.args[i];
      if (static_cast<int>(i) == pg) {
        op.group = std::string(g.str(a.s));
        continue;
      }
      bool had_ref = false;
      model::for_each_ref(a, [&](NodeId in) {
        had_ref = true;
        op.input_shapes.push_back(meta_shape(g, g.node(in).meta));
        op.input_dtypes.push_back(meta_dtype(g.node(in).meta));
        if (op.group.empty() && !group_of[in].empty()) op.group = group_of[in];
      });
      if (!had_ref) params.push_back(scalar_text(g, a));
    }
    for (const auto& kw : n.kwargs) {
      if (g.str(kw.name) == "group_name") {
        op.group = scalar_text(g, kw.value);
        continue;
      }
      model::for_each_ref(kw.value, [&](NodeId in) {
        op.input_shapes.push_back(meta_shape(g, g.node(in).meta));
        op.input_dtypes.push_back(meta_dtype(g.node(in).meta));
      });
      params.push_back(std::string(g.str(kw.name)) + "=" + scalar_text(g, kw.value));
    }
    op.params = join(params, " ");
    op.output_shapes.push_back(meta_shape(g, n.meta));
    op.output_dtypes.push_back(meta_dtype(n.meta));
    op.where = prefix + std::string(g.str(n.name));
    op.line = n.line;
    group_of[id] = op.group;
    out.ops.push_back(std::move(op));
  }
  for (const auto& sub : g.subgraphs) add_graph_ops(sub, prefix + std::string(sub.str(sub.name)) + "/", out);
}

RankCollectives& rank_slot(CollectiveRun& run, std::int32_t rank) {
  auto it = std::lower_bound(run.ranks.begin(), run.ranks.end(), rank,
                             [](const RankCollectives& r, std::int32_t x) { return r.rank < x; });
  if (it == run.ranks.end() || it->rank != rank) {
    RankCollectives rc;
    rc.rank = rank;
    it = run.ranks.insert(it, std::move(rc));
  }
  return *it;
}

void add_stream(CollectiveRun& run, RankCollectives& rc, CollectiveStream s) {
  if (rc.find(s.name) != nullptr) {
    run.problems.push_back("rank " + std::to_string(rc.rank) + ": stream '" + s.name +
                           "' given twice; the first is used");
    return;
  }
  rc.streams.push_back(std::move(s));
}

std::int32_t rank_for(CollectiveRun& run, const std::string& path, std::int32_t rank) {
  if (rank >= 0) return rank;
  rank = static_cast<std::int32_t>(run.ranks.size());
  run.problems.push_back(path +
                         ": no rank in the file name (rank<r>..., or PyTorch's dump name: a prefix, then "
                         "the rank) and none its process groups single out; taken as rank " +
                         std::to_string(rank));
  return rank;
}

/// What a Flight Recorder dump yields, without the dump: its entries and frames are dropped as soon
/// as they are turned into streams, so dumps read on several workers never all sit in memory.
struct DumpStreams {
  std::int32_t rank = -1;        // from the file name; -1 when it has none
  std::int32_t group_rank = -1;  // the one rank all its process groups hold; -1 when none
  std::string not_member;        // a group whose ranks leave out the file name's rank
  bool empty = false;            // no entries at all
  std::vector<CollectiveStream> streams;
};

DumpStreams streams_of(const model::FlightRecorderDump& dump) {
  DumpStreams d{dump.rank,
                model::rank_from_groups(dump),
                {},
                dump.entries.empty(),
                collectives_from_flight_recorder(dump)};
  for (const auto& g : dump.groups) {
    if (dump.rank < 0 || g.ranks.empty() || d.not_member.size() > 0) continue;
    if (std::find(g.ranks.begin(), g.ranks.end(), dump.rank) == g.ranks.end())
      d.not_member = "pg " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " of ranks [" +
                     join(
                         [&] {
                           std::vector<std::string> r;
                           for (auto x : g.ranks) r.push_back(std::to_string(x));
                           return r;
                         }(),
                         ", ") +
                     "]";
  }
  return d;
}

void add_dump(CollectiveRun& run, const std::string& path, DumpStreams dump) {
  // A rank records only the process groups it is a member of: a file name that says otherwise
  // names another rank's dump (or a renamed one), and everything read from it would be misplaced.
  if (!dump.not_member.empty())
    throw model::InputError(path, "the file name says rank " + std::to_string(dump.rank) +
                                      " but the dump's " + dump.not_member +
                                      " does not hold it: rename the file to its rank");
  const std::int32_t rank = rank_for(run, path, dump.rank >= 0 ? dump.rank : dump.group_rank);
  auto& rc = rank_slot(run, rank);
  // Two dumps of one rank: which holds the rank's sequence cannot be guessed.
  for (const auto& s : rc.sources) {
    if (dump.rank >= 0 && s != path && (s.ends_with(".json") || model::is_flight_recorder_pickle(s)))
      throw model::InputError(path, "rank " + std::to_string(rank) + " is also in " + s +
                                        ": two Flight Recorder dumps of one rank (keep one)");
  }
  rc.sources.push_back(path);
  rc.flight_recorder = true;
  if (dump.empty) rc.nothing.push_back(path + " is a Flight Recorder dump with no entries");
  for (auto& s : dump.streams) add_stream(run, rank_slot(run, rank), std::move(s));
}

void add_flight_recorder(CollectiveRun& run, const std::string& path) {
  add_dump(run, path, streams_of(model::read_flight_recorder(path)));
}

/// Reads the dumps of a folder on every core (a run of N ranks has N dumps of thousands of
/// entries each), then adds them in file order, so the run, its problems and the first error
/// thrown are the same as read one by one.
void add_flight_recorders(CollectiveRun& run, const std::vector<std::string>& paths) {
  std::vector<DumpStreams> read(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < paths.size(); i = next++) {
      try {
        read[i] = streams_of(model::read_flight_recorder(paths[i]));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const auto threads = std::min<std::size_t>(std::max(1U, std::thread::hardware_concurrency()), paths.size());
  {
    std::vector<std::jthread> pool;
    for (std::size_t k = 1; k < threads; ++k) pool.emplace_back(worker);
    worker();
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    add_dump(run, paths[i], std::move(read[i]));
  }
}

/// A pickle the Flight Recorder reader claims by its opcode: a dump, or plain data that holds no
/// entries (a rank with no evidence, and why). Nothing in it is ever executed.
void add_pickle(CollectiveRun& run, const std::string& path) {
  const model::MappedFile file(path);
  std::string holds;
  if (auto dump = model::read_flight_recorder_pickle_if_dump(file.bytes(), path, holds)) {
    add_dump(run, path, streams_of(*dump));
    return;
  }
  auto& rc = rank_slot(run, rank_for(run, path, model::rank_in_file_name(path)));
  rc.sources.push_back(path);
  rc.nothing.push_back(path + " is a pickle but holds no Flight Recorder entries (it holds " + holds + ")");
}

void add_torch_trace(CollectiveRun& run, const std::string& path) {
  const auto trace = model::read_torch_trace_dir(path);
  for (const auto& t : trace.ranks) {
    for (const auto& p : t.problems) run.problems.push_back(p.text());
    const std::int32_t rank = t.rank >= 0 ? t.rank : 0;
    rank_slot(run, rank).sources.push_back(t.path);
    std::map<std::pair<model::CompileId, std::string>, int> seen;
    bool any = false;
    for (const auto& tg : t.graphs) {
      const int occurrence = seen[{tg.compile, tg.kind}]++;
      std::string name = tg.compile.text() + " " + tg.kind;
      if (occurrence > 0) name += " #" + std::to_string(occurrence);
      auto s = collectives_from_graph(tg.graph, std::move(name));
      any = any || !s.ops.empty();
      if (!s.ops.empty()) add_stream(run, rank_slot(run, rank), std::move(s));
    }
    if (!any)
      rank_slot(run, rank).nothing.push_back(t.path +
                                             " is a TORCH_TRACE log with no _c10d_functional "
                                             "collective in its " +
                                             std::to_string(t.graphs.size()) + " graphs");
  }
}

bool is_trace_log(const fs::path& p) {
  return p.filename().string().starts_with("dedicated_log_torch_trace_rank_") && p.extension() == ".log";
}

bool is_flight_recorder(const fs::path& p) {
  const auto name = p.filename().string();
  if (name.starts_with("rank") && name.ends_with("_flight_recorder.json")) return true;
  if (model::is_flight_recorder_pickle(p.string())) return true;  // pickled dumps, by content
  // PyTorch's own names (TORCH_FR_DUMP_TEMP_FILE + rank) in JSON form: by content too.
  return model::rank_in_file_name(name) >= 0 && !name.ends_with(".log") &&
         model::detect_format(p.string()).format == model::Format::FlightRecorderJson;
}

/// Reads what a folder holds; false when it holds neither kind of file.
bool add_folder(CollectiveRun& run, const fs::path& dir, std::vector<std::string>& trace_dirs) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (model::path_kind(e.path()) == model::PathKind::Regular) files.push_back(e.path());  // a loop throws
  std::sort(files.begin(), files.end());
  std::vector<std::string> dumps;
  for (const auto& f : files)
    if (is_flight_recorder(f)) dumps.push_back(f.string());
  add_flight_recorders(run, dumps);
  bool found = !dumps.empty();
  if (std::any_of(files.begin(), files.end(), is_trace_log)) {
    add_torch_trace(run, dir.string());
    trace_dirs.push_back(dir.string());
    found = true;
  }
  return found;
}

/// "send 0->1" -> kind send, src 0, dst 1; "recv 1<-0" -> kind recv, src 0, dst 1.
void parse_p2p(CollectiveOp& op) {
  const auto space = op.kind.find(' ');
  if (space == std::string::npos) return;
  const std::string peers = op.kind.substr(space + 1);
  op.kind = op.kind.substr(0, space);
  const auto arrow = peers.find("->");
  const auto back = peers.find("<-");
  try {
    if (arrow != std::string::npos) {
      op.src = std::stoll(peers.substr(0, arrow));
      op.dst = std::stoll(peers.substr(arrow + 2));
    } else if (back != std::string::npos) {
      op.dst = std::stoll(peers.substr(0, back));
      op.src = std::stoll(peers.substr(back + 2));
    }
  } catch (const std::exception&) {
    op.src = op.dst = -1;
  }
}

/// Installed code (torch itself, other packages, the interpreter's own frames): not where a user's
/// program issued a collective. Inductor's generated modules (/tmp/torchinductor_*) are not.
bool library_frame(const model::FlightRecorderFrame& f) {
  const std::string_view p = f.filename;
  return p.empty() || p.starts_with("<") || p.find("site-packages/") != std::string_view::npos ||
         p.find("dist-packages/") != std::string_view::npos || p.find("/torch/") != std::string_view::npos ||
         p.find("/lib/python3") != std::string_view::npos;
}

std::string frame_text(const model::FlightRecorderFrame& f) {
  const auto slash = f.filename.rfind('/');
  const std::string file = slash == std::string::npos ? f.filename : f.filename.substr(slash + 1);
  return f.name + " (" + file + ":" + std::to_string(f.line) + ")";
}

/// The frame where the program issued the entry: the first outside installed code, else the
/// innermost; nullptr when the dump has no frames.
const model::FlightRecorderFrame* call_frame(const std::vector<model::FlightRecorderFrame>& frames) {
  if (frames.empty()) return nullptr;
  std::size_t i = 0;
  while (i < frames.size() && library_frame(frames[i])) ++i;
  return i == frames.size() ? &frames.front() : &frames[i];
}

model::ProcessGroupStatus status_of(const model::FlightRecorderDump& d, std::int64_t pg_id) {
  for (const auto& st : d.status)
    if (st.pg_id == pg_id) return st;
  return {};
}

}  // namespace

std::string CollectiveOp::signature() const {
  std::vector<std::string> in, outs;
  for (std::size_t i = 0; i < input_shapes.size(); ++i)
    in.push_back(input_shapes[i] + " " + (i < input_dtypes.size() ? input_dtypes[i] : "?"));
  for (std::size_t i = 0; i < output_shapes.size(); ++i)
    outs.push_back(output_shapes[i] + " " + (i < output_dtypes.size() ? output_dtypes[i] : "?"));
  std::string s = kind;
  if (!params.empty()) s += " " + params;
  return s + " (" + join(in, ", ") + ") -> (" + join(outs, ", ") + ")";
}

const CollectiveStream* RankCollectives::find(std::string_view name) const noexcept {
  for (const auto& s : streams)
    if (s.name == name) return &s;
  return nullptr;
}

const RankCollectives* CollectiveRun::rank(std::int32_t r) const noexcept {
  for (const auto& rc : ranks)
    if (rc.rank == r) return &rc;
  return nullptr;
}

CollectiveStream collectives_from_graph(const model::Graph& g, std::string name) {
  CollectiveStream s;
  s.name = std::move(name);
  add_graph_ops(g, "", s);
  return s;
}

std::vector<CollectiveStream> collectives_from_flight_recorder(const model::FlightRecorderDump& d) {
  std::vector<std::string> names;
  for (const auto& g : d.groups) names.push_back(g.name);
  for (const auto& e : d.entries)
    if (std::find(names.begin(), names.end(), e.pg_name) == names.end()) names.push_back(e.pg_name);
  std::vector<CollectiveStream> out;
  for (const auto& name : names) {
    CollectiveStream s;
    std::string desc;
    for (const auto& g : d.groups) {
      if (g.name != name) continue;
      s.ranks = g.ranks;
      desc = g.desc;
    }
    for (const auto* e : d.sequence(name)) {
      if (desc.empty()) desc = e->pg_desc;
      CollectiveOp op;
      op.kind = std::string(e->op());
      if (e->is_p2p) {
        op.params = "p2p";
        op.p2p = true;
        parse_p2p(op);
      }
      for (const auto& dims : e->input_sizes) op.input_shapes.push_back(dims_text(dims));
      for (const auto& dims : e->output_sizes) op.output_shapes.push_back(dims_text(dims));
      for (const auto& t : e->input_dtypes) op.input_dtypes.push_back(canonical_dtype(t));
      for (const auto& t : e->output_dtypes) op.output_dtypes.push_back(canonical_dtype(t));
      op.group = name;
      op.state = e->state;
      op.seq = e->is_p2p ? 0 : e->collective_seq_id;
      op.record = e->record_id;
      op.where = "record " + std::to_string(e->record_id);
      if (const auto* f = call_frame(e->frames)) {
        op.site = frame_text(*f);
        op.site_path = f->filename;
        op.site_line = f->line;
      }
      if (s.status.pg_id < 0) s.status = status_of(d, e->pg_id);
      s.ops.push_back(std::move(op));
    }
    s.group = name;
    s.name = "pg " + name + (desc.empty() ? "" : " (" + desc + ")");
    if (!s.ops.empty()) out.push_back(std::move(s));
  }
  return out;
}

CollectiveRun load_collectives(std::span<const std::string> paths) {
  CollectiveRun run;
  std::vector<std::string> trace_dirs;
  for (const auto& p : paths) {
    run.path += (run.path.empty() ? "" : " ") + p;
    const fs::path path(p);
    const model::PathKind kind = model::path_kind(path);
    if (kind == model::PathKind::Directory) {
      const bool here = add_folder(run, path, trace_dirs);
      const bool sub = model::path_kind(path / "trace") == model::PathKind::Directory &&
                       add_folder(run, path / "trace", trace_dirs);
      if (!here && !sub)
        throw model::InputError(p,
                                "no rank<r>_flight_recorder.json and no TORCH_TRACE log here or in trace/");
    } else if (kind == model::PathKind::Missing) {
      throw model::InputError(p, "no such file or directory");
    } else {
      // By content, never by name: a pickle read as log text would yield nothing and pass.
      const auto d = model::detect_format(p);
      switch (d.format) {
        // Any JSON object is the dump reader's: it names what a dump lacks ("no \"entries\" array").
        case model::Format::FlightRecorderJson:
        case model::Format::Json: add_flight_recorder(run, p); break;
        case model::Format::Pickle: add_pickle(run, p); break;
        case model::Format::TorchTrace: add_torch_trace(run, p); break;
        case model::Format::Missing: throw model::InputError(p, d.reason);
        default: throw model::unrecognized_input(p, d, kCollectiveFormats);
      }
    }
  }
  name_output_code_nodes(run, trace_dirs);
  return run;
}

}  // namespace gparity::diff
