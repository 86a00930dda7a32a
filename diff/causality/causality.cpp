#include "diff/causality/causality.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace gparity::diff::causality {

using json = nlohmann::json;

std::string_view cause_name(Cause c) noexcept {
  switch (c) {
    case Cause::Origin: return "origin";
    case Cause::Propagated: return "propagated";
    case Cause::Received: return "received";
    case Cause::Input: return "input";
    case Cause::Unknown: return "unknown";
  }
  return "unknown";
}

std::string group_text(const std::string& name, const std::string& desc) {
  std::string_view d = desc;
  if (d.starts_with("mesh_")) d.remove_prefix(5);
  return (d.empty() ? std::string() : std::string(d) + " ") + "'" + name + "'";
}

namespace {

std::string ranks_list(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

std::string rank_word(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + ranks_list(ranks);
}

}  // namespace

std::string OriginRef::text() const {
  std::string s = node;
  if (!source.empty()) return s + " at " + source;
  if (!op.empty()) s += " (" + op + ")";
  return s;
}

json OriginRef::to_json() const {
  return {{"rank", rank}, {"graph", graph},   {"node", node},
          {"op", op},     {"source", source}, {"cause", cause_name(cause)}};
}

std::string Classification::text(std::string_view node, int rank) const {
  const std::string where =
      std::string(node) + (group.empty() ? "" : " (group " + group_text(group, group_desc) + ")");
  switch (cause) {
    case Cause::Origin:
      return group.empty() ? "origin: its inputs were equal"
                           : "origin: the inputs of " + where + " were equal on every member";
    case Cause::Received:
      return "received at " + where + " from " + rank_word(from_ranks) + ", origin " + origin.text() +
             (std::find(from_ranks.begin(), from_ranks.end(), origin.rank) == from_ranks.end()
                  ? " on rank " + std::to_string(origin.rank)
                  : "") +
             (through ? ", reaching " + std::string(node) + " through " + through->text() : "");
    case Cause::Propagated: {
      std::string s;
      if (!after_graph.empty()) {
        s = "propagated: a graph input, after " + after_graph + " diverged";
      } else {
        s = "propagated: input";
        s += differing_inputs.size() == 1 ? " " : "s ";
        for (std::size_t i = 0; i < differing_inputs.size() && i < 3; ++i)
          s += (i ? ", " : "") + differing_inputs[i];
        if (differing_inputs.size() > 3) s += ", ...";
        s += " already differed";
      }
      if (origin.rank >= 0 && origin.rank != rank)
        s += " (origin " + origin.text() + " on rank " + std::to_string(origin.rank) + ")";
      return s;
    }
    case Cause::Input: return "graph input: the graph was fed different values";
    case Cause::Unknown: return "cause unknown: " + why_unknown;
  }
  return {};
}

json Classification::to_json() const {
  json j = {{"cause", cause_name(cause)}, {"origin", origin.to_json()}};
  if (!differing_inputs.empty()) j["differing_inputs"] = differing_inputs;
  if (!after_graph.empty()) j["after_graph"] = after_graph;
  if (!group.empty()) {
    j["group"] = group;
    j["group_desc"] = group_desc;
    j["sequence"] = sequence;
  }
  if (cause == Cause::Received) j["from_ranks"] = from_ranks;
  if (through) j["through"] = through->to_json();
  if (!why_unknown.empty()) j["why_unknown"] = why_unknown;
  return j;
}

const Classification* Result::find(int rank, std::size_t record) const {
  for (const auto& r : ranks) {
    if (r.rank != rank) continue;
    const auto it = r.divergent.find(record);
    return it == r.divergent.end() ? nullptr : &it->second;
  }
  return nullptr;
}

std::vector<int> Result::origin_ranks() const {
  std::set<int> s;
  for (const auto& o : origins) s.insert(o.rank);
  return {s.begin(), s.end()};
}

namespace {

// An instance of communication: (kind, group, a, b, k): a collective is ('c', group, seq, 0, 0),
// a point-to-point pair ('p', group, src, dst, k).
using InstanceKey = std::tuple<char, std::string, std::int64_t, std::int64_t, std::int64_t>;

struct Instance {
  InstanceKey key;
  std::string group, desc;
  std::int64_t sequence = 0;
  std::vector<int> members;         // global ranks expected to take part
  std::map<int, std::size_t> seen;  // rank position -> record index
  std::string problem;              // set: a divergence here can only be received or unknown
  bool resolved = false;
};

/// The walk's state: one cursor per rank, each record's taint and the origin it carries.
class Walk {
 public:
  Walk(std::span<const RankRecords> ranks, const GroupTable& baseline, const GroupTable& candidate)
      : ranks_(ranks), base_(baseline), cand_(candidate) {
    for (std::size_t p = 0; p < ranks_.size(); ++p) {
      if (!position_.emplace(ranks_[p].rank, p).second)
        throw std::invalid_argument("rank " + std::to_string(ranks_[p].rank) + " given twice");
    }
    const std::size_t n = ranks_.size();
    tainted_.resize(n);
    root_.resize(n);
    instance_of_.resize(n);
    cursor_.assign(n, 0);
    diverged_graph_.resize(n);
    diverged_root_.assign(n, -1);
    result_.ranks.resize(n);
    for (std::size_t p = 0; p < n; ++p) {
      result_.ranks[p].rank = ranks_[p].rank;
      tainted_[p].assign(ranks_[p].records.size(), false);
      root_[p].assign(ranks_[p].records.size(), -1);
      instance_of_[p].assign(ranks_[p].records.size(), -1);
    }
    check_tables();
    build_instances();
  }

