#include "diff/collectives/collectives.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/model/base/dtype.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/flight_recorder_pickle.hpp"
#include "core/model/formats/format_detect.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "diff/report/evidence.hpp"
#include "diff/graphs/trace_facts.hpp"

namespace gparity::diff {
namespace {

namespace fs = std::filesystem;
using model::Graph;
using model::Node;
using model::NodeId;
using model::Value;
using model::ValueKind;

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : std::string(sep)) + p;
  return s;
}

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
  run.problems.push_back(path + ": no rank in the file name (rank<r>_...); taken as rank " +
                         std::to_string(rank));
  return rank;
}

void add_dump(CollectiveRun& run, const std::string& path, const model::FlightRecorderDump& dump) {
  const std::int32_t rank = rank_for(run, path, dump.rank);
  auto& rc = rank_slot(run, rank);
  // Two dumps of one rank: which holds the rank's sequence cannot be guessed.
  for (const auto& s : rc.sources) {
    if (dump.rank >= 0 && s != path && (s.ends_with(".json") || model::is_flight_recorder_pickle(s)))
      throw model::InputError(path, "rank " + std::to_string(rank) + " is also in " + s +
                                        ": two Flight Recorder dumps of one rank (keep one)");
  }
  rc.sources.push_back(path);
  if (dump.entries.empty()) rc.nothing.push_back(path + " is a Flight Recorder dump with no entries");
  for (auto& s : collectives_from_flight_recorder(dump)) add_stream(run, rank_slot(run, rank), std::move(s));
}

void add_flight_recorder(CollectiveRun& run, const std::string& path) {
  add_dump(run, path, model::read_flight_recorder(path));
}

