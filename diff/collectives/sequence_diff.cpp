#include <algorithm>
#include <optional>
#include <unordered_map>

#include "diff/collectives/collectives.hpp"

// Baseline-to-candidate alignment of one collective stream (SequenceDiff, collectives.hpp) and
// the rooted-record rule.

namespace gparity::diff {
namespace {

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

}  // namespace gparity::diff