  Result run() {
    for (;;) {
      bool progress = false;
      bool left = false;
      for (std::size_t p = 0; p < ranks_.size(); ++p) {
        progress = advance(p) || progress;
        left = left || cursor_[p] < ranks_[p].records.size();
      }
      if (!left) break;
      if (!progress) force_first_blocked();
    }
    report_missing();
    return std::move(result_);
  }

 private:
  const Record& rec(std::size_t p, std::size_t i) const { return ranks_[p].records[i]; }

  void check_tables() {
    for (const auto& [name, g] : base_) {
      const auto it = cand_.find(name);
      if (it == cand_.end() || it->second.ranks == g.ranks) continue;
      disputed_.insert(name);
      Finding f{Severity::Error, "causality_group_mismatch", {}, "", json::object()};
      f.message = "process group " + group_text(name, g.desc) + " has ranks [" + ranks_list(g.ranks) +
                  "] in the baseline but [" + ranks_list(it->second.ranks) +
                  "] in the candidate: its collectives cannot be matched, and divergences there are not "
                  "classified";
      f.values = {{"group", name}, {"baseline_ranks", g.ranks}, {"candidate_ranks", it->second.ranks}};
      result_.problems.push_back(std::move(f));
    }
  }

  /// Members of a group: its table entry, a legacy "ranks:..." list, else the ranks that name it.
  std::vector<int> members_of(const std::string& group, std::string& desc) {
    if (const auto it = members_cache_.find(group); it != members_cache_.end()) {
      desc = it->second.desc;
      return it->second.ranks;
    }
    auto ranks = table_members(group, desc);
    members_cache_[group] = {ranks, desc};
    return ranks;
  }

  std::vector<int> table_members(const std::string& group, std::string& desc) const {
    for (const auto* t : {&base_, &cand_}) {
      if (const auto it = t->find(group); it != t->end()) {
        desc = it->second.desc;
        return it->second.ranks;
      }
    }
    std::vector<int> out;
    if (group.starts_with("ranks:")) {
      std::size_t p = 6;
      while (p < group.size()) {
        std::size_t used = 0;
        try {
          out.push_back(std::stoi(group.substr(p), &used));
        } catch (const std::exception&) {
          break;
        }
        p += used + 1;
      }
      std::sort(out.begin(), out.end());
      if (!out.empty()) return out;
    }
    std::set<int> s;
    for (const auto& r : ranks_) {
      for (const auto& x : r.records)
        if (x.comm && x.comm->group == group) {
          s.insert(r.rank);
          break;
        }
    }
    return {s.begin(), s.end()};
  }