/// A pickle the Flight Recorder reader claims by its opcode: a dump, or plain data that holds no
/// entries (a rank with no evidence, and why). Nothing in it is ever executed.
void add_pickle(CollectiveRun& run, const std::string& path) {
  const model::MappedFile file(path);
  std::string holds;
  if (auto dump = model::read_flight_recorder_pickle_if_dump(file.bytes(), path, holds)) {
    add_dump(run, path, *dump);
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
  return (name.starts_with("rank") && name.ends_with("_flight_recorder.json")) ||
         model::is_flight_recorder_pickle(p.string());  // pickled dumps, by content
}

/// Reads what a folder holds; false when it holds neither kind of file.
bool add_folder(CollectiveRun& run, const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (model::path_kind(e.path()) == model::PathKind::Regular) files.push_back(e.path());  // a loop throws
  std::sort(files.begin(), files.end());
  bool found = false;
  for (const auto& f : files) {
    if (is_flight_recorder(f)) {
      add_flight_recorder(run, f.string());
      found = true;
    }
  }
  if (std::any_of(files.begin(), files.end(), is_trace_log)) {
    add_torch_trace(run, dir.string());
    found = true;
  }
  return found;
}

/// Leading entries of a Flight Recorder ring that the other rank no longer holds: both windows
/// start at the same collective_seq_id.
std::pair<std::size_t, std::size_t> common_start(const CollectiveStream& a, const CollectiveStream& b) {
  if (a.ops.empty() || b.ops.empty() || a.ops[0].seq <= 0 || b.ops[0].seq <= 0) return {0, 0};
  std::size_t i = 0, j = 0;
  while (i < a.ops.size() && a.ops[i].seq < b.ops[0].seq) ++i;
  while (j < b.ops.size() && b.ops[j].seq < a.ops[0].seq) ++j;
  return {i, j};
}

bool is_flight_recorder_stream(const CollectiveStream& s) {
  return s.name.starts_with("pg ");
}

std::string rank_name(std::int32_t r) {
  return "rank " + std::to_string(r);
}

Finding make_finding(Severity sev, std::string kind, std::int32_t rank, const std::string& stream,
                     std::string message) {
  Finding f;
  f.severity = sev;
  f.kind = std::move(kind);
  f.where.rank = rank;
  f.where.graph = stream;
  f.message = std::move(message);
  return f;
}

struct Tally {
  Severity worst = Severity::Info;
  std::size_t rank_mismatches = 0, reordered = 0, changed = 0, added = 0, removed = 0, streams = 0;
  std::size_t rooted = 0;      // root / non-root record pairs matched by the rooted rule
  std::size_t unfinished = 0;  // Flight Recorder entries not completed
  std::size_t graph_checked = 0, graph_mismatches = 0;
  std::size_t p2p_pairs = 0;
  void see(Severity s) { worst = std::max(worst, s); }
};

/// The first place where `other` departs from `ref`; false when it does.
bool check_rank_pair(const CollectiveStream& ref, std::int32_t ref_rank, const CollectiveStream& other,
                     std::int32_t rank, FindingConsumer& out, Tally& t) {
  auto [i, j] = common_start(ref, other);
  if (i > 0 || j > 0) {
    Finding f =
        make_finding(Severity::Warning, "collective_window", rank, ref.name,
                     "the Flight Recorder rings start at different collectives (" + rank_name(ref_rank) +
                         " drops " + std::to_string(i) + ", " + rank_name(rank) + " drops " +
                         std::to_string(j) + "); only the common window is compared");
    out.finding(f);
    t.see(f.severity);
  }
  for (; i < ref.ops.size() && j < other.ops.size(); ++i, ++j) {
    const auto sa = ref.ops[i].signature(), sb = other.ops[j].signature();
    if (sa == sb) continue;
    if (rooted_records_match(ref.ops[i], other.ops[j])) {
      ++t.rooted;
      continue;
    }
    Finding f = make_finding(Severity::Divergence, "collective_rank_mismatch", rank, ref.name,
                             rank_name(rank) + " departs from " + rank_name(ref_rank) + " at collective #" +
                                 std::to_string(j + 1) + " of " + ref.name + ": " + sb + " where " +
                                 rank_name(ref_rank) + " issues " + sa);
    f.where.node = other.ops[j].where;
    f.where.line = other.ops[j].line;
    f.values = {
        {"position", j + 1}, {"reference_rank", ref_rank},          {"reference", sa},
        {"this", sb},        {"reference_where", ref.ops[i].where}, {"this_where", other.ops[j].where}};
    out.finding(f);
    t.see(f.severity);
    ++t.rank_mismatches;
    return false;
  }
  const std::size_t left_ref = ref.ops.size() - i, left_other = other.ops.size() - j;
  if (left_ref == left_other) return true;
  const bool longer = left_other > left_ref;
  const auto& extra = longer ? other.ops[j] : ref.ops[i];
  Finding f = make_finding(Severity::Divergence, "collective_rank_mismatch", rank, ref.name,
                           rank_name(rank) + " issues " + std::to_string(other.ops.size()) +
                               " collectives in " + ref.name + ", " + rank_name(ref_rank) + " " +
                               std::to_string(ref.ops.size()) + "; the first one only " +
                               rank_name(longer ? rank : ref_rank) + " issues: " + extra.signature());
  f.where.node = extra.where;
  f.values = {
      {"reference_rank", ref_rank}, {"reference_count", ref.ops.size()}, {"this_count", other.ops.size()}};
  out.finding(f);
  t.see(f.severity);
  ++t.rank_mismatches;
  return false;
}

void check_across_ranks(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  std::vector<std::string> names;
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams)
      if (std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
  t.streams = names.size();
  for (const auto& name : names) {
    std::vector<std::pair<std::int32_t, const CollectiveStream*>> holders;
    std::vector<std::int64_t> expected;
    for (const auto& rc : run.ranks) {
      if (const auto* s = rc.find(name)) {
        holders.emplace_back(rc.rank, s);
        for (auto r : s->ranks)
          if (std::find(expected.begin(), expected.end(), r) == expected.end()) expected.push_back(r);
      }
    }
    if (expected.empty())
      for (const auto& rc : run.ranks) expected.push_back(rc.rank);
    bool ok = true;
    for (auto r : expected) {
      const auto* rc = run.rank(static_cast<std::int32_t>(r));
      if (rc == nullptr || rc->find(name) != nullptr) continue;
      Finding f =
          make_finding(Severity::Divergence, "collective_stream_missing", static_cast<std::int32_t>(r), name,
                       rank_name(static_cast<std::int32_t>(r)) + " has no " + name + " while " +
                           rank_name(holders.front().first) + " issues " +
                           std::to_string(holders.front().second->ops.size()) + " collectives in it");
      out.finding(f);
      t.see(f.severity);
      ++t.rank_mismatches;
      ok = false;
    }
    // Point-to-point ops differ by design between ranks (send here, recv there): check_p2p pairs them.
    const auto collective_only = [](const CollectiveStream& s) {
      CollectiveStream c = s;
      std::erase_if(c.ops, [](const CollectiveOp& o) { return o.p2p; });
      return c;
    };
    const CollectiveStream ref = collective_only(*holders[0].second);
    for (std::size_t k = 1; k < holders.size(); ++k)
      ok = check_rank_pair(ref, holders[0].first, collective_only(*holders[k].second), holders[k].first, out,
                           t) &&
           ok;
    Check c;
    c.name = "ranks agree: " + name;
    c.outcome = ok ? Check::Outcome::Pass : Check::Outcome::Fail;
    c.message = std::to_string(holders.size()) + " ranks, " +
                std::to_string(holders.front().second->ops.size()) + " collectives on " +
                rank_name(holders.front().first);
    out.check(c);
  }
}

/// Point-to-point pairs as fr_trace matches them: the k-th send from a to b in a group pairs with
/// the k-th recv on b from a; sizes and dtypes must agree; an op without its partner is named.
void check_p2p(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  struct Side {
    std::int32_t rank;
    const CollectiveOp* op;
    std::string stream;
  };
  std::map<std::tuple<std::string, std::int64_t, std::int64_t>,
           std::pair<std::vector<Side>, std::vector<Side>>>
      pairs;
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams)
      for (const auto& op : s.ops) {
        if (!op.p2p || op.src < 0 || op.dst < 0) continue;
        auto& slot = pairs[{op.group, op.src, op.dst}];
        (op.kind == "send" ? slot.first : slot.second).push_back({rc.rank, &op, s.name});
      }
  const auto tensor = [](const CollectiveOp& o) {
    return !o.input_shapes.empty()
               ? o.input_shapes[0] + " " + (o.input_dtypes.empty() ? "?" : o.input_dtypes[0])
               : (!o.output_shapes.empty() ? o.output_shapes[0] : "?");
  };
  for (const auto& [key, sr] : pairs) {
    const auto& [group, src, dst] = key;
    const auto& [sends, recvs] = sr;
    const std::size_t n = std::min(sends.size(), recvs.size());
    for (std::size_t k = 0; k < n; ++k) {
      ++t.p2p_pairs;
      if (tensor(*sends[k].op) == tensor(*recvs[k].op)) continue;
      Finding f =
          make_finding(Severity::Divergence, "collective_p2p_mismatch", recvs[k].rank, recvs[k].stream,
                       "send #" + std::to_string(k + 1) + " " + std::to_string(src) + "->" +
                           std::to_string(dst) + " in group '" + group + "' sends " + tensor(*sends[k].op) +
                           " (" + rank_name(sends[k].rank) + ", " + sends[k].op->where + ") but " +
                           rank_name(recvs[k].rank) + " receives " + tensor(*recvs[k].op));
      f.where.node = recvs[k].op->where;
      out.finding(f);
      t.see(f.severity);
      ++t.rank_mismatches;
    }
    const auto& rest = sends.size() > n ? sends : recvs;
    for (std::size_t k = n; k < rest.size(); ++k) {
      const bool send = &rest == &sends;
      Finding f = make_finding(Severity::Divergence, "collective_p2p_unmatched", rest[k].rank, rest[k].stream,
                               std::string(send ? "send" : "recv") + " #" + std::to_string(k + 1) + " " +
                                   std::to_string(src) + "->" + std::to_string(dst) + " in group '" + group +
                                   "' on " + rank_name(rest[k].rank) + " has no matching " +
                                   (send ? "recv" : "send") + " (" + rest[k].op->where + ")");
      f.where.node = rest[k].op->where;
      out.finding(f);
      t.see(f.severity);
      ++t.rank_mismatches;
    }
  }
}

