#include "diff/runs/bucket_compare.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "diff/report/evidence.hpp"
#include "diff/runs/bucket_plans_read.hpp"

namespace gparity::diff {
namespace {

using Json = nlohmann::json;

struct Tally {
  Severity worst = Severity::Info;
  std::size_t partition = 0, order = 0, moved = 0, other = 0;
  void see(Severity s) { worst = std::max(worst, s); }
};

struct Context {
  std::string a_name, b_name;  // "baseline" / "candidate", or "rank 0" / "rank 1"
  std::int32_t rank = 0;
  FindingConsumer* out = nullptr;
  Tally* tally = nullptr;
  void emit(Severity sev, std::string kind, std::string bucket, std::string message,
            Json values = Json::object()) const {
    Finding f;
    f.severity = sev;
    f.kind = std::move(kind);
    f.where.rank = rank;
    f.where.graph = std::move(bucket);
    f.message = std::move(message);
    f.values = std::move(values);
    out->finding(f);
    tally->see(sev);
  }
};

struct Where {
  std::size_t bucket = 0, index = 0;
};

std::unordered_map<std::string, Where> index_members(const BucketPlan& p) {
  std::unordered_map<std::string, Where> m;
  for (std::size_t b = 0; b < p.buckets.size(); ++b)
    for (std::size_t i = 0; i < p.buckets[b].members.size(); ++i)
      m.emplace(p.buckets[b].members[i].fqn, Where{b, i});
  return m;
}

/// Members of `a` (in a's order) whose b positions are off one longest increasing run: the
/// fewest members whose moving explains the new order.
std::vector<bool> moved_members(const std::vector<std::size_t>& b_pos) {
  std::vector<std::size_t> tails, tail_idx;
  std::vector<std::ptrdiff_t> prev(b_pos.size(), -1);
  for (std::size_t i = 0; i < b_pos.size(); ++i) {
    const auto it = std::lower_bound(tails.begin(), tails.end(), b_pos[i]);
    const auto k = static_cast<std::size_t>(it - tails.begin());
    if (k > 0) prev[i] = static_cast<std::ptrdiff_t>(tail_idx[k - 1]);
    if (it == tails.end()) {
      tails.push_back(b_pos[i]);
      tail_idx.push_back(i);
    } else {
      *it = b_pos[i];
      tail_idx[k] = i;
    }
  }
  std::vector<bool> moved(b_pos.size(), true);
  for (auto i = tail_idx.empty() ? -1 : static_cast<std::ptrdiff_t>(tail_idx.back()); i >= 0; i = prev[i])
    moved[static_cast<std::size_t>(i)] = false;
  return moved;
}

std::string order_text(const PlanBucket& b) {
  std::string s;
  for (const auto& m : b.members) s += (s.empty() ? "" : ", ") + m.fqn;
  return s;
}

/// One bucket of A against the bucket of B that holds its members.
bool compare_bucket(const PlanBucket& a, const PlanBucket& b, const Context& c) {
  bool same = true;
  if (a.collective != b.collective || a.dtype != b.dtype) {
    c.emit(Severity::Divergence, "bucket_changed", a.name,
           "bucket " + a.name + ": " + a.collective + " " + a.dtype + " in the " + c.a_name + ", " +
               b.collective + " " + b.dtype + " in the " + c.b_name,
           {{"a", {a.collective, a.dtype}}, {"b", {b.collective, b.dtype}}});
    ++c.tally->other;
    same = false;
  }
  std::unordered_map<std::string, std::size_t> in_b;
  for (std::size_t i = 0; i < b.members.size(); ++i) in_b.emplace(b.members[i].fqn, i);
  std::vector<std::size_t> b_pos;
  std::vector<const PlanMember*> common;
  for (const auto& m : a.members) {
    const auto it = in_b.find(m.fqn);
    if (it == in_b.end()) continue;
    common.push_back(&m);
    b_pos.push_back(it->second);
    const auto& mb = b.members[it->second];
    if (m.size_bytes != mb.size_bytes) {
      c.emit(Severity::Divergence, "bucket_member_size", a.name,
             m.fqn + " takes " + std::to_string(m.size_bytes) + " bytes in the " + c.a_name + ", " +
                 std::to_string(mb.size_bytes) + " in the " + c.b_name,
             {{"member", m.fqn}, {"a_size_bytes", m.size_bytes}, {"b_size_bytes", mb.size_bytes}});
      ++c.tally->other;
      same = false;
    }
  }
  const auto moved = moved_members(b_pos);
  const bool reordered = std::find(moved.begin(), moved.end(), true) != moved.end();
  Json shifted = Json::array();
  for (std::size_t k = 0; k < common.size(); ++k) {
    const auto& ma = *common[k];
    const auto& mb = b.members[b_pos[k]];
    if (moved[k]) continue;
    if (ma.offset_bytes != mb.offset_bytes)
      shifted.push_back(
          {{"member", ma.fqn}, {"a_offset_bytes", ma.offset_bytes}, {"b_offset_bytes", mb.offset_bytes}});
  }
  if (reordered) {
    c.emit(Severity::Divergence, "bucket_member_order", a.name,
           "bucket " + a.name + " packs its members in another order: " + c.a_name + " [" + order_text(a) +
               "], " + c.b_name + " [" + order_text(b) + "]",
           {{"a_order", order_text(a)}, {"b_order", order_text(b)}, {"shifted", shifted}});
    ++c.tally->order;
    same = false;
    for (std::size_t k = 0; k < common.size(); ++k) {
      if (!moved[k]) continue;
      const auto& ma = *common[k];
      const auto& mb = b.members[b_pos[k]];
      const auto ia = static_cast<std::size_t>(&ma - a.members.data());
      c.emit(Severity::Divergence, "bucket_member_moved", a.name,
             ma.fqn + " moved in bucket " + a.name + ": member " + std::to_string(ia + 1) + " at byte " +
                 std::to_string(ma.offset_bytes) + " in the " + c.a_name + ", member " +
                 std::to_string(b_pos[k] + 1) + " at byte " + std::to_string(mb.offset_bytes) + " in the " +
                 c.b_name,
             {{"member", ma.fqn},
              {"a_position", ia + 1},
              {"b_position", b_pos[k] + 1},
              {"a_offset_bytes", ma.offset_bytes},
              {"b_offset_bytes", mb.offset_bytes}});
      ++c.tally->moved;
    }
  } else if (!shifted.empty()) {
    c.emit(Severity::Divergence, "bucket_member_offset", a.name,
           "bucket " + a.name + ": same member order, but " + std::to_string(shifted.size()) +
               " members sit at other byte offsets (first: " + shifted[0]["member"].get<std::string>() + ")",
           {{"shifted", shifted}});
    ++c.tally->other;
    same = false;
  }
  return same;
}

bool compare_plans(const BucketPlan& a, const BucketPlan& b, const Context& c) {
  const auto ia = index_members(a), ib = index_members(b);
  bool same = true;
  // A member of one plan that is in no bucket of the other, either way.
  const auto missing = [&](const BucketPlan& p, const std::unordered_map<std::string, Where>& other,
                           const std::string& p_name, const std::string& other_name) {
    for (const auto& bk : p.buckets)
      for (const auto& m : bk.members)
        if (!other.contains(m.fqn)) {
          c.emit(
              Severity::Divergence, "bucket_member_missing", bk.name,
              m.fqn + " (bucket " + bk.name + " of the " + p_name + ") is in no bucket of the " + other_name,
              {{"member", m.fqn}});
          ++c.tally->partition;
          same = false;
        }
  };
  missing(a, ib, c.a_name, c.b_name);
  missing(b, ia, c.b_name, c.a_name);
  // Partition: each bucket of A must land whole in one bucket of B and that bucket hold
  // nothing else of A's other buckets.
  std::vector<std::ptrdiff_t> match(a.buckets.size(), -1);
  std::vector<int> claimed(b.buckets.size(), 0);
  for (std::size_t x = 0; x < a.buckets.size(); ++x) {
    std::vector<std::size_t> targets;
    for (const auto& m : a.buckets[x].members)
      if (const auto it = ib.find(m.fqn);
          it != ib.end() && std::find(targets.begin(), targets.end(), it->second.bucket) == targets.end())
        targets.push_back(it->second.bucket);
    if (targets.size() == 1) {
      match[x] = static_cast<std::ptrdiff_t>(targets[0]);
      ++claimed[targets[0]];
      continue;
    }
    if (targets.empty()) continue;
    std::string names;
    for (auto t : targets) names += (names.empty() ? "" : ", ") + b.buckets[t].name;
    c.emit(Severity::Divergence, "bucket_partition", a.buckets[x].name,
           "bucket " + a.buckets[x].name + " of the " + c.a_name + " is split over buckets " + names +
               " of the " + c.b_name,
           {{"bucket", a.buckets[x].name}, {"split_over", names}});
    ++c.tally->partition;
    same = false;
  }
  for (std::size_t y = 0; y < b.buckets.size(); ++y) {
    if (claimed[y] <= 1) continue;
    std::string names;
    for (std::size_t x = 0; x < a.buckets.size(); ++x)
      if (match[x] == static_cast<std::ptrdiff_t>(y))
        names += (names.empty() ? "" : ", ") + a.buckets[x].name;
    c.emit(Severity::Divergence, "bucket_partition", b.buckets[y].name,
           "bucket " + b.buckets[y].name + " of the " + c.b_name + " merges buckets " + names + " of the " +
               c.a_name,
           {{"bucket", b.buckets[y].name}, {"merges", names}});
    ++c.tally->partition;
    same = false;
  }
  // Member order and offsets inside matched buckets; bucket issue order.
  std::vector<std::size_t> b_order;
  for (std::size_t x = 0; x < a.buckets.size(); ++x) {
    if (match[x] < 0 || claimed[static_cast<std::size_t>(match[x])] != 1) continue;
    const auto& bb = b.buckets[static_cast<std::size_t>(match[x])];
    same = compare_bucket(a.buckets[x], bb, c) && same;
    b_order.push_back(static_cast<std::size_t>(match[x]));
  }
  if (!std::is_sorted(b_order.begin(), b_order.end())) {
    std::string names_a, names_b;
    for (const auto& bk : a.buckets) names_a += (names_a.empty() ? "" : ", ") + bk.name;
    for (const auto& bk : b.buckets) names_b += (names_b.empty() ? "" : ", ") + bk.name;
    // Issue order alone moves no byte inside a payload: reported, not a divergence.
    c.emit(Severity::Warning, "bucket_order", "",
           "buckets are listed in another order: " + c.a_name + " [" + names_a + "], " + c.b_name + " [" +
               names_b + "]");
  }
  return same;
}

std::string rank_text(std::int32_t r) {
  return "rank " + std::to_string(r);
}

}  // namespace

namespace {

std::uint64_t member_count(const BucketPlan& p) {
  std::uint64_t n = 0;
  for (const auto& b : p.buckets) n += b.members.size();
  return n;
}

EvidenceSide plans_side(const BucketPlans& plans, std::string role) {
  EvidenceSide s;
  s.role = std::move(role);
  s.input = plans.path;
  std::size_t buckets = 0;
  for (const auto& p : plans.plans) {
    s.items += member_count(p);
    buckets += p.buckets.size();
  }
  s.detail = std::to_string(s.items) + " bucket members in " + std::to_string(buckets) + " buckets of " +
             std::to_string(plans.plans.size()) + (plans.plans.size() == 1 ? " plan" : " plans");
  if (s.items == 0) s.nothing = "holds bucket plans with no member";
  for (const auto f : kBucketFormats) s.tried.emplace_back(f);
  return s;
}

}  // namespace

int report_buckets(const BucketPlans& baseline, const BucketPlans& candidate, FindingConsumer& out) {
  ReportHeader h;
  h.title = "gparity buckets";
  h.baseline = baseline.path;
  h.candidate = candidate.path;
  h.mode = "exact (partition, member order, byte offsets)";
  for (const auto* side : {&baseline, &candidate})
    for (const auto& p : side->plans) h.notes.push_back(p.label + ": " + p.origin);
  out.begin(h);
  Tally t;
  for (const auto* side : {&baseline, &candidate})
    for (const auto& problem : side->problems) {
      Finding f;
      f.severity = Severity::Warning;
      f.kind = "bucket_input_problem";
      f.message = problem;
      out.finding(f);
      t.see(f.severity);
    }
  const auto check = [&](std::string name, std::int32_t rank, bool ok, std::string msg) {
    Check c;
    c.name = std::move(name);
    c.rank = rank;
    c.outcome = ok ? Check::Outcome::Pass : Check::Outcome::Fail;
    c.message = std::move(msg);
    out.check(c);
  };
  // Ranks of one side: every plan against the first plan of the side.
  for (const auto* side : {&baseline, &candidate}) {
    const std::string which = side == &baseline ? "baseline" : "candidate";
    for (std::size_t k = 1; k < side->plans.size(); ++k) {
      const auto& first = side->plans.front();
      const auto& p = side->plans[k];
      if (p.rank == first.rank) continue;  // several records of one rank: compared across sides only
      const Context c{which + " " + rank_text(first.rank), which + " " + rank_text(p.rank), p.rank, &out, &t};
      check("ranks agree: " + which, p.rank, compare_plans(first, p, c), p.label + " vs " + first.label);
    }
  }
  // Baseline against candidate.
  const auto by_rank = [](const BucketPlans& s, std::int32_t rank, std::size_t nth) -> const BucketPlan* {
    for (const auto& p : s.plans)
      if (p.rank == rank && nth-- == 0) return &p;
    return nullptr;
  };
  std::vector<std::pair<const BucketPlan*, const BucketPlan*>> pairs;
  if (baseline.plans.size() == 1 || candidate.plans.size() == 1) {
    for (const auto& a : baseline.plans)
      for (const auto& b : candidate.plans) pairs.emplace_back(&a, &b);
  } else {
    std::map<std::int32_t, std::size_t> nth;
    for (const auto& a : baseline.plans) {
      const auto* b = by_rank(candidate, a.rank, nth[a.rank]++);
      if (b == nullptr) {
        Finding f;
        f.severity = Severity::Warning;
        f.kind = "bucket_plan_not_compared";
        f.where.rank = a.rank;
        f.message = a.label + " has no counterpart in the candidate";
        out.finding(f);
        t.see(f.severity);
        continue;
      }
      pairs.emplace_back(&a, b);
    }
  }
  for (const auto& [a, b] : pairs) {
    const Context c{"baseline", "candidate", b->rank, &out, &t};
    check("baseline vs candidate", b->rank, compare_plans(*a, *b, c), a->label + " vs " + b->label);
  }
  Verdict v;
  v.exit_code = exit_code_for(t.worst);
  const bool same = t.partition + t.order + t.moved + t.other == 0;
  v.headline = same ? "bucket plans agree" : "bucket plans differ";
  v.summary.push_back(std::to_string(t.partition) + " partition differences, " + std::to_string(t.order) +
                      " buckets in another member order (" + std::to_string(t.moved) + " moved members), " +
                      std::to_string(t.other) + " other differences");
  v.data = {{"partition", t.partition}, {"order", t.order}, {"moved", t.moved}, {"other", t.other}};
  Evidence e;
  e.what = "bucket members";
  e.sides = {plans_side(baseline, "baseline"), plans_side(candidate, "candidate")};
  for (const auto& [a, b] : pairs) {
    const auto ib = index_members(*b);
    for (const auto& bk : a->buckets)
      for (const auto& m : bk.members) e.compared += ib.contains(m.fqn) ? 1 : 0;
  }
  // Plans matched rank by rank: a rank with members on one side only is missing evidence.
  if (baseline.plans.size() > 1 && candidate.plans.size() > 1) {
    std::map<std::int32_t, RankEvidenceCount> ranks;
    // By position, not address: a plan set may be compared with itself.
    const BucketPlans* sides[] = {&baseline, &candidate};
    for (int k = 0; k < 2; ++k)
      for (const auto& p : sides[k]->plans) {
        auto& r = ranks[p.rank];
        r.rank = p.rank;
        (k == 0 ? r.baseline : r.candidate) += member_count(p);
        if (r.input.empty()) r.input = p.label;
      }
    for (auto& [rank, r] : ranks) e.ranks.push_back(std::move(r));
  }
  return finish_verdict(v, e, out);
}

}  // namespace gparity::diff