  void build_instances() {
    std::map<InstanceKey, std::size_t> index;
    for (std::size_t p = 0; p < ranks_.size(); ++p) {
      const int rank = ranks_[p].rank;
      std::map<std::string, std::int64_t> seq;                                        // per group
      std::map<std::tuple<std::string, std::int64_t, std::int64_t>, std::int64_t> k;  // per p2p pair
      for (std::size_t i = 0; i < ranks_[p].records.size(); ++i) {
        const auto& c = rec(p, i).comm;
        if (!c) continue;
        InstanceKey key;
        std::int64_t sequence = 0;
        if (c->kind == Comm::Kind::Collective) {
          sequence = seq[c->group]++;
          key = {'c', c->group, sequence, 0, 0};
        } else {
          const std::int64_t src = c->kind == Comm::Kind::Send ? rank : c->peer;
          const std::int64_t dst = c->kind == Comm::Kind::Send ? c->peer : rank;
          sequence = k[{c->group, src, dst}]++;
          key = {'p', c->group, src, dst, sequence};
        }
        auto [it, fresh] = index.try_emplace(key, instances_.size());
        if (fresh) {
          Instance in;
          in.key = key;
          in.group = c->group;
          in.sequence = sequence;
          if (c->kind == Comm::Kind::Collective) {
            in.members = members_of(c->group, in.desc);
          } else {
            in.members = {static_cast<int>(std::get<2>(key)), static_cast<int>(std::get<3>(key))};
            std::sort(in.members.begin(), in.members.end());
            members_of(c->group, in.desc);
          }
          if (disputed_.contains(c->group))
            in.problem = "process group " + group_text(c->group, in.desc) +
                         " has different rank sets in the two sides' tables";
          instances_.push_back(std::move(in));
        }
        auto& in = instances_[it->second];
        if (in.seen.contains(static_cast<int>(p))) continue;  // a send to oneself: one record
        in.seen[static_cast<int>(p)] = i;
        instance_of_[p][i] = static_cast<std::int64_t>(it->second);
      }
    }
    // Records on ranks the group does not have, and members without a record.
    for (auto& in : instances_) {
      std::vector<int> strangers;
      for (const auto& [p, i] : in.seen) {
        const int rank = ranks_[static_cast<std::size_t>(p)].rank;
        if (!std::binary_search(in.members.begin(), in.members.end(), rank)) strangers.push_back(rank);
      }
      if (!strangers.empty() && in.problem.empty())
        in.problem = rank_word(strangers) + " issue" + (strangers.size() == 1 ? "s" : "") + " it but " +
                     (strangers.size() == 1 ? "is" : "are") + " not in group " +
                     group_text(in.group, in.desc) + " (ranks " + ranks_list(in.members) + ")";
      if (!missing(in).empty() && in.problem.empty())
        in.problem = "not in the records of " + rank_word(missing(in)) + " (members of group " +
                     group_text(in.group, in.desc) + ")";
    }
  }

  std::vector<int> missing(const Instance& in) const {
    std::vector<int> out;
    for (const int m : in.members) {
      const auto it = position_.find(m);
      if (it == position_.end() || !in.seen.contains(static_cast<int>(it->second))) out.push_back(m);
    }
    return out;
  }

  std::int64_t add_root(std::size_t p, std::size_t i, Cause c) {
    const auto& r = rec(p, i);
    roots_.push_back({ranks_[p].rank, i, r.graph, r.node, r.op, r.source, c});
    const auto k = static_cast<std::int64_t>(roots_.size() - 1);
    if (c == Cause::Origin) {
      result_.origins.push_back(roots_.back());
      first_origin_.try_emplace({ranks_[p].rank, r.graph}, k);
    }
    return k;
  }

  /// The root a collective's receivers name for damage whose chain started at root `k`: the
  /// sender's first origin in that graph, which its own finding of the graph names (a rank with
  /// two origins of one bug, the second feeding the collective, is not named by the second).
  std::int64_t named_root(std::int64_t k) const {
    if (k < 0) return k;
    const auto& root = roots_[static_cast<std::size_t>(k)];
    if (root.cause != Cause::Origin) return k;
    const auto it = first_origin_.find({root.rank, root.graph});
    return it == first_origin_.end() ? k : it->second;
  }

  std::vector<std::size_t> tainted_inputs(std::size_t p, std::size_t i) const {
    std::vector<std::size_t> out;
    for (const auto j : rec(p, i).inputs)
      if (j < i && tainted_[p][j]) out.push_back(j);
    return out;
  }

  Classification& classify_at(std::size_t p, std::size_t i) { return result_.ranks[p].divergent[i]; }