/// Flight Recorder entries not completed when the dump was taken (fr_trace's scheduled /
/// started states): a collective some rank was still in, the first place to look for a hang.
void check_states(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  for (const auto& rc : run.ranks) {
    for (const auto& s : rc.streams) {
      std::size_t scheduled = 0, started = 0;
      const CollectiveOp* first = nullptr;
      for (const auto& op : s.ops) {
        if (op.state.empty() || op.state == "completed") continue;
        (op.state == "started" ? started : scheduled)++;
        if (first == nullptr) first = &op;
      }
      if (first == nullptr) continue;
      Finding f =
          make_finding(Severity::Warning, "collective_not_completed", rc.rank, s.name,
                       rank_name(rc.rank) + ": " + std::to_string(started) + " started and " +
                           std::to_string(scheduled) + " scheduled collectives of " + s.name +
                           " had not completed when the dump was taken; first: " + first->signature() + " (" +
                           first->state + ", " + first->where + ")");
      f.where.node = first->where;
      f.values = {{"started", started}, {"scheduled", scheduled}, {"first_state", first->state}};
      out.finding(f);
      t.see(f.severity);
      t.unfinished += started + scheduled;
    }
  }
}

/// What a graph collective and a Flight Recorder entry have in common: the op family
/// (all_gather_into_tensor ~ _all_gather_base) and the first input's sizes.
bool graph_op_ran_as(const CollectiveOp& g, const CollectiveOp& fr) {
  if (collective_family(g.kind) != collective_family(fr.kind)) return false;
  if (g.input_shapes.empty() || fr.input_shapes.empty()) return true;
  const auto& shape = g.input_shapes[0];
  const bool symbolic = std::any_of(shape.begin(), shape.end(),
                                    [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  return symbolic || shape == "?" || shape == fr.input_shapes[0];
}

/// Each rank's graph collectives (the inductor post-grad graphs: what ran) against the same
/// rank's Flight Recorder streams of the same process group: every graph collective must be
/// found, in order, with its kind and sizes.
void cross_check_graphs(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  for (const auto& rc : run.ranks) {
    std::map<std::string, const CollectiveStream*> fr_by_group;
    for (const auto& s : rc.streams)
      if (is_flight_recorder_stream(s) && !s.ops.empty()) fr_by_group[s.ops.front().group] = &s;
    if (fr_by_group.empty()) continue;
    for (const auto& s : rc.streams) {
      if (is_flight_recorder_stream(s) || s.name.find("inductor_post_grad_graph") == std::string::npos)
        continue;
      std::map<std::string, std::vector<const CollectiveOp*>> by_group;
      for (const auto& op : s.ops)
        if (op.kind != "wait_tensor" && !op.group.empty()) by_group[op.group].push_back(&op);
      bool ok = true;
      for (const auto& [group, ops] : by_group) {
        const auto it = fr_by_group.find(group);
        if (it == fr_by_group.end()) {
          Finding f =
              make_finding(Severity::Divergence, "collective_graph_group_not_recorded", rc.rank, s.name,
                           s.name + ": process group '" + group + "' of " + std::to_string(ops.size()) +
                               " graph collectives has no Flight Recorder entries on " + rank_name(rc.rank));
          f.where.node = ops.front()->where;
          out.finding(f);
          t.see(f.severity);
          ++t.graph_mismatches;
          ok = false;
          continue;
        }
        const auto& fr = it->second->ops;
        std::size_t p = 0;
        for (std::size_t k = 0; k < ops.size(); ++k) {
          while (p < fr.size() && !graph_op_ran_as(*ops[k], fr[p])) ++p;
          if (p < fr.size()) {
            ++p;
            continue;
          }
          Finding f =
              make_finding(Severity::Divergence, "collective_graph_not_run", rc.rank, s.name,
                           s.name + ": graph collective " + ops[k]->where + " (" + ops[k]->signature() +
                               ", group '" + group + "') is not in " + it->second->name +
                               " after the graph's previous collectives: the graph and what ran differ");
          f.where.node = ops[k]->where;
          f.where.line = ops[k]->line;
          f.values = {{"graph_position", k + 1}, {"stream", it->second->name}};
          out.finding(f);
          t.see(f.severity);
          ++t.graph_mismatches;
          ok = false;
          break;
        }
      }
      Check c;
      c.name = "graph vs Flight Recorder: " + s.name;
      c.rank = rc.rank;
      c.outcome = ok ? Check::Outcome::Pass : Check::Outcome::Fail;
      c.message = std::to_string(s.ops.size()) + " graph collectives";
      out.check(c);
      ++t.graph_checked;
    }
  }
}

std::string positions_text(const std::vector<std::size_t>& p) {
  std::string s;
  for (auto x : p) s += (s.empty() ? "#" : " #") + std::to_string(x + 1);
  return s;
}

void compare_stream(const CollectiveStream& a, const CollectiveStream& b, std::int32_t rank,
                    FindingConsumer& out, Tally& t) {
  const auto d = diff_sequences(a.ops, b.ops);
  for (const auto& r : d.reorderings) {
    std::vector<std::string> sigs;
    for (auto x : r.a) sigs.push_back(a.ops[x].signature());
    // Long blocks (one collective moved far) are summarized; values keep the whole permutation.
    const std::string text =
        r.a.size() <= 12
            ? "baseline collectives " + positions_text(r.a) + " of " + a.name + " come in the order (" +
                  r.permutation() + ") in the candidate, at " + positions_text(r.b)
            : "baseline collectives #" + std::to_string(r.a.front() + 1) + "..#" +
                  std::to_string(r.a.back() + 1) + " of " + a.name + " (" + std::to_string(r.a.size()) +
                  ") come in another order in the candidate";
    Finding f = make_finding(Severity::Divergence, "collective_reordered", rank, a.name,
                             text + "; first: " + sigs.front());
    f.where.node = b.ops[r.b.front()].where;
    std::vector<std::size_t> pa, pb;
    for (auto x : r.a) pa.push_back(x + 1);
    for (auto x : r.b) pb.push_back(x + 1);
    f.values = {{"baseline_positions", pa},
                {"candidate_positions", pb},
                {"permutation", r.permutation()},
                {"signatures", sigs}};
    out.finding(f);
    t.see(f.severity);
    ++t.reordered;
  }
  for (const auto& p : d.changed) {
    const auto sa = a.ops[p.a].signature(), sb = b.ops[p.b].signature();
    Finding f = make_finding(Severity::Divergence, "collective_changed", rank, a.name,
                             "collective #" + std::to_string(p.a + 1) + " of " + a.name + ": " + sa + " -> " +
                                 sb + (p.a == p.b ? "" : " (candidate #" + std::to_string(p.b + 1) + ")"));
    f.where.node = b.ops[p.b].where;
    f.where.line = b.ops[p.b].line;
    f.values = {
        {"baseline_position", p.a + 1}, {"candidate_position", p.b + 1}, {"baseline", sa}, {"candidate", sb}};
    out.finding(f);
    t.see(f.severity);
    ++t.changed;
  }
  for (auto x : d.removed) {
    Finding f = make_finding(Severity::Divergence, "collective_removed", rank, a.name,
                             "baseline collective #" + std::to_string(x + 1) + " of " + a.name +
                                 " is not in the candidate: " + a.ops[x].signature());
    f.where.node = a.ops[x].where;
    f.values = {{"baseline_position", x + 1}, {"baseline", a.ops[x].signature()}};
    out.finding(f);
    t.see(f.severity);
    ++t.removed;
  }
  for (auto x : d.added) {
    Finding f = make_finding(Severity::Divergence, "collective_added", rank, a.name,
                             "candidate collective #" + std::to_string(x + 1) + " of " + a.name +
                                 " is not in the baseline: " + b.ops[x].signature());
    f.where.node = b.ops[x].where;
    f.where.line = b.ops[x].line;
    f.values = {{"candidate_position", x + 1}, {"candidate", b.ops[x].signature()}};
    out.finding(f);
    t.see(f.severity);
    ++t.added;
  }
  Check c;
  c.name = "baseline: " + a.name;
  c.rank = rank;
  c.outcome = d.identical() ? Check::Outcome::Pass : Check::Outcome::Fail;
  c.message = std::to_string(a.ops.size()) + " vs " + std::to_string(b.ops.size()) + " collectives";
  out.check(c);
}

void check_against_baseline(const CollectiveRun& base, const CollectiveRun& run, FindingConsumer& out,
                            Tally& t) {
  for (const auto& rb : base.ranks) {
    const auto* rc = run.rank(rb.rank);
    if (rc == nullptr) {
      Finding f = make_finding(Severity::Warning, "collective_rank_not_compared", rb.rank, "",
                               rank_name(rb.rank) + " is in the baseline only: not compared");
      out.finding(f);
      t.see(f.severity);
      continue;
    }
    // A run without graphs (eager) or without dumps has nothing of that source to compare.
    const auto has_source = [](const RankCollectives& r, bool fr) {
      return std::any_of(r.streams.begin(), r.streams.end(),
                         [&](const CollectiveStream& x) { return is_flight_recorder_stream(x) == fr; });
    };
    const auto one_sided = [&](const CollectiveStream& s, const RankCollectives& other, const char* side) {
      if (has_source(other, is_flight_recorder_stream(s))) return false;
      Finding f = make_finding(Severity::Info, "collective_stream_not_compared", rb.rank, s.name,
                               s.name + ": the " + side + " has no " +
                                   (is_flight_recorder_stream(s) ? "Flight Recorder dump" : "graphs") +
                                   " for this rank; not compared");
      out.finding(f);
      return true;
    };
    for (const auto& s : rb.streams) {
      if (const auto* c = rc->find(s.name)) {
        compare_stream(s, *c, rb.rank, out, t);
        continue;
      }
      if (one_sided(s, *rc, "candidate")) continue;
      Finding f = make_finding(
          Severity::Divergence, "collective_stream_removed", rb.rank, s.name,
          s.name + " (" + std::to_string(s.ops.size()) + " collectives) is in the baseline only");
      out.finding(f);
      t.see(f.severity);
      ++t.removed;
    }
    for (const auto& s : rc->streams) {
      if (rb.find(s.name) != nullptr || one_sided(s, rb, "baseline")) continue;
      Finding f = make_finding(
          Severity::Divergence, "collective_stream_added", rb.rank, s.name,
          s.name + " (" + std::to_string(s.ops.size()) + " collectives) is in the candidate only");
      out.finding(f);
      t.see(f.severity);
      ++t.added;
    }
  }
  for (const auto& rc : run.ranks) {
    if (base.rank(rc.rank) != nullptr) continue;
    Finding f = make_finding(Severity::Warning, "collective_rank_not_compared", rc.rank, "",
                             rank_name(rc.rank) + " is in the candidate only: not compared");
    out.finding(f);
    t.see(f.severity);
  }
}

/// Myers' O((N+M)·D) diff: the matched index pairs of a longest common subsequence, or nullopt
/// when more than kMaxEdits edits are needed (the trace kept for the walk back is O(D^2)).
constexpr std::int64_t kMaxEdits = 4096;
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> common_subsequence(
    const std::vector<int>& a, const std::vector<int>& b) {
  const auto n = static_cast<std::int64_t>(a.size()), m = static_cast<std::int64_t>(b.size());
  const std::int64_t max_d = std::min(n + m, kMaxEdits);
  const std::int64_t off = max_d + 1;
  std::vector<std::int64_t> v(static_cast<std::size_t>(2 * off + 1), 0);
  std::vector<std::vector<std::int64_t>> trace;  // v[k] for k in [-d-1, d+1] before step d
  const auto at = [&](std::int64_t k) -> std::int64_t& { return v[static_cast<std::size_t>(k + off)]; };
  std::int64_t found = -1;
  for (std::int64_t d = 0; d <= max_d && found < 0; ++d) {
    trace.emplace_back(v.begin() + (off - d - 1), v.begin() + (off + d + 2));
    for (std::int64_t k = -d; k <= d; k += 2) {
      std::int64_t x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      std::int64_t y = x - k;
      while (x < n && y < m && a[static_cast<std::size_t>(x)] == b[static_cast<std::size_t>(y)]) ++x, ++y;
      at(k) = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return std::nullopt;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::int64_t x = n, y = m;
  for (std::int64_t d = found; d >= 0; --d) {
    const auto& t = trace[static_cast<std::size_t>(d)];
    const auto prev = [&](std::int64_t k) { return t[static_cast<std::size_t>(k + d + 1)]; };
    const std::int64_t k = x - y;
    std::int64_t px = 0, py = 0, sx = 0, sy = 0;  // point before the edit, start of the snake after it
    if (d > 0) {
      const bool down = k == -d || (k != d && prev(k - 1) < prev(k + 1));  // an insertion from b
      const std::int64_t pk = down ? k + 1 : k - 1;
      px = prev(pk);
      py = px - pk;
      sx = down ? px : px + 1;
      sy = down ? py + 1 : py;
    }
    while (x > sx && y > sy) {
      out.emplace_back(static_cast<std::size_t>(x - 1), static_cast<std::size_t>(y - 1));
      --x, --y;
    }
    x = px;
    y = py;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

namespace {

bool is_placeholder(const std::vector<std::string>& shapes, const std::vector<std::string>& dtypes) {
  const bool shapes_empty =
      std::all_of(shapes.begin(), shapes.end(), [](const std::string& s) { return s == "[0]" || s == "[]"; });
  const bool dtypes_unknown = std::all_of(dtypes.begin(), dtypes.end(), [](const std::string& d) {
    return d == "UNKNOWN_SCALAR" || d == "?" || d.empty();
  });
  return shapes_empty && (dtypes_unknown || shapes.empty());
}

/// The list side of a rooted record: the root's one tensor per member, shaped like `tensor`.
bool is_root_list(const std::vector<std::string>& shapes, const std::vector<std::string>& dtypes,
                  const std::vector<std::string>& tensor_shapes,
                  const std::vector<std::string>& tensor_dtypes) {
  if (shapes.empty() || tensor_shapes.size() != 1) return false;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    if (shapes[k] != tensor_shapes[0]) return false;
    if (k < dtypes.size() && !tensor_dtypes.empty() && dtypes[k] != tensor_dtypes[0]) return false;
  }
  return true;
}

}  // namespace

bool rooted_records_match(const CollectiveOp& a, const CollectiveOp& b) {
  static constexpr std::string_view kRooted[] = {"scatter", "gather"};
  if (a.kind != b.kind || a.params != b.params) return false;
  if (std::find(std::begin(kRooted), std::end(kRooted), a.kind) == std::end(kRooted)) return false;
  const auto side_ok = [](const CollectiveOp& x, bool list_is_output) {
    const auto& ls = list_is_output ? x.output_shapes : x.input_shapes;
    const auto& ld = list_is_output ? x.output_dtypes : x.input_dtypes;
    const auto& ts = list_is_output ? x.input_shapes : x.output_shapes;
    const auto& td = list_is_output ? x.input_dtypes : x.output_dtypes;
    return is_placeholder(ls, ld) || is_root_list(ls, ld, ts, td);
  };
  // The tensor side is the one both records agree on; the list side is the other.
  for (const bool list_is_output : {true, false}) {
    const bool tensors_equal = list_is_output
                                   ? a.input_shapes == b.input_shapes && a.input_dtypes == b.input_dtypes
                                   : a.output_shapes == b.output_shapes && a.output_dtypes == b.output_dtypes;
    if (tensors_equal && side_ok(a, list_is_output) && side_ok(b, list_is_output)) return true;
  }
  return false;
}

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

namespace {

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

}  // namespace

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
      op.where = "record " + std::to_string(e->record_id);
      s.ops.push_back(std::move(op));
    }
    s.name = "pg " + name + (desc.empty() ? "" : " (" + desc + ")");
    if (!s.ops.empty()) out.push_back(std::move(s));
  }
  return out;
}

CollectiveRun load_collectives(std::span<const std::string> paths) {
  CollectiveRun run;
  for (const auto& p : paths) {
    run.path += (run.path.empty() ? "" : " ") + p;
    const fs::path path(p);
    const model::PathKind kind = model::path_kind(path);
    if (kind == model::PathKind::Directory) {
      const bool here = add_folder(run, path);
      const bool sub =
          model::path_kind(path / "trace") == model::PathKind::Directory && add_folder(run, path / "trace");
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
  return run;
}

std::string SequenceDiff::Reordering::permutation() const {
  // The candidate's order, each member named by its 1-based index inside the block.
  std::vector<std::size_t> idx(b.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return b[x] < b[y]; });
  std::string s;
  for (auto i : idx) s += (s.empty() ? "" : " ") + std::to_string(i + 1);
  return s;
}

SequenceDiff diff_sequences(std::span<const CollectiveOp> a, std::span<const CollectiveOp> b) {
  // Signatures as small integers.
  std::unordered_map<std::string, int> ids;
  std::vector<int> sa(a.size()), sb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    sa[i] = ids.emplace(a[i].signature(), static_cast<int>(ids.size())).first->second;
  for (std::size_t j = 0; j < b.size(); ++j)
    sb[j] = ids.emplace(b[j].signature(), static_cast<int>(ids.size())).first->second;

  std::vector<bool> a_paired(a.size(), false), b_paired(b.size(), false);
  std::vector<SequenceDiff::Pair> pairs;
  // In place: a longest common subsequence, so one change does not shift every later
  // occurrence of the same signature. Without one within the edit budget, occurrence order.
  if (const auto lcs = common_subsequence(sa, sb)) {
    for (const auto& p : *lcs) {
      pairs.push_back({p.first, p.second});
      a_paired[p.first] = b_paired[p.second] = true;
    }
  }
  // Moved: what is left pairs by signature, k-th leftover of A with the k-th leftover of B.
  std::unordered_map<int, std::vector<std::size_t>> left_b;
  for (std::size_t j = 0; j < b.size(); ++j)
    if (!b_paired[j]) left_b[sb[j]].push_back(j);
  std::unordered_map<int, std::size_t> used;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a_paired[i]) continue;
    const auto it = left_b.find(sa[i]);
    if (it == left_b.end()) continue;
    auto& k = used[sa[i]];
    if (k >= it->second.size()) continue;
    pairs.push_back({i, it->second[k++]});
    a_paired[i] = b_paired[pairs.back().b] = true;
  }
  std::sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.a < y.a; });
  // Equal signatures are interchangeable: uncross their pairs (k-th paired A occurrence with the
  // k-th paired B occurrence), so a swap of two ops reads "2 1", not a longer rotation through
  // identical neighbours.
  std::unordered_map<int, std::vector<std::size_t>> by_sig;  // indices into pairs, ascending a
  for (std::size_t k = 0; k < pairs.size(); ++k) by_sig[sa[pairs[k].a]].push_back(k);
  for (auto& [sig, idx] : by_sig) {
    std::vector<std::size_t> bs;
    for (auto k : idx) bs.push_back(pairs[k].b);
    std::sort(bs.begin(), bs.end());
    for (std::size_t q = 0; q < idx.size(); ++q) pairs[idx[q]].b = bs[q];
  }
  // Rank of each pair's candidate position among all pairs; a prefix of pairs is closed when
  // its largest rank equals its length - 1. Minimal closed segments longer than one are blocks
  // the candidate permutes; one-pair segments are in place and anchor the rest.
  std::vector<std::size_t> order(pairs.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return pairs[x].b < pairs[y].b; });
  std::vector<std::size_t> rank_b(pairs.size());
  for (std::size_t r = 0; r < order.size(); ++r) rank_b[order[r]] = r;

  SequenceDiff d;
  std::vector<SequenceDiff::Pair> anchors;
  std::size_t start = 0, reach = 0;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    reach = std::max(reach, rank_b[k]);
    if (reach != k) continue;
    if (k == start) {
      anchors.push_back(pairs[k]);
      d.same.push_back(pairs[k]);
    } else {
      SequenceDiff::Reordering r;
      for (std::size_t x = start; x <= k; ++x) {
        r.a.push_back(pairs[x].a);
        r.b.push_back(pairs[x].b);
      }
      d.reorderings.push_back(std::move(r));
    }
    start = k + 1;
  }
  // Unpaired ops between the same two anchors pair up in order as changes.
  const auto gap_of = [&](std::size_t pos, bool side_a) {
    return static_cast<std::size_t>(std::lower_bound(anchors.begin(), anchors.end(), pos,
                                                     [&](const SequenceDiff::Pair& p, std::size_t x) {
                                                       return (side_a ? p.a : p.b) < x;
                                                     }) -
                                    anchors.begin());
  };
  std::vector<std::vector<std::size_t>> gaps_a(anchors.size() + 1), gaps_b(anchors.size() + 1);
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!a_paired[i]) gaps_a[gap_of(i, true)].push_back(i);
  for (std::size_t j = 0; j < b.size(); ++j)
    if (!b_paired[j]) gaps_b[gap_of(j, false)].push_back(j);
  for (std::size_t g = 0; g < gaps_a.size(); ++g) {
    const std::size_t n = std::min(gaps_a[g].size(), gaps_b[g].size());
    for (std::size_t k = 0; k < n; ++k) d.changed.push_back({gaps_a[g][k], gaps_b[g][k]});
    d.removed.insert(d.removed.end(), gaps_a[g].begin() + static_cast<std::ptrdiff_t>(n), gaps_a[g].end());
    d.added.insert(d.added.end(), gaps_b[g].begin() + static_cast<std::ptrdiff_t>(n), gaps_b[g].end());
  }
  return d;
}

