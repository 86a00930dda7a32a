#include "diff/ops/op_align.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "diff/ops/op_compare.hpp"  // is_collective

namespace gparity::diff::ops {

using model::ops::HashValue;

namespace {

std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h | 1;  // never 0: 0 means "no dtype"
}

/// An independent second fingerprint (other constants, other order).
std::uint64_t fingerprint2(const ValueKey& k) noexcept {
  return mix64(k.h1 ^ mix64(k.h0 + 0xd6e8feb86659fd93ull) ^ mix64(k.dtype + 0xa0761d6478bd642full) ^
               mix64(static_cast<std::uint64_t>(k.numel) + 0xe7037ed1a0b428dbull));
}

std::uint64_t fingerprint(const ValueKey& k) noexcept {
  return mix64(k.h0 ^ mix64(k.h1 + 0x9e3779b97f4a7c15ull) ^
               mix64(static_cast<std::uint64_t>(k.numel) + 0x632be59bd9b4e019ull) ^
               mix64(k.dtype + 0x85ebca77c2b2ae63ull));
}

/// The shape of a record's first output, or "" (for name pairing between anchors).
std::string_view first_shape(const OpLog& log, const OpRecord& r) {
  return r.out_count > 0 ? log.str(log.out(r, 0).shape) : std::string_view();
}

bool has_output_shape(const OpLog& log, const OpRecord& r, std::string_view shape) {
  for (std::uint32_t i = 0; i < r.out_count; ++i) {
    if (log.str(log.out(r, i).shape) == shape) return true;
  }
  return false;
}

constexpr std::uint32_t kOutBit = 0x80000000u;

}  // namespace

// ---- hash choice ----------------------------------------------------------------------------------

std::string HashChoice::text() const {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "+") + n;
  return out.empty() ? "none" : out;
}

bool HashChoice::identity() const noexcept {
  return std::any_of(names.begin(), names.end(), [](const std::string& n) { return n != "norm"; });
}

HashChoice choose_hashes(const OpLog& eager, const OpLog& compiled) {
  HashChoice c;
  const auto& a = eager.hash_spec;
  const auto& b = compiled.hash_spec;
  // gparity's own hashes (op records) first: identities; then DebugMode's.
  for (const char* fn : {"xxh3", "shard", "shard_v2", "hash_tensor", "norm"}) {
    if (c.names.size() == 2) break;
    const int pa = a.index_of(fn), pb = b.index_of(fn);
    if (pa >= 0 && pb >= 0) {
      c.names.emplace_back(fn);
      c.eager_pos.push_back(pa);
      c.compiled_pos.push_back(pb);
    }
  }
  // Custom functions only when both sides wrote the very same list: then position i is one function.
  if (c.names.empty() && !a.empty() && a == b) {
    for (std::size_t i = 0; i < a.functions.size() && c.names.size() < 2; ++i) {
      c.names.push_back(a.functions[i]);
      c.eager_pos.push_back(static_cast<int>(i));
      c.compiled_pos.push_back(static_cast<int>(i));
    }
  }
  if (!c.names.empty()) {
    if (c.names.front() == "hash_tensor") c.weak_rule = HashChoice::WeakRule::ZeroHash;
    if (c.names.front() == "norm") c.weak_rule = HashChoice::WeakRule::ZeroNorm;
  }
  const auto has_meta = [](const OpLog& l) {
    return l.format.rfind("debug_string", 0) == 0 || l.format == "gparity op records";
  };
  c.use_meta = has_meta(eager) && has_meta(compiled);
  return c;
}

std::string_view value_status_name(ValueStatus s) noexcept {
  switch (s) {
    case ValueStatus::Matched: return "matched";
    case ValueStatus::WeakMatched: return "weakly matched";
    case ValueStatus::Divergent: return "divergent";
    case ValueStatus::Unobserved: return "unobserved";
    case ValueStatus::Unhashed: return "unhashed";
    case ValueStatus::NotRecorded: return "not recorded";
  }
  return "unhashed";
}

std::string_view paired_by_name(PairedBy p) noexcept {
  switch (p) {
    case PairedBy::None: return "none";
    case PairedBy::Value: return "value";
    case PairedBy::Name: return "name";
    case PairedBy::Decomposition: return "decomposition";
    case PairedBy::Fusion: return "fusion";
  }
  return "none";
}