  /// A record that is not communication.
  void local(std::size_t p, std::size_t i) {
    const auto& r = rec(p, i);
    const auto in = tainted_inputs(p, i);
    if (!r.compared || !r.differs) {
      // Without records on both sides a difference passes through; an equal record stops it.
      if (!r.compared && !in.empty()) {
        tainted_[p][i] = true;
        root_[p][i] = root_[p][in.front()];
      }
      return;
    }
    auto& c = classify_at(p, i);
    if (!in.empty()) {
      c.cause = Cause::Propagated;
      for (const auto j : in) c.differing_inputs.push_back(rec(p, j).node);
      root_[p][i] = root_[p][in.front()];
    } else if (r.graph_input && !diverged_graph_[p].empty() && diverged_graph_[p] != r.graph) {
      c.cause = Cause::Propagated;
      c.after_graph = diverged_graph_[p];
      root_[p][i] = diverged_root_[p];
    } else if (r.graph_input) {
      c.cause = Cause::Input;
      root_[p][i] = add_root(p, i, c.cause);
    } else if (!r.inputs_known) {
      c.cause = Cause::Unknown;
      c.why_unknown = "no graph says what it reads";
      root_[p][i] = add_root(p, i, c.cause);
    } else {
      c.cause = Cause::Origin;
      root_[p][i] = add_root(p, i, c.cause);
    }
    diverged(p, i);
  }

  void diverged(std::size_t p, std::size_t i) {
    tainted_[p][i] = true;
    auto& c = classify_at(p, i);
    if (root_[p][i] >= 0) c.origin = roots_[static_cast<std::size_t>(root_[p][i])];
    if (diverged_graph_[p].empty()) {
      diverged_graph_[p] = rec(p, i).graph;
      diverged_root_[p] = root_[p][i];
    }
  }

  /// Resolves an instance on every member that has reached it (`ready`); the others (only when
  /// the walk is stuck on ranks issuing collectives in different orders) cannot be judged.
  void resolve(Instance& in, const std::set<std::size_t>& ready, const std::string& order_problem) {
    in.resolved = true;
    std::map<std::size_t, std::vector<std::size_t>> local_taint;
    for (const auto& [pi, i] : in.seen) {
      const auto p = static_cast<std::size_t>(pi);
      if (ready.contains(p)) local_taint[p] = tainted_inputs(p, i);
    }
    for (const auto& [pi, i] : in.seen) {
      const auto p = static_cast<std::size_t>(pi);
      const auto& r = rec(p, i);
      std::vector<int> from;
      std::int64_t from_root = -1;
      for (const auto& [q, t] : local_taint) {
        if (q == p || t.empty()) continue;
        from.push_back(ranks_[q].rank);
        if (from_root < 0) from_root = root_[q][t.front()];
      }
      std::sort(from.begin(), from.end());
      const bool is_ready = ready.contains(p);
      const auto own = is_ready ? local_taint[p] : std::vector<std::size_t>{};
      if (!r.compared || !r.differs) {
        if (!r.compared && (!own.empty() || !from.empty())) {
          tainted_[p][i] = true;
          root_[p][i] = !own.empty() ? root_[p][own.front()] : named_root(from_root);
        }
        continue;
      }
      auto& c = classify_at(p, i);
      c.group = in.group;
      c.group_desc = in.desc;
      c.sequence = in.sequence;
      const auto all_known = std::all_of(in.seen.begin(), in.seen.end(), [&](const auto& s) {
        return rec(static_cast<std::size_t>(s.first), s.second).inputs_known;
      });
      if (!own.empty()) {
        c.cause = Cause::Propagated;
        for (const auto j : own) c.differing_inputs.push_back(rec(p, j).node);
        root_[p][i] = root_[p][own.front()];
      } else if (!is_ready) {
        c.cause = Cause::Unknown;
        c.why_unknown = order_problem;
        root_[p][i] = add_root(p, i, c.cause);
      } else if (!from.empty()) {
        c.cause = Cause::Received;
        c.from_ranks = from;
        root_[p][i] = named_root(from_root);
        if (root_[p][i] != from_root) c.through = roots_[static_cast<std::size_t>(from_root)];
      } else if (!in.problem.empty() || !order_problem.empty() || !all_known) {
        c.cause = Cause::Unknown;
        c.why_unknown = !in.problem.empty()      ? in.problem
                        : !order_problem.empty() ? order_problem
                                                 : "a member's graph does not say what it reads";
        root_[p][i] = add_root(p, i, c.cause);
      } else {
        c.cause = Cause::Origin;
        root_[p][i] = add_root(p, i, c.cause);
      }
      diverged(p, i);
    }
  }

