#include "diff/kernels/kernel_align.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/model/ops/kernel_launch.hpp"
#include "hash/xxh3.hpp"

namespace gparity::diff::kernels {

using model::ops::OpLog;
using model::ops::OpRecord;

namespace {

std::uint64_t text_hash(const std::string& s) {
  return hash::xxh3_64(std::as_bytes(std::span(s.data(), s.size())));
}

/// What a launch is, without its name: each argument's name (a kernel's role) or position, dtype
/// and shape, then its outputs'.
std::uint64_t signature_of(const OpLog& log, const OpRecord& r) {
  std::string s = model::ops::is_kernel(r) ? "k|" : "o|";
  for (std::uint32_t i = 0; i < r.arg_count; ++i) {
    const auto& t = log.arg(r, i);
    s += std::string(log.str(t.name)) + ":" + log.tensor_text(t) + ",";
  }
  s += "|";
  for (std::uint32_t i = 0; i < r.out_count; ++i) s += log.tensor_text(log.out(r, i)) + ",";
  return text_hash(s);
}

struct Keys {
  std::vector<std::uint64_t> key;  // family + signature
  std::vector<std::uint64_t> sig;  // signature alone
};

Keys keys_of(const OpSlice& s, const std::vector<std::uint32_t>& launches) {
  Keys k;
  for (const auto at : launches) {
    const OpRecord& r = s.at(at);
    const std::string_view name = s.log->op_name(r);
    const std::string_view family = model::ops::is_kernel(r) ? model::ops::kernel_family(name) : name;
    const std::uint64_t sig = signature_of(*s.log, r);
    k.sig.push_back(sig);
    k.key.push_back(text_hash(std::string(family)) ^ (sig * 0x9e3779b97f4a7c15ull));
  }
  return k;
}

/// Patience diff of two key sequences: pairs (i, j) with a[i] == b[j], increasing in both.
class Patience {
 public:
  Patience(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) : a_(a), b_(b) {}

  std::vector<std::pair<std::uint32_t, std::uint32_t>> run() {
    struct Range {
      std::uint32_t a0, a1, b0, b1;
    };
    std::vector<Range> work{
        {0, static_cast<std::uint32_t>(a_.size()), 0, static_cast<std::uint32_t>(b_.size())}};
    while (!work.empty()) {
      Range r = work.back();
      work.pop_back();
      // Equal runs at both ends pair in order.
      while (r.a0 < r.a1 && r.b0 < r.b1 && a_[r.a0] == b_[r.b0]) out_.emplace_back(r.a0++, r.b0++);
      while (r.a0 < r.a1 && r.b0 < r.b1 && a_[r.a1 - 1] == b_[r.b1 - 1]) out_.emplace_back(--r.a1, --r.b1);
      if (r.a0 == r.a1 || r.b0 == r.b1) continue;
      const auto anchors = unique_anchors(r.a0, r.a1, r.b0, r.b1);
      if (anchors.empty()) {
        in_order(r.a0, r.a1, r.b0, r.b1);
        continue;
      }
      std::uint32_t pa = r.a0, pb = r.b0;
      for (const auto& [i, j] : anchors) {
        work.push_back({pa, i, pb, j});
        out_.emplace_back(i, j);
        pa = i + 1;
        pb = j + 1;
      }
      work.push_back({pa, r.a1, pb, r.b1});
    }
    std::sort(out_.begin(), out_.end());
    return std::move(out_);
  }