std::string_view op_base_name(std::string_view op) noexcept {
  if (const auto ns = op.rfind("::"); ns != std::string_view::npos) op.remove_prefix(ns + 2);
  if (const auto dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.remove_suffix(1);
  return op;
}

std::uint32_t program_ops(const OpSlice& s, std::uint32_t from) {
  std::uint32_t n = 0;
  for (auto i = from; i < s.size(); ++i) n += is_program_op(s.at(i)) && !s.at(i).hash_noise;
  return n;
}

std::vector<OpSlice> slices_of(const OpLog& log) {
  std::vector<OpSlice> out;
  for (std::uint32_t i = 0; i < log.records.size(); ++i) {
    const std::int64_t s = log.records[i].step;
    if (out.empty() || out.back().step != s) out.push_back({&log, i, i, s});
    out.back().end = i + 1;
  }
  return out;
}

// ---- values ---------------------------------------------------------------------------------------

ValueKey value_key(const OpLog& log, const TensorRef& t, const HashChoice& choice, bool compiled,
                   std::vector<std::uint64_t>& dtype_cache) {
  ValueKey k;
  if (!t.hashed() || choice.names.empty()) return k;
  const auto& pos = compiled ? choice.compiled_pos : choice.eager_pos;
  std::uint64_t h[2] = {0, 0};
  for (std::size_t i = 0; i < pos.size() && i < 2; ++i) {
    if (pos[i] >= t.hash_count) return k;
    const HashValue& v = log.hash(t, static_cast<std::uint32_t>(pos[i]));
    h[i] = v.kind == HashValue::Kind::Text ? fnv1a(log.str(static_cast<std::uint32_t>(v.bits))) : v.bits;
  }
  k.h0 = h[0];
  k.h1 = h[1];
  k.valid = true;
  if (choice.weak_rule == HashChoice::WeakRule::ZeroHash) {
    k.weak = k.h0 == 0;
  } else if (choice.weak_rule == HashChoice::WeakRule::ZeroNorm) {
    k.weak = k.h0 == 0 || k.h0 == std::bit_cast<std::uint64_t>(-0.0);
  }
  if (choice.use_meta) {
    k.numel = t.numel;
    if (t.dtype >= dtype_cache.size()) dtype_cache.resize(log.strings.size(), 0);
    std::uint64_t& code = dtype_cache[t.dtype];
    if (code == 0) code = fnv1a(log.str(t.dtype));
    k.dtype = code;
  }
  return k;
}

ValueIndex::ValueIndex(const OpSlice& slice, const HashChoice& choice, bool compiled_side)
    : slice_(slice), choice_(choice), compiled_(compiled_side) {
  const OpLog& log = *slice.log;
  struct Pending {
    std::uint32_t slot, tensor, record;
  };
  std::vector<Pending> pending;
  std::size_t tensors = 0;
  for (std::uint32_t r = 0; r < slice.size(); ++r) tensors += slice.at(r).arg_count + slice.at(r).out_count;
  pending.reserve(tensors);
  std::size_t size = 16;
  while (size < tensors + tensors / 3) size <<= 1;  // at most one run per tensor: load <= 3/4
  runs_.assign(size, Run{});
  run_mask_ = size - 1;
  // Grouping by hashing, not sorting: one pass counts each fingerprint's entries, a second
  // places them, in record order.
  for (std::uint32_t r = 0; r < slice.size(); ++r) {
    const OpRecord& rec = slice.at(r);
    if (rec.hash_noise) continue;
    auto add = [&](std::uint32_t first, std::uint32_t count, bool out) {
      for (std::uint32_t i = 0; i < count; ++i) {
        const ValueKey k = value_key(log, log.tensors[first + i], choice_, compiled_, dtype_code_);
        if (!k.valid) continue;
        const std::uint64_t fp = fingerprint(k), fp2 = fingerprint2(k);
        std::size_t b = fp & run_mask_;
        while (runs_[b].count != 0 && runs_[b].fp != fp) b = (b + 1) & run_mask_;
        Run& run = runs_[b];
        if (run.count == 0) {
          run.fp = fp;
          run.fp2 = fp2;
        } else if (run.fp2 != fp2) {
          run.count |= kMixed;
        }
        ++run.count;
        pending.push_back({static_cast<std::uint32_t>(b), first + i, r | (out ? kOutBit : 0u)});
      }
    };
    if (rec.has_input_hashes) add(rec.first_arg, rec.arg_count, false);
    if (!rec.output_hash_unreliable) add(rec.first_out, rec.out_count, true);
  }
  std::uint32_t offset = 0;
  std::vector<std::uint32_t> fill(runs_.size(), 0);
  for (std::size_t b = 0; b < runs_.size(); ++b) {
    runs_[b].first = offset;
    fill[b] = offset;
    offset += runs_[b].count & ~kMixed;
  }
  entries_.resize(pending.size());
  for (const auto& p : pending) entries_[fill[p.slot]++] = {p.tensor, p.record};
}

ValueKey ValueIndex::key(const TensorRef& t) const {
  return value_key(*slice_.log, t, choice_, compiled_, dtype_code_);
}

const ValueIndex::Run* ValueIndex::find(std::uint64_t fp) const {
  for (std::size_t i = fp & run_mask_;; i = (i + 1) & run_mask_) {
    const Run& r = runs_[i];
    if (r.count == 0) return nullptr;
    if (r.fp == fp) return &r;
  }
}

bool ValueIndex::holds(const Run& r, const Entry& e, const ValueKey& k, std::uint64_t fp2) const {
  if ((r.count & kMixed) == 0) return r.fp2 == fp2;
  return key(slice_.log->tensors[e.tensor]) == k;
}

std::uint32_t ValueIndex::slot(const ValueKey& k) const {
  const Run* r = find(fingerprint(k));
  return r == nullptr ? kNoSlot : static_cast<std::uint32_t>(r - runs_.data());
}

bool ValueIndex::contains(const ValueKey& k) const {
  return contains(slot(k), k);
}

bool ValueIndex::contains(std::uint32_t s, const ValueKey& k) const {
  if (s == kNoSlot) return false;
  const Run* r = &runs_[s];
  const std::uint64_t fp2 = fingerprint2(k);
  if ((r->count & kMixed) == 0) return r->fp2 == fp2;
  for (std::uint32_t i = 0; i < (r->count & ~kMixed); ++i) {
    if (holds(*r, entries_[r->first + i], k, fp2)) return true;
  }
  return false;
}

void ValueIndex::outputs_near(const ValueKey& k, std::int64_t cursor, std::size_t each_side,
                              std::vector<std::uint32_t>& out) const {
  outputs_near(slot(k), k, cursor, each_side, out);
}

void ValueIndex::outputs_near(std::uint32_t s, const ValueKey& k, std::int64_t cursor, std::size_t each_side,
                              std::vector<std::uint32_t>& out) const {
  out.clear();
  if (s == kNoSlot) return;
  const Run* r = &runs_[s];
  const std::uint64_t fp2 = fingerprint2(k);
  if ((r->count & kMixed) == 0 && r->fp2 != fp2) return;
  const auto first = entries_.begin() + r->first;
  const auto last = first + (r->count & ~kMixed);
  // Within a run, entries are by record: start at the first after the cursor.
  const auto mid = std::upper_bound(first, last, cursor, [](std::int64_t c, const Entry& e) {
    return c < static_cast<std::int64_t>(e.record & ~kOutBit);
  });
  auto take = [&](const Entry& e) {
    if ((e.record & kOutBit) == 0) return false;
    const std::uint32_t rec = e.record & ~kOutBit;
    if (std::find(out.begin(), out.end(), rec) != out.end()) return false;
    if (!holds(*r, e, k, fp2)) return false;
    out.push_back(rec);
    return true;
  };
  std::size_t n = 0;
  for (auto it = mid; it != first && n < each_side;) n += take(*--it) ? 1 : 0;
  n = 0;
  for (auto it = mid; it != last && n < each_side; ++it) n += take(*it) ? 1 : 0;
  std::sort(out.begin(), out.end());
}

// ---- alignment ------------------------------------------------------------------------------------

namespace {

class Aligner {
 public:
  Aligner(const OpSlice& eager, const OpSlice& compiled, const HashChoice& choice)
      : e_(eager),
        c_(compiled),
        choice_(choice),
        cidx_(compiled, choice, true),
        post_hook_inputs_(eager.log->format.find("(hash first)") != std::string::npos) {}

  SliceAlignment run() {
    a_.eager.resize(e_.size());
    a_.compiled_partner.assign(c_.size(), -1);
    statuses();
    dataflow();
    seen_by_readers();
    unobserved();
    anchor();
    hunks();
    never_written();
    for (std::uint32_t c = 0; c < c_.size(); ++c) {
      if (c_.at(c).hash_noise) {
        ++a_.compiled_noise;
      } else if (a_.compiled_partner[c] < 0 && is_program_op(c_.at(c))) {
        ++a_.compiled_only;
      }
    }
    return std::move(a_);
  }

 private:
  const OpLog& el() const { return *e_.log; }
  const OpLog& cl() const { return *c_.log; }
  ValueKey ekey(const TensorRef& t) { return value_key(el(), t, choice_, false, edtype_); }

  void statuses() {
    if (e_.size() > 0) {
      first_tensor_ = std::min(e_.at(0).first_arg, e_.at(0).first_out);
      const OpRecord& last = e_.at(e_.size() - 1);
      out_found_.assign(
          std::max(last.first_arg + last.arg_count, last.first_out + last.out_count) - first_tensor_, 0);
      out_slot_.assign(out_found_.size(), ValueIndex::kNoSlot);
    }
    for (std::uint32_t e = 0; e < e_.size(); ++e) {
      const OpRecord& r = e_.at(e);
      EagerOp& op = a_.eager[e];
      if (r.output_hash_unreliable) continue;  // Unhashed: the wait_tensor carries the value
      if (r.hash_noise) continue;              // DebugMode's own hashing: never compared
      std::uint32_t strong_found = 0, weak_found = 0, missing = 0, weak = 0;
      for (std::uint32_t i = 0; i < r.out_count; ++i) {
        const ValueKey k = ekey(el().out(r, i));
        if (!k.valid) continue;
        ++a_.values_compared;
        const std::uint32_t slot = cidx_.slot(k);
        const bool found = cidx_.contains(slot, k);
        out_slot_[r.first_out + i - first_tensor_] = slot;
        if (!k.weak) out_found_[r.first_out + i - first_tensor_] = found ? 1 : 2;
        if (k.weak) {
          ++weak;
          ++a_.values_weak;
          found ? ++weak_found : ++missing;
        } else if (found) {
          ++strong_found;
          ++a_.values_matched;
        } else {
          ++missing;
        }
      }
      op.outputs_missing = missing;
      op.outputs_weak = weak;
      if (missing > 0) {
        op.status = ValueStatus::Divergent;
      } else if (strong_found > 0) {
        op.status = ValueStatus::Matched;
      } else if (weak_found > 0) {
        op.status = ValueStatus::WeakMatched;
      }
    }
  }

  /// Producer of every argument (the last record of the step that output its tensor id) and the
  /// consumers of every record.
  void dataflow() {
    std::unordered_map<std::int64_t, std::uint32_t> producer;
    producer.reserve(e_.size() * 2);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // (producer, consumer)
    a_.arg_first.resize(e_.size() + 1);
    for (std::uint32_t e = 0; e < e_.size(); ++e) {
      const OpRecord& r = e_.at(e);
      a_.arg_first[e] = static_cast<std::uint32_t>(a_.arg_producer.size());
      const std::size_t edges_before = edges.size();
      for (std::uint32_t i = 0; i < r.arg_count; ++i) {
        if (el().str(el().arg(r, i).name) == "out") {
          // An `out=` buffer: what it held before is no input of the op (Inductor hands extern
          // kernels reused buffers); the op's output is what it wrote.
          a_.arg_producer.push_back(-1);
          a_.arg_value.push_back(0);
          continue;
        }
        const std::int64_t id = el().arg(r, i).id;
        std::int32_t p = -1;
        if (id >= 0) {
          if (const auto it = producer.find(id); it != producer.end())
            p = static_cast<std::int32_t>(it->second);
        }
        a_.arg_producer.push_back(p);
        a_.arg_value.push_back(arg_value(r, i, p));
        if (p < 0 || static_cast<std::uint32_t>(p) == e) continue;
        bool dup = false;
        for (std::size_t k = edges_before; k < edges.size() && !dup; ++k)
          dup = edges[k].first == static_cast<std::uint32_t>(p);
        if (!dup) edges.emplace_back(static_cast<std::uint32_t>(p), e);
      }
      for (std::uint32_t i = 0; i < r.out_count; ++i) {
        const std::int64_t id = el().out(r, i).id;
        if (id >= 0) producer[id] = e;
      }
    }
    a_.arg_first[e_.size()] = static_cast<std::uint32_t>(a_.arg_producer.size());
    a_.consumer_first.assign(e_.size() + 1, 0);
    for (const auto& [p, c] : edges) ++a_.consumer_first[p + 1];
    for (std::size_t i = 1; i < a_.consumer_first.size(); ++i)
      a_.consumer_first[i] += a_.consumer_first[i - 1];
    a_.consumers.resize(edges.size());
    std::vector<std::uint32_t> fill(a_.consumer_first.begin(), a_.consumer_first.end() - 1);
    for (const auto& [p, c] : edges) a_.consumers[fill[p]++] = c;
  }

  /// Whether an argument's own hash shows its value in the compiled run: 0 no usable hash, 1
  /// found, 2 missing. Not used where the hash is not the value the op read: a functional
  /// collective's wait reads a value hashed before the wait, and 2.10 hashed the inputs of
  /// in-place ops after the op had written them.
  std::uint8_t arg_value(const OpRecord& r, std::uint32_t i, std::int32_t producer) {
    if (!r.has_input_hashes) return 0;
    // Most arguments are an earlier op's output, hashed alike: reuse that lookup.
    const TensorRef& t = el().arg(r, i);
    if (producer >= 0 && t.hashed()) {
      const OpRecord& p = e_.at(static_cast<std::uint32_t>(producer));
      for (std::uint32_t k = 0; k < p.out_count; ++k) {
        const TensorRef& o = el().out(p, k);
        const std::uint8_t seen = out_found_[p.first_out + k - first_tensor_];
        if (o.id == t.id && seen != 0 && same_hashes(o, t)) return reusable(r) ? seen : 0;
      }
    }
    if (!reusable(r)) return 0;
    const ValueKey k = ekey(t);
    if (!k.valid || k.weak) return 0;
    return cidx_.contains(k) ? 1 : 2;
  }

  /// Whether the record's input hashes are the values it read (see arg_value).
  bool reusable(const OpRecord& r) const {
    const std::string_view op = el().op_name(r);
    if (op.find("wait_tensor") != std::string_view::npos) return false;
    if (post_hook_inputs_) {
      const std::string_view name = op.substr(0, op.find('.'));
      if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') return false;
    }
    return true;
  }

  bool same_hashes(const TensorRef& a, const TensorRef& b) const {
    if (a.hash_count != b.hash_count || a.numel != b.numel || a.dtype != b.dtype) return false;
    for (std::uint32_t i = 0; i < a.hash_count; ++i) {
      if (!(el().hash(a, i) == el().hash(b, i))) return false;
    }
    return true;
  }

  /// A collective hashed before it completed shows its value to the next op that reads it
  /// (`c10d::allreduce_` then `div_`: the div_'s input hash is the reduced gradient). Its
  /// status is that reader's input: found or missing in the compiled run.
  void seen_by_readers() {
    for (std::uint32_t e = 0; e < e_.size(); ++e) {
      if (!e_.at(e).output_hash_unreliable) continue;
      for (const std::uint32_t c : a_.consumers_of(e)) {
        std::uint8_t seen = 0;
        const OpRecord& r = e_.at(c);
        for (std::uint32_t j = 0; j < r.arg_count && seen == 0; ++j) {
          const std::uint32_t at = a_.arg_first[c] + j;
          if (a_.arg_producer[at] == static_cast<std::int32_t>(e)) seen = a_.arg_value[at];
        }
        if (seen == 0) continue;
        a_.eager[e].status = seen == 1 ? ValueStatus::Matched : ValueStatus::Divergent;
        break;
      }
    }
  }

  /// A missing value whose every consumer agrees was never materialized by the compiled run.
  void unobserved() {
    for (std::uint32_t e = e_.size(); e-- > 0;) {
      EagerOp& op = a_.eager[e];
      if (op.status != ValueStatus::Divergent) continue;
      const auto cons = a_.consumers_of(e);
      if (cons.empty()) continue;
      const bool agree = std::all_of(cons.begin(), cons.end(), [&](std::uint32_t c) {
        const auto s = a_.eager[c].status;
        return s == ValueStatus::Matched || s == ValueStatus::Unobserved;
      });
      if (agree) op.status = ValueStatus::Unobserved;
    }
  }

  /// The candidate compiled record for a value: nearest after the previous anchor, same op and
  /// shape preferred.
  std::uint32_t pick(const std::vector<std::uint32_t>& cands, std::int64_t cursor, std::string_view base,
                     std::string_view shape, std::uint32_t self) const {
    const auto first_after = static_cast<std::size_t>(
        std::upper_bound(cands.begin(), cands.end(), cursor,
                         [](std::int64_t v, std::uint32_t c) { return v < static_cast<std::int64_t>(c); }) -
        cands.begin());
    const std::size_t lo = first_after > 8 ? first_after - 8 : 0;
    const std::size_t hi = std::min(cands.size(), first_after + 8);
    std::uint32_t best = cands[std::min(first_after, cands.size() - 1)];
    int best_score = -1;
    std::int64_t best_dist = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = lo; i < hi; ++i) {
      const std::uint32_t c = cands[i];
      const OpRecord& r = c_.at(c);
      int score = 0;
      if (op_base_name(cl().op_name(r)) == base) score += 8;
      if (has_output_shape(cl(), r, shape)) score += 4;
      if (a_.compiled_partner[c] < 0 || a_.compiled_partner[c] == static_cast<std::int32_t>(self)) score += 2;
      if (static_cast<std::int64_t>(c) > cursor) score += 1;
      const std::int64_t dist = std::abs(static_cast<std::int64_t>(c) - cursor);
      if (score > best_score || (score == best_score && dist < best_dist)) {
        best = c;
        best_score = score;
        best_dist = dist;
      }
    }
    return best;
  }

  void anchor() {
    lo_.assign(e_.size(), std::numeric_limits<std::uint32_t>::max());
    hi_.assign(e_.size(), 0);
    std::int64_t cursor = -1;
    std::vector<std::uint32_t> cands;
    for (std::uint32_t e = 0; e < e_.size(); ++e) {
      EagerOp& op = a_.eager[e];
      const OpRecord& r = e_.at(e);
      if (!is_program_op(r)) continue;  // its dispatched ops pair, it does not
      if (r.view) {
        anchor_view(e, cursor);
        continue;
      }
      // A collective's own output hash is not its value (it was seen by a reader): paired by name.
      if ((op.status != ValueStatus::Matched && op.status != ValueStatus::WeakMatched) ||
          r.output_hash_unreliable)
        continue;
      const std::string_view base = op_base_name(el().op_name(r));
      op.first_counterpart = static_cast<std::uint32_t>(a_.counterparts.size());
      std::int64_t next_cursor = cursor;
      bool strong = false;
      for (std::uint32_t i = 0; i < r.out_count; ++i) {
        const TensorRef& t = el().out(r, i);
        const ValueKey k = ekey(t);
        if (!k.valid) continue;
        cidx_.outputs_near(out_slot_[r.first_out + i - first_tensor_], k, cursor, 8, cands);
        std::erase_if(cands, [&](std::uint32_t c) { return !is_program_op(c_.at(c)); });
        if (cands.empty()) continue;  // a value seen only as a compiled input
        const std::uint32_t c = pick(cands, cursor, base, el().str(t.shape), e);
        const auto begin = a_.counterparts.begin() + op.first_counterpart;
        if (std::find(begin, a_.counterparts.end(), c) == a_.counterparts.end()) a_.counterparts.push_back(c);
        if (a_.compiled_partner[c] < 0) a_.compiled_partner[c] = static_cast<std::int32_t>(e);
        if (!k.weak) {
          if (!strong) next_cursor = c;
          strong = true;
          lo_[e] = std::min(lo_[e], c);
          hi_[e] = std::max(hi_[e], c);
        }
      }
      op.counterpart_count = static_cast<std::uint32_t>(a_.counterparts.size()) - op.first_counterpart;
      if (op.counterpart_count > 0) op.paired_by = PairedBy::Value;
      if (strong) {
        anchored_.push_back(e);
        cursor = next_cursor;
      }
    }
  }

  /// A view op (op records) has no value of its own, but where it reads a hashed value (aten::t
  /// of a weight) the compiled run's same view op of that value, just after the cursor, is its
  /// counterpart and an anchor, as its hashed output was before views went unhashed (issue 24).
  void anchor_view(std::uint32_t e, std::int64_t& cursor) {
    const OpRecord& r = e_.at(e);
    if (r.arg_count == 0 || !r.has_input_hashes) return;
    const ValueKey k = ekey(el().arg(r, 0));
    if (!k.valid || k.weak) return;
    const std::string_view base = op_base_name(el().op_name(r));
    const std::int64_t end = std::min<std::int64_t>(c_.size(), cursor + 1 + 64);
    for (std::int64_t c = cursor + 1; c < end; ++c) {
      const auto at = static_cast<std::uint32_t>(c);
      const OpRecord& cr = c_.at(at);
      if (!cr.view || cr.arg_count == 0 || op_base_name(cl().op_name(cr)) != base) continue;
      if (!(cidx_.key(cl().arg(cr, 0)) == k)) continue;
      EagerOp& op = a_.eager[e];
      op.first_counterpart = static_cast<std::uint32_t>(a_.counterparts.size());
      a_.counterparts.push_back(at);
      op.counterpart_count = 1;
      op.paired_by = PairedBy::Value;
      if (a_.compiled_partner[at] < 0) a_.compiled_partner[at] = static_cast<std::int32_t>(e);
      lo_[e] = hi_[e] = at;
      anchored_.push_back(e);
      cursor = c;
      return;
    }
  }

  /// Step 4 (op_align.hpp): an eager op the compiled run never wrote. An op nothing in the step
  /// reads keeps its divergence (a step output, a gradient), so a divergence only ever moves to
  /// what reads it, never disappears.
  void never_written() {
    bool kernels = false;
    for (std::uint32_t c = 0; c < c_.size() && !kernels; ++c)
      kernels = c_.at(c).kind == model::ops::RecordKind::Triton;
    if (!kernels) return;
    for (std::uint32_t e = e_.size(); e-- > 0;) {
      EagerOp& op = a_.eager[e];
      if (op.status != ValueStatus::Divergent || a_.consumers_of(e).empty() || materialized(e)) continue;
      op.status = ValueStatus::Unobserved;
      op.never_written = true;
      // Its readers' own hash of it is missing from the compiled run for the same reason: no
      // evidence that it differs.
      for (const auto c : a_.consumers_of(e))
        for (std::uint32_t j = 0; j < e_.at(c).arg_count; ++j)
          if (const auto at = a_.arg_first[c] + j;
              a_.arg_producer[at] == static_cast<std::int32_t>(e) && a_.arg_value[at] == 2)
            a_.arg_value[at] = 0;
    }
  }

  /// Whether a counterpart of eager op `e` writes a tensor of one of its outputs' dtype and size,
  /// for someone else: an op, or a kernel launch that not every reader of `e` shares (a launch
  /// that computes every reader too keeps the value inside itself).
  [[nodiscard]] bool materialized(std::uint32_t e) const {
    for (const auto c : a_.counterparts_of(e)) {
      if (c_.at(c).kind == model::ops::RecordKind::Triton && fused_readers(e, c)) continue;
      if (writes_kind_of(e, c_.at(c))) return true;
    }
    return false;
  }

  /// Whether compiled record `cr` writes a tensor of one of eager op `e`'s outputs' dtype and size.
  [[nodiscard]] bool writes_kind_of(std::uint32_t e, const OpRecord& cr) const {
    const OpRecord& r = e_.at(e);
    for (std::uint32_t i = 0; i < r.out_count; ++i) {
      const TensorRef& t = el().out(r, i);
      if (!t.hashed()) continue;
      for (std::uint32_t k = 0; k < cr.out_count; ++k) {
        const TensorRef& o = cl().out(cr, k);
        if (o.numel == t.numel && cl().str(o.dtype) == el().str(t.dtype)) return true;
      }
    }
    return false;
  }

  /// Whether every reader of `e` with a counterpart has launch `c` among them.
  [[nodiscard]] bool fused_readers(std::uint32_t e, std::uint32_t c) const {
    bool any = false;
    for (const auto x : a_.consumers_of(e)) {
      const auto cps = a_.counterparts_of(x);
      if (cps.empty()) continue;
      if (std::find(cps.begin(), cps.end(), c) == cps.end()) return false;
      any = true;
    }
    return any;
  }

  [[nodiscard]] bool is_anchor(std::uint32_t e) const {
    return lo_[e] != std::numeric_limits<std::uint32_t>::max();
  }

  void hunks() {
    std::int64_t prev = -1;  // the previous anchor's last compiled position
    std::uint32_t i = 0;
    while (i < e_.size()) {
      if (is_anchor(i)) {
        prev = hi_[i];
        ++i;
        continue;
      }
      std::uint32_t j = i;
      while (j < e_.size() && !is_anchor(j)) ++j;
      const std::int64_t next =
          j < e_.size() ? static_cast<std::int64_t>(lo_[j]) : static_cast<std::int64_t>(c_.size());
      hunk(i, j, prev, next);
      i = j;
    }
  }

  void hunk(std::uint32_t i, std::uint32_t j, std::int64_t prev, std::int64_t next) {
    std::vector<std::uint32_t> targets;
    // Every op without a counterpart yet: divergent and unhashed ones, and those whose value was
    // seen only by a reader (a collective) or only as a compiled input.
    // A view op (op records) made no value: not a target.
    for (std::uint32_t e = i; e < j; ++e) {
      if (a_.eager[e].counterpart_count == 0 && !e_.at(e).view && is_program_op(e_.at(e)))
        targets.push_back(e);
    }
    if (targets.empty() || prev + 1 >= next) return;  // nothing to pair, or the anchors cross (a reordering)
    const std::int64_t limit = prev + 1 + 4 * static_cast<std::int64_t>(j - i) + 256;
    std::vector<std::uint32_t> window;
    for (std::int64_t c = prev + 1; c < std::min(next, limit); ++c) {
      const auto at = static_cast<std::uint32_t>(c);
      const OpRecord& cr = c_.at(at);
      if (a_.compiled_partner[at] < 0 && !cr.hash_noise && !cr.view && is_program_op(cr))
        window.push_back(at);
    }
    if (window.empty()) return;
    std::vector<std::vector<std::uint32_t>> got(targets.size());
    std::vector<PairedBy> how(targets.size(), PairedBy::None);
    std::vector<bool> used(window.size(), false);
    std::unordered_map<std::int64_t, std::size_t> owner;  // compiled tensor id -> target
    auto take = [&](std::size_t t, std::size_t w, PairedBy by) {
      used[w] = true;
      got[t].push_back(window[w]);
      if (how[t] == PairedBy::None) how[t] = by;
      a_.compiled_partner[window[w]] = static_cast<std::int32_t>(targets[t]);
      const OpRecord& r = c_.at(window[w]);
      for (std::uint32_t k = 0; k < r.out_count; ++k) {
        if (const auto id = cl().out(r, k).id; id >= 0) owner[id] = t;
      }
    };
    // Same op (and output shape) first, in order, then the same op whatever its shape.
    for (const bool need_shape : {true, false}) {
      for (std::size_t t = 0; t < targets.size(); ++t) {
        if (!got[t].empty()) continue;
        const OpRecord& er = e_.at(targets[t]);
        const std::string_view base = op_base_name(el().op_name(er));
        const std::string_view shape = first_shape(el(), er);
        for (std::size_t w = 0; w < window.size(); ++w) {
          if (used[w]) continue;
          const OpRecord& cr = c_.at(window[w]);
          if (op_base_name(cl().op_name(cr)) != base) continue;
          if (need_shape && first_shape(cl(), cr) != shape) continue;
          take(t, w, PairedBy::Name);
          break;
        }
      }
    }
    // A fused kernel computes several eager ops: the previous anchor's kernel may hold a
    // target's value too (the one it is anchored by came out of the same launch).
    if (prev >= 0 && c_.at(static_cast<std::uint32_t>(prev)).kind == model::ops::RecordKind::Triton) {
      const auto k = static_cast<std::uint32_t>(prev);
      for (std::size_t t = 0; t < targets.size(); ++t) {
        const std::string_view shape = first_shape(el(), e_.at(targets[t]));
        if (!got[t].empty() || shape.empty() || !has_output_shape(cl(), c_.at(k), shape)) continue;
        got[t].push_back(k);
        how[t] = PairedBy::Fusion;
      }
    }
    // The rest: the compiled ops that read what a target's counterparts wrote, or its inputs.
    for (std::size_t w = 0; w < window.size(); ++w) {
      if (used[w]) continue;
      const OpRecord& cr = c_.at(window[w]);
      std::int64_t t = -1;
      for (std::uint32_t k = 0; k < cr.arg_count && t < 0; ++k) {
        if (const auto it = owner.find(cl().arg(cr, k).id); it != owner.end())
          t = static_cast<std::int64_t>(it->second);
      }
      if (t < 0 && cr.has_input_hashes) t = reads_inputs_of(cr, targets);
      if (t < 0 && targets.size() == 1) t = 0;
      if (t >= 0) take(static_cast<std::size_t>(t), w, PairedBy::Decomposition);
    }
    fused_consumers(targets, got, how);
    for (std::size_t t = 0; t < targets.size(); ++t) {
      EagerOp& op = a_.eager[targets[t]];
      op.first_counterpart = static_cast<std::uint32_t>(a_.counterparts.size());
      a_.counterparts.insert(a_.counterparts.end(), got[t].begin(), got[t].end());
      op.counterpart_count = static_cast<std::uint32_t>(got[t].size());
      op.paired_by = how[t];
    }
  }

  /// A kernel launch computes what reads its ops' values too (Inductor fuses a chain into one
  /// launch): a target left without counterpart that reads what another target of the stretch
  /// made, in the same phase, shares that target's kernel launches that write a tensor of its
  /// kind. Collectives are never fused.
  void fused_consumers(const std::vector<std::uint32_t>& targets,
                       std::vector<std::vector<std::uint32_t>>& got, std::vector<PairedBy>& how) const {
    for (std::size_t t = 0; t < targets.size(); ++t) {
      const OpRecord& r = e_.at(targets[t]);
      if (!got[t].empty() || is_collective(el().op_name(r))) continue;
      for (std::uint32_t j = 0; j < r.arg_count && got[t].empty(); ++j) {
        const std::int32_t p = a_.arg_producer[a_.arg_first[targets[t]] + j];
        const auto end = targets.begin() + static_cast<std::ptrdiff_t>(t);
        const auto it = std::find(targets.begin(), end, p);
        if (p < 0 || it == end) continue;
        const OpRecord& made = e_.at(static_cast<std::uint32_t>(p));
        if (made.phase != r.phase || is_collective(el().op_name(made))) continue;
        for (const auto c : got[static_cast<std::size_t>(it - targets.begin())])
          if (c_.at(c).kind == model::ops::RecordKind::Triton && writes_kind_of(targets[t], c_.at(c)))
            got[t].push_back(c);
        if (!got[t].empty()) how[t] = PairedBy::Fusion;
      }
    }
  }

  /// The first target one of whose input values the compiled record reads, or -1.
  std::int64_t reads_inputs_of(const OpRecord& cr, const std::vector<std::uint32_t>& targets) {
    for (std::uint32_t k = 0; k < cr.arg_count; ++k) {
      const ValueKey ck = cidx_.key(cl().arg(cr, k));
      if (!ck.valid || ck.weak) continue;
      for (std::size_t t = 0; t < targets.size(); ++t) {
        const OpRecord& er = e_.at(targets[t]);
        if (!er.has_input_hashes) continue;
        for (std::uint32_t a = 0; a < er.arg_count; ++a) {
          if (ekey(el().arg(er, a)) == ck) return static_cast<std::int64_t>(t);
        }
      }
    }
    return -1;
  }

  const OpSlice& e_;
  const OpSlice& c_;
  const HashChoice& choice_;
  ValueIndex cidx_;
  std::vector<std::uint64_t> edtype_;
  SliceAlignment a_;
  std::vector<std::uint32_t> lo_, hi_;  // strong counterparts' span per eager record
  std::vector<std::uint32_t> anchored_;
  bool post_hook_inputs_;
  std::uint32_t first_tensor_ = 0;
  std::vector<std::uint8_t> out_found_;  // per eager tensor of the slice: 1 found, 2 missing, 0 not looked up
  std::vector<std::uint32_t> out_slot_;  // ... and its compiled value slot
};

}  // namespace

SliceAlignment align_slices(const OpSlice& eager, const OpSlice& compiled, const HashChoice& choice) {
  return Aligner(eager, compiled, choice).run();
}

}  // namespace gparity::diff::ops