  /// Moves rank p's cursor as far as it can; true when it moved.
  bool advance(std::size_t p) {
    bool moved = false;
    auto& i = cursor_[p];
    while (i < ranks_[p].records.size()) {
      const auto k = instance_of_[p][i];
      if (k < 0) {
        if (!rec(p, i).comm) local(p, i);  // a repeated p2p record joins no instance: skipped
        ++i;
        moved = true;
        continue;
      }
      auto& in = instances_[static_cast<std::size_t>(k)];
      if (!in.resolved) {
        std::set<std::size_t> ready;
        for (const auto& [q, j] : in.seen)
          if (cursor_[static_cast<std::size_t>(q)] == j) ready.insert(static_cast<std::size_t>(q));
        if (ready.size() != in.seen.size()) return moved;
        resolve(in, ready, "");
      }
      ++i;
      moved = true;
    }
    return moved;
  }

  /// Every rank waits for another: the ranks issue collectives in different orders. The first
  /// blocked rank's instance is resolved with the members that reached it.
  void force_first_blocked() {
    for (std::size_t p = 0; p < ranks_.size(); ++p) {
      const auto i = cursor_[p];
      if (i >= ranks_[p].records.size()) continue;
      auto& in = instances_[static_cast<std::size_t>(instance_of_[p][i])];
      std::set<std::size_t> ready;
      std::vector<int> late;
      for (const auto& [q, j] : in.seen) {
        if (cursor_[static_cast<std::size_t>(q)] == j) {
          ready.insert(static_cast<std::size_t>(q));
        } else {
          late.push_back(ranks_[static_cast<std::size_t>(q)].rank);
        }
      }
      const std::string what = rec(p, i).node + " (group " + group_text(in.group, in.desc) + " #" +
                               std::to_string(in.sequence) + ")";
      const std::string problem = "the ranks issue collectives in different orders: " + rank_word(late) +
                                  " reach" + (late.size() == 1 ? "es " : " ") + what +
                                  " only after collectives the others have not issued yet";
      Finding f{Severity::Incomplete, "causality_order_mismatch", {}, problem, json::object()};
      f.where.rank = ranks_[p].rank;
      f.where.graph = rec(p, i).graph;
      f.where.node = rec(p, i).node;
      f.values = {{"group", in.group}, {"sequence", in.sequence}, {"late_ranks", late}};
      result_.problems.push_back(std::move(f));
      resolve(in, ready, problem);
      return;
    }
  }

  /// One finding per group and rank that lacks collectives of it (the first one named).
  void report_missing() {
    std::map<std::pair<std::string, int>, std::pair<const Instance*, std::size_t>> by_group_rank;
    for (const auto& in : instances_) {
      for (const int m : missing(in)) {
        auto& slot = by_group_rank[{in.group, m}];
        if (slot.first == nullptr) slot.first = &in;
        ++slot.second;
      }
    }
    for (const auto& [key, v] : by_group_rank) {
      const auto& [in, count] = v;
      const auto& [p, i] = *in->seen.begin();
      const auto& r = rec(static_cast<std::size_t>(p), i);
      Finding f{Severity::Incomplete, "causality_collective_unmatched", {}, "", json::object()};
      f.where.rank = key.second;
      f.where.graph = r.graph;
      f.where.node = r.node;
      f.message = std::to_string(count) + " communication op" + (count == 1 ? "" : "s") + " of group " +
                  group_text(in->group, in->desc) + " (first: " + r.node + " #" +
                  std::to_string(in->sequence) + " on rank " +
                  std::to_string(ranks_[static_cast<std::size_t>(p)].rank) + ") not in the records of rank " +
                  std::to_string(key.second) +
                  ", a member: a divergence there is received or unknown, never an origin";
      f.values = {{"group", in->group},
                  {"missing_rank", key.second},
                  {"count", count},
                  {"first", r.node},
                  {"sequence", in->sequence}};
      result_.problems.push_back(std::move(f));
    }
  }