 private:
  /// Keys that occur once in each range, paired, their longest increasing run in b.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> unique_anchors(std::uint32_t a0, std::uint32_t a1,
                                                                      std::uint32_t b0, std::uint32_t b1) {
    struct Seen {
      std::uint32_t na = 0, nb = 0, ia = 0, ib = 0;
    };
    std::unordered_map<std::uint64_t, Seen> seen;
    for (auto i = a0; i < a1; ++i) {
      auto& s = seen[a_[i]];
      ++s.na;
      s.ia = i;
    }
    for (auto j = b0; j < b1; ++j) {
      const auto it = seen.find(b_[j]);
      if (it == seen.end()) continue;
      ++it->second.nb;
      it->second.ib = j;
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> cands;
    for (const auto& [k, s] : seen)
      if (s.na == 1 && s.nb == 1) cands.emplace_back(s.ia, s.ib);
    std::sort(cands.begin(), cands.end());
    // Longest increasing subsequence in b (patience sorting).
    std::vector<std::size_t> tails, prev(cands.size(), SIZE_MAX);
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const auto pos = std::lower_bound(tails.begin(), tails.end(), cands[i].second,
                                        [&](std::size_t t, std::uint32_t v) { return cands[t].second < v; }) -
                       tails.begin();
      if (pos > 0) prev[i] = tails[static_cast<std::size_t>(pos) - 1];
      if (static_cast<std::size_t>(pos) == tails.size()) {
        tails.push_back(i);
      } else {
        tails[static_cast<std::size_t>(pos)] = i;
      }
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> lis;
    for (std::size_t i = tails.empty() ? SIZE_MAX : tails.back(); i != SIZE_MAX; i = prev[i])
      lis.push_back(cands[i]);
    std::reverse(lis.begin(), lis.end());
    return lis;
  }

  /// No key is unique on both sides: each launch pairs with the next equal one after the last
  /// pair, looking a bounded way ahead.
  void in_order(std::uint32_t a0, std::uint32_t a1, std::uint32_t b0, std::uint32_t b1) {
    constexpr std::uint32_t kAhead = 64;
    std::uint32_t j = b0;
    for (auto i = a0; i < a1 && j < b1; ++i) {
      for (auto k = j; k < b1 && k < j + kAhead; ++k) {
        if (a_[i] != b_[k]) continue;
        out_.emplace_back(i, k);
        j = k + 1;
        break;
      }
    }
  }

  const std::vector<std::uint64_t>& a_;
  const std::vector<std::uint64_t>& b_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out_;
};

}  // namespace

std::vector<std::uint32_t> step_launches(const OpSlice& s) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < s.size(); ++i) {
    const OpRecord& r = s.at(i);
    if (ops::is_program_op(r) && !r.hash_noise && !r.has_children) out.push_back(i);
  }
  return out;
}

std::string_view paired_by_name(PairedBy p) noexcept {
  switch (p) {
    case PairedBy::None: return "none";
    case PairedBy::Name: return "name";
    case PairedBy::Family: return "family";
    case PairedBy::Signature: return "signature";
  }
  return "none";
}

LaunchAlignment align_launches(const OpSlice& base, const OpSlice& cand) {
  LaunchAlignment a;
  a.base = step_launches(base);
  a.cand = step_launches(cand);
  a.base_partner.assign(a.base.size(), -1);
  a.cand_partner.assign(a.cand.size(), -1);
  a.paired_by.assign(a.base.size(), PairedBy::None);
  const Keys kb = keys_of(base, a.base), kc = keys_of(cand, a.cand);
  auto pair = [&](std::uint32_t i, std::uint32_t j, PairedBy by) {
    a.base_partner[i] = static_cast<std::int32_t>(j);
    a.cand_partner[j] = static_cast<std::int32_t>(i);
    const bool same_name = base.log->op_name(base.at(a.base[i])) == cand.log->op_name(cand.at(a.cand[j]));
    a.paired_by[i] = by == PairedBy::Signature ? by : same_name ? PairedBy::Name : PairedBy::Family;
  };
  const auto pairs = Patience(kb.key, kc.key).run();
  for (const auto& [i, j] : pairs) pair(i, j, PairedBy::Name);
  // Between two pairs: launches of one signature, in order (a kernel replaced by another).
  std::uint32_t i = 0, j = 0;
  auto gap = [&](std::uint32_t i1, std::uint32_t j1) {
    std::uint32_t jj = j;
    for (auto ii = i; ii < i1; ++ii) {
      for (auto k = jj; k < j1; ++k) {
        if (kb.sig[ii] != kc.sig[k] || a.cand_partner[k] >= 0) continue;
        pair(ii, k, PairedBy::Signature);
        jj = k + 1;
        break;
      }
    }
  };
  for (const auto& [pi, pj] : pairs) {
    gap(pi, pj);
    i = pi + 1;
    j = pj + 1;
  }
  gap(static_cast<std::uint32_t>(a.base.size()), static_cast<std::uint32_t>(a.cand.size()));
  a.unpaired_base = static_cast<std::size_t>(std::count(a.base_partner.begin(), a.base_partner.end(), -1));
  a.unpaired_cand = static_cast<std::size_t>(std::count(a.cand_partner.begin(), a.cand_partner.end(), -1));
  return a;
}

}  // namespace gparity::diff::kernels