namespace {

std::uint64_t op_count(const RankCollectives& rc) {
  std::uint64_t n = 0;
  for (const auto& s : rc.streams) n += s.ops.size();
  return n;
}

EvidenceSide collective_side(const CollectiveRun& run, std::string role) {
  EvidenceSide side;
  side.role = std::move(role);
  side.input = run.path;
  std::size_t streams = 0;
  std::size_t ranks = 0;
  for (const auto& rc : run.ranks) {
    side.items += op_count(rc);
    streams += rc.streams.size();
    ranks += rc.streams.empty() ? 0 : 1;
    for (const auto& why : rc.nothing) side.nothing += (side.nothing.empty() ? "" : "; ") + why;
  }
  side.detail = std::to_string(side.items) + " collectives in " + std::to_string(streams) + " streams on " +
                std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  // "x.pkl is a pickle but ..." already names its input; drop the repeated path in front.
  if (side.items == 0 && !side.nothing.empty() && side.nothing.starts_with(side.input + " "))
    side.nothing = side.nothing.substr(side.input.size() + 1);
  else if (side.items == 0 && !side.nothing.empty())
    side.nothing = "yielded no collectives: " + side.nothing;
  for (const auto f : kCollectiveFormats) side.tried.emplace_back(f);
  return side;
}

/// What the collective check compared: every op of every rank (ranks only), or the ops of the
/// candidate's streams that the baseline's same rank also has; per rank, its ops on each side.
Evidence collective_evidence(const CollectiveRun& run, const CollectiveRun* baseline) {
  Evidence e;
  e.what = "collectives";
  if (baseline != nullptr) e.sides.push_back(collective_side(*baseline, "baseline"));
  e.sides.push_back(collective_side(run, baseline != nullptr ? "candidate" : "run"));
  std::map<std::int32_t, RankEvidenceCount> ranks;
  const auto input = [](const RankCollectives& rc) { return join(rc.sources, ", "); };
  for (const auto& rc : run.ranks) {
    auto& r = ranks[rc.rank];
    r.rank = rc.rank;
    r.candidate = op_count(rc);
    r.input = input(rc);
    if (r.candidate == 0) r.nothing = join(rc.nothing, "; ");
    if (baseline == nullptr) {
      e.compared += r.candidate;
      continue;
    }
    const auto* rb = baseline->rank(rc.rank);
    if (rb == nullptr) continue;
    for (const auto& s : rc.streams)
      if (const auto* sb = rb->find(s.name)) e.compared += std::min(s.ops.size(), sb->ops.size());
  }
  if (baseline != nullptr) {
    for (const auto& rb : baseline->ranks) {
      auto& r = ranks[rb.rank];
      r.rank = rb.rank;
      r.baseline = op_count(rb);
      if (r.input.empty()) r.input = input(rb);
      if (r.baseline == 0 && r.nothing.empty()) r.nothing = join(rb.nothing, "; ");
    }
  }
  for (auto& [rank, r] : ranks) e.ranks.push_back(std::move(r));
  return e;
}

}  // namespace