  std::span<const RankRecords> ranks_;
  const GroupTable& base_;
  const GroupTable& cand_;
  std::set<std::string> disputed_;
  std::map<std::string, Group> members_cache_;
  std::unordered_map<int, std::size_t> position_;
  std::vector<Instance> instances_;
  std::vector<std::vector<std::int64_t>> instance_of_;  // per rank and record: instance, or -1
  std::vector<std::vector<bool>> tainted_;
  std::vector<std::vector<std::int64_t>> root_;  // index into roots_, -1: none
  std::vector<OriginRef> roots_;
  // (rank, graph) -> the first origin there, as an index into roots_
  std::map<std::pair<int, std::string>, std::int64_t> first_origin_;
  std::vector<std::size_t> cursor_;
  std::vector<std::string> diverged_graph_;  // the first graph of the rank with a divergence
  std::vector<std::int64_t> diverged_root_;
  Result result_;
};

}  // namespace

Result classify(std::span<const RankRecords> ranks, const GroupTable& baseline, const GroupTable& candidate) {
  return Walk(ranks, baseline, candidate).run();
}

// ---- JSON ---------------------------------------------------------------------------------------

namespace {

const char* comm_kind_name(Comm::Kind k) {
  switch (k) {
    case Comm::Kind::Collective: return "collective";
    case Comm::Kind::Send: return "send";
    case Comm::Kind::Recv: return "recv";
  }
  return "collective";
}

template <typename T>
T field(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

}  // namespace

json to_json(const RankRecords& r) {
  // Compact: one array per record, [graph index, node, op, source, inputs, flags, comm].
  json graphs = json::array();
  std::map<std::string, std::size_t> graph_index;
  json records = json::array();
  for (const auto& x : r.records) {
    auto [it, fresh] = graph_index.try_emplace(x.graph, graph_index.size());
    if (fresh) graphs.push_back(x.graph);
    const int flags =
        (x.inputs_known ? 1 : 0) | (x.compared ? 2 : 0) | (x.differs ? 4 : 0) | (x.graph_input ? 8 : 0);
    json c = nullptr;
    if (x.comm) c = {comm_kind_name(x.comm->kind), x.comm->group, x.comm->peer};
    records.push_back({it->second, x.node, x.op, x.source, x.inputs, flags, c});
  }
  return {{"rank", r.rank}, {"graphs", graphs}, {"records", records}};
}

RankRecords rank_records_from_json(const json& j) {
  try {
    RankRecords r;
    r.rank = j.at("rank").get<int>();
    const auto graphs = j.at("graphs").get<std::vector<std::string>>();
    for (const auto& x : j.at("records")) {
      Record rec;
      rec.graph = graphs.at(x.at(0).get<std::size_t>());
      rec.node = x.at(1).get<std::string>();
      rec.op = x.at(2).get<std::string>();
      rec.source = x.at(3).get<std::string>();
      rec.inputs = x.at(4).get<std::vector<std::size_t>>();
      const int flags = x.at(5).get<int>();
      rec.inputs_known = (flags & 1) != 0;
      rec.compared = (flags & 2) != 0;
      rec.differs = (flags & 4) != 0;
      rec.graph_input = (flags & 8) != 0;
      if (const auto& c = x.at(6); !c.is_null()) {
        Comm m;
        const auto kind = c.at(0).get<std::string>();
        m.kind = kind == "send"   ? Comm::Kind::Send
                 : kind == "recv" ? Comm::Kind::Recv
                                  : Comm::Kind::Collective;
        m.group = c.at(1).get<std::string>();
        m.peer = c.at(2).get<std::int64_t>();
        rec.comm = std::move(m);
      }
      r.records.push_back(std::move(rec));
    }
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("causal records: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw std::invalid_argument(std::string("causal records: ") + e.what());
  }
}

json to_json(const GroupTable& t) {
  json j = json::object();
  for (const auto& [name, g] : t) j[name] = {{"ranks", g.ranks}, {"desc", g.desc}};
  return j;
}

GroupTable group_table_from_json(const json& j) {
  GroupTable t;
  if (!j.is_object()) throw std::invalid_argument("group table: not an object");
  try {
    for (const auto& [name, g] : j.items()) {
      Group grp;
      grp.ranks = g.at("ranks").get<std::vector<int>>();
      std::sort(grp.ranks.begin(), grp.ranks.end());
      grp.desc = field<std::string>(g, "desc", "");
      t[name] = std::move(grp);
    }
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("group table: ") + e.what());
  }
  return t;
}

}  // namespace gparity::diff::causality