int report_collectives(const CollectiveRun& run, const CollectiveRun* baseline, FindingConsumer& out) {
  ReportHeader h;
  h.title = "gparity collectives";
  h.candidate = run.path;
  h.baseline = baseline != nullptr ? baseline->path : "(none: ranks only)";
  h.mode = "exact (kind, arguments, sizes, dtypes)";
  for (const auto& rc : run.ranks)
    h.notes.push_back(rank_name(rc.rank) + ": " + std::to_string(rc.streams.size()) + " streams from " +
                      join(rc.sources, ", "));
  out.begin(h);
  Tally t;
  const auto problems = [&](const CollectiveRun& r) {
    for (const auto& p : r.problems) {
      Finding f;
      f.severity = Severity::Warning;
      f.kind = "collective_input_problem";
      f.message = p;
      out.finding(f);
      t.see(f.severity);
    }
  };
  if (baseline != nullptr) problems(*baseline);
  problems(run);
  check_across_ranks(run, out, t);
  check_p2p(run, out, t);
  check_states(run, out, t);
  cross_check_graphs(run, out, t);
  if (baseline != nullptr) check_against_baseline(*baseline, run, out, t);

  Verdict v;
  v.exit_code = exit_code_for(t.worst);
  const bool same =
      t.rank_mismatches + t.reordered + t.changed + t.added + t.removed + t.graph_mismatches == 0;
  v.headline = same ? (baseline ? "collectives: every rank agrees and matches the baseline"
                                : "collectives: every rank of every stream issues the same sequence")
                    : "collectives differ";
  v.summary.push_back(std::to_string(t.streams) + " streams on " + std::to_string(run.ranks.size()) +
                      " ranks; " + std::to_string(t.rank_mismatches) + " rank mismatches; " +
                      std::to_string(t.rooted) + " root/non-root record pairs matched by the rooted rule; " +
                      std::to_string(t.unfinished) + " Flight Recorder entries not completed");
  if (t.graph_checked > 0)
    v.summary.push_back(std::to_string(t.graph_checked) + " graphs checked against the Flight Recorder; " +
                        std::to_string(t.graph_mismatches) + " mismatches");
  if (baseline != nullptr)
    v.summary.push_back("against the baseline: " + std::to_string(t.reordered) + " reorderings, " +
                        std::to_string(t.changed) + " changed, " + std::to_string(t.added) + " added, " +
                        std::to_string(t.removed) + " removed");
  v.data = {{"streams", t.streams},
            {"ranks", run.ranks.size()},
            {"rank_mismatches", t.rank_mismatches},
            {"reorderings", t.reordered},
            {"changed", t.changed},
            {"added", t.added},
            {"removed", t.removed},
            {"rooted_pairs", t.rooted},
            {"not_completed", t.unfinished},
            {"p2p_pairs", t.p2p_pairs},
            {"graphs_checked", t.graph_checked},
            {"graph_mismatches", t.graph_mismatches}};
  return finish_verdict(v, collective_evidence(run, baseline), out);
}

}  // namespace gparity::diff
