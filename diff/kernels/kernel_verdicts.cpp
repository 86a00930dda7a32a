#include "diff/kernels/kernel_verdicts.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/model/ops/kernel_launch.hpp"
#include "diff/causality/causality.hpp"
#include "diff/ops/op_cut.hpp"

namespace gparity::diff::kernels {

using model::ops::OpLog;
using model::ops::OpRecord;
using model::ops::TensorRef;
using ops::ValueKey;

std::string_view kernel_cause_name(KernelCause c) noexcept {
  switch (c) {
    case KernelCause::DifferentCode: return "origin, different code";
    case KernelCause::DifferentConfig: return "origin, same code, different config";
    case KernelCause::NonDeterministic: return "non-deterministic";
    case KernelCause::Origin: return "origin";
    case KernelCause::NoCounterpart: return "no counterpart";
    case KernelCause::Propagated: return "propagated";
    case KernelCause::Received: return "received";
    case KernelCause::FollowsStep: return "follows step";
    case KernelCause::Input: return "input";
    case KernelCause::Unknown: return "unknown";
  }
  return "unknown";
}

bool starts_here(KernelCause c) noexcept {
  return c == KernelCause::DifferentCode || c == KernelCause::DifferentConfig ||
         c == KernelCause::NonDeterministic || c == KernelCause::Origin || c == KernelCause::NoCounterpart;
}

const KernelStepVerdict* KernelRankVerdict::first_divergent() const {
  for (const auto& s : steps)
    if (s.first) return &s;
  return nullptr;
}

bool rank_shows_kernels(const ops::RankLogs& rank) {
  for (const auto& l : rank.logs)
    for (const auto& rec : l.records)
      if (model::ops::is_kernel(rec)) return true;
  return false;
}

bool shows_kernels(const std::vector<ops::RankLogs>& side) {
  return std::any_of(side.begin(), side.end(), rank_shows_kernels);
}

bool both_compiled(const std::vector<ops::RankLogs>& base, const std::vector<ops::RankLogs>& cand) {
  return shows_kernels(base) && shows_kernels(cand);
}

namespace {

struct KeyHash {
  std::size_t operator()(const ValueKey& k) const noexcept {
    return static_cast<std::size_t>(k.h0 * 0x9e3779b97f4a7c15ull ^ k.h1 ^
                                    static_cast<std::uint64_t>(k.numel) ^ (k.dtype << 1));
  }
};

/// Whether a launch reads the argument (its value before the launch is an input): a kernel's
/// in_ptr / in_out_ptr (by its record's role, else its name; not an in_out_ptr its source, from
/// provenance, only stores to: DebugMode hashed whatever the buffer held); an op's arguments but
/// `out=` (a buffer it writes), and not the first argument of an in-place op in logs that hashed
/// inputs after the op ran (2.10).
bool reads_arg(const OpLog& log, const OpRecord& r, std::uint32_t i, const KernelSite& site) {
  const TensorRef& t = log.arg(r, i);
  if (model::ops::is_kernel(r)) {
    const auto role = model::ops::launch_arg_role(log, t);
    if (role == model::ops::ArgRole::InOut)
      if (const auto* src = site.source())
        for (const auto& name : src->stored_only)
          if (name == log.str(t.name)) return false;
    return model::ops::kernel_reads(role);
  }
  if (log.str(t.name) == "out") return false;
  if (i == 0 && log.format.find("(hash first)") != std::string::npos) {
    const std::string_view op = log.op_name(r);
    const std::string_view name = op.substr(0, op.find('.'));
    if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') return false;
  }
  return true;
}

/// The candidate's argument (or output) that corresponds to the baseline's `i`-th: a kernel's by
/// name, an op's by position.
std::int32_t counterpart_index(const OpLog& bl, const TensorRef& bt, std::uint32_t i, const OpLog& cl,
                               std::uint32_t first, std::uint32_t count) {
  if (i < count && cl.str(cl.tensors[first + i].name) == bl.str(bt.name)) return static_cast<std::int32_t>(i);
  if (bt.name == 0) return -1;
  for (std::uint32_t k = 0; k < count; ++k)
    if (cl.str(cl.tensors[first + k].name) == bl.str(bt.name)) return static_cast<std::int32_t>(k);
  return -1;
}

class StepJudge {
 public:
  StepJudge(KernelStepVerdict& sv, const ops::HashChoice& choice) : sv_(sv), choice_(choice) {}

  void compare_values() {
    const auto& a = sv_.align;
    resolve_inputs(sv_.base, a.base, bl(), sv_.base_inputs);
    resolve_inputs(sv_.cand, a.cand, cl(), sv_.cand_inputs);
    sv_.values.resize(a.base.size());
    for (std::uint32_t b = 0; b < a.base.size(); ++b) {
      if (model::ops::is_kernel(brec(b))) ++sv_.kernels;
      if (a.base_partner[b] < 0) continue;
      const auto c = static_cast<std::uint32_t>(a.base_partner[b]);
      LaunchValues& v = sv_.values[b];
      inputs(b, c, v);
      outputs(b, c, v);
      sv_.values_compared += v.values;
      if (v.outputs == ValueState::Differs) ++sv_.differing;
    }
  }

  /// The baseline launch that wrote each read argument in this step, by DebugMode id (ops) or by
  /// value (a kernel's arguments carry no id), or -1.
  void dataflow() {
    std::unordered_map<std::int64_t, std::int32_t> by_id;
    std::unordered_map<ValueKey, std::int32_t, KeyHash> by_value;
    const auto& a = sv_.align;
    producers_.resize(a.base.size());
    for (std::uint32_t b = 0; b < a.base.size(); ++b) {
      const OpRecord& r = brec(b);
      auto& p = producers_[b];
      p.assign(r.arg_count, -1);
      for (std::uint32_t i = 0; i < r.arg_count; ++i) {
        if (!reads_arg(bl(), r, i, sv_.base_sites[b])) continue;
        const TensorRef& t = bl().arg(r, i);
        if (t.id >= 0) {
          if (const auto it = by_id.find(t.id); it != by_id.end()) p[i] = it->second;
        }
        const ValueKey k = bkey(t);
        if (p[i] < 0 && k.valid && !k.weak)
          if (const auto it = by_value.find(k); it != by_value.end()) p[i] = it->second;
      }
      for (std::uint32_t j = 0; j < r.out_count; ++j) {
        const TensorRef& t = bl().out(r, j);
        if (t.id >= 0) by_id[t.id] = static_cast<std::int32_t>(b);
        const ValueKey k = bkey(t);
        if (!r.output_hash_unreliable && k.valid && !k.weak) by_value[k] = static_cast<std::int32_t>(b);
      }
    }
  }

  [[nodiscard]] const std::vector<std::vector<std::int32_t>>& producers() const { return producers_; }

  /// The step's first divergence, judged on this rank (a collective's stays provisional: the
  /// causal order over every rank decides it).
  std::optional<KernelDivergence> first(std::int64_t diverged_before, std::size_t max_listed) {
    const auto& a = sv_.align;
    // Past a side's cut (sv_.cut) the other side's launches after the last pair were not recorded
    // there: counted, never a divergence.
    const bool cand_cut = sv_.cut && sv_.cut->candidate, base_cut = sv_.cut && !sv_.cut->candidate;
    std::int32_t last_base = -1;
    for (std::uint32_t b = 0; b < a.base.size(); ++b)
      if (a.base_partner[b] >= 0) last_base = static_cast<std::int32_t>(b);
    std::int32_t last_cand = -1;
    std::optional<KernelDivergence> d;
    for (std::uint32_t b = 0; b < a.base.size() && !d; ++b) {
      const std::int32_t c = a.base_partner[b];
      if (c >= 0) {
        for (auto k = last_cand + 1; k < c && !d; ++k)
          if (a.cand_partner[static_cast<std::size_t>(k)] < 0) d = no_counterpart(-1, k);
        if (d) break;
        last_cand = c;
      } else if (cand_cut && static_cast<std::int32_t>(b) > last_base) {
        sv_.cut->not_compared = static_cast<std::uint32_t>(a.base.size() - b);
        break;
      } else {
        d = no_counterpart(static_cast<std::int32_t>(b), -1);
        break;
      }
      if (sv_.values[b].outputs == ValueState::Differs) d = classify(b, diverged_before);
    }
    if (!d && base_cut) {
      sv_.cut->not_compared =
          static_cast<std::uint32_t>(a.cand.size() - static_cast<std::size_t>(last_cand + 1));
    } else if (!d) {
      for (auto k = last_cand + 1; k < static_cast<std::int32_t>(a.cand.size()) && !d; ++k)
        if (a.cand_partner[static_cast<std::size_t>(k)] < 0) d = no_counterpart(-1, k);
    }
    if (d) spread(*d, max_listed);
    return d;
  }

 private:
  const OpLog& bl() const { return *sv_.base.log; }
  const OpLog& cl() const { return *sv_.cand.log; }
  const OpRecord& brec(std::uint32_t b) const { return sv_.base.at(sv_.align.base[b]); }
  const OpRecord& crec(std::uint32_t c) const { return sv_.cand.at(sv_.align.cand[c]); }
  ValueKey bkey(const TensorRef& t) { return ops::value_key(bl(), t, choice_, false, bdt_); }
  ValueKey ckey(const TensorRef& t) { return ops::value_key(cl(), t, choice_, true, cdt_); }

  /// Equal, weakly equal (only hashes that tell nothing apart), differs, or unknown.
  ValueState compare(const TensorRef& bt, const TensorRef& ct, std::uint32_t& strong) {
    const ValueKey kb = bkey(bt), kc = ckey(ct);
    if (!kb.valid || !kc.valid) return ValueState::Unknown;
    if (!(kb == kc)) return ValueState::Differs;
    if (kb.weak) return ValueState::WeakEqual;
    ++strong;
    return ValueState::Equal;
  }

  /// Differs dominates; one strong equal value makes the rest equal; unknown adds nothing.
  static void fold(ValueState& acc, ValueState v) {
    if (v == ValueState::Unknown) return;
    if (acc == ValueState::Differs || v == ValueState::Differs) {
      acc = ValueState::Differs;
    } else if (acc == ValueState::Unknown) {
      acc = v;
    } else {
      acc = acc == ValueState::Equal || v == ValueState::Equal ? ValueState::Equal : ValueState::WeakEqual;
    }
  }

  /// Per launch (in alignment order) and argument, the tensor whose hashes are its value before
  /// the launch: the argument itself when it carries hashes (DebugMode's pre-kernel hashes, an
  /// op record's input from before the step), else the last earlier output of the step with its
  /// id (gparity's op records hash no input that a record of the step wrote: its producer's
  /// output holds it). Null where neither tells.
  static void resolve_inputs(const ops::OpSlice& slice, const std::vector<std::uint32_t>& order,
                             const OpLog& log, std::vector<std::vector<const TensorRef*>>& out) {
    std::unordered_map<std::int64_t, const TensorRef*> written;
    out.assign(order.size(), {});
    for (std::size_t n = 0; n < order.size(); ++n) {
      const OpRecord& r = slice.at(order[n]);
      auto& args = out[n];
      args.resize(r.arg_count, nullptr);
      for (std::uint32_t i = 0; i < r.arg_count; ++i) {
        const TensorRef& t = log.arg(r, i);
        if (t.hashed()) {
          args[i] = &t;
        } else if (t.id >= 0 && t.unhashed == model::ops::Unhashed::No) {
          const auto it = written.find(t.id);
          args[i] = it == written.end() ? nullptr : it->second;
        }
      }
      for (std::uint32_t j = 0; j < r.out_count; ++j) {
        const TensorRef& t = log.out(r, j);
        if (t.id < 0) continue;
        // A value the launch wrote, or none (a view, an allocation, a collective's output not
        // complete yet): a later reader's unhashed argument holds that, or is unknown.
        if (t.hashed() && !r.output_hash_unreliable) {
          written[t.id] = &t;
        } else {
          written.erase(t.id);
        }
      }
    }
  }

  void inputs(std::uint32_t b, std::uint32_t c, LaunchValues& v) {
    const OpRecord& br = brec(b);
    const OpRecord& cr = crec(c);
    for (std::uint32_t i = 0; i < br.arg_count; ++i) {
      if (!reads_arg(bl(), br, i, sv_.base_sites[b])) continue;
      const TensorRef& bt = bl().arg(br, i);
      const std::int32_t k = counterpart_index(bl(), bt, i, cl(), cr.first_arg, cr.arg_count);
      ValueState s = ValueState::Unknown;
      const TensorRef* bv = sv_.base_inputs[b][i];
      const TensorRef* cv = k >= 0 ? sv_.cand_inputs[c][static_cast<std::size_t>(k)] : nullptr;
      if (bv && cv && br.has_input_hashes && cr.has_input_hashes) s = compare(*bv, *cv, v.values);
      if (s == ValueState::Unknown) ++v.inputs_unknown;
      if (s == ValueState::Differs) v.inputs_differ.push_back(i);
      fold(v.inputs, s);
    }
  }

  void outputs(std::uint32_t b, std::uint32_t c, LaunchValues& v) {
    const OpRecord& br = brec(b);
    const OpRecord& cr = crec(c);
    if (br.output_hash_unreliable || cr.output_hash_unreliable) {
      by_reader(b, v);
      return;
    }
    for (std::uint32_t j = 0; j < br.out_count; ++j) {
      const TensorRef& bt = bl().out(br, j);
      const std::int32_t k = counterpart_index(bl(), bt, j, cl(), cr.first_out, cr.out_count);
      const ValueState s =
          k < 0 ? ValueState::Unknown : compare(bt, cl().out(cr, static_cast<std::uint32_t>(k)), v.values);
      if (s == ValueState::Differs) v.outputs_differ.push_back(j);
      fold(v.outputs, s);
    }
  }

  /// A collective hashed before it completed: its value is what the next launch reading its
  /// output (by id) read, against that launch's counterpart.
  void by_reader(std::uint32_t b, LaunchValues& v) {
    const OpRecord& br = brec(b);
    const auto& a = sv_.align;
    for (std::uint32_t n = b + 1; n < a.base.size(); ++n) {
      const OpRecord& reader = brec(n);
      for (std::uint32_t i = 0; i < reader.arg_count; ++i) {
        const std::int64_t id = bl().arg(reader, i).id;
        bool made = false;
        for (std::uint32_t j = 0; j < br.out_count && !made; ++j) made = id >= 0 && bl().out(br, j).id == id;
        if (!made) continue;
        v.reader = static_cast<std::int32_t>(n);
        if (a.base_partner[n] < 0 || !reader.has_input_hashes) return;
        const OpRecord& cr = crec(static_cast<std::uint32_t>(a.base_partner[n]));
        if (i >= cr.arg_count || !cr.has_input_hashes) return;
        v.outputs = compare(bl().arg(reader, i), cl().arg(cr, i), v.values);
        return;
      }
    }
  }

  KernelDivergence no_counterpart(std::int32_t b, std::int32_t c) {
    KernelDivergence d;
    d.base = b;
    d.cand = c;
    d.cause = KernelCause::NoCounterpart;
    return d;
  }

  KernelDivergence classify(std::uint32_t b, std::int64_t diverged_before) {
    KernelDivergence d;
    d.base = static_cast<std::int32_t>(b);
    d.cand = sv_.align.base_partner[b];
    const LaunchValues& v = sv_.values[b];
    if (v.inputs == ValueState::Differs) {
      for (const auto i : v.inputs_differ)
        if (d.producer < 0) d.producer = producers_[b][i];
      d.cause = d.producer >= 0       ? KernelCause::Propagated
                : diverged_before > 0 ? KernelCause::FollowsStep
                                      : KernelCause::Input;
      d.follows_step = d.cause == KernelCause::FollowsStep ? diverged_before : 0;
      return d;
    }
    const OpRecord& r = brec(b);
    if (ops::is_collective(bl().op_name(r))) {
      d.cause = KernelCause::Unknown;  // judged across ranks (judge_kernel_logs)
      return d;
    }
    d.code = code_evidence(b, static_cast<std::uint32_t>(d.cand));
    if (!model::ops::is_kernel(r)) {
      d.cause = KernelCause::Origin;
    } else if (d.code.code_differs || d.code.aten_differs || d.code.other_kernel) {
      d.cause = KernelCause::DifferentCode;
    } else if (!d.code.base_config.empty() && !d.code.cand_config.empty() &&
               d.code.base_config != d.code.cand_config && !d.code.base_config.starts_with("autotuned") &&
               !d.code.cand_config.starts_with("autotuned")) {
      d.cause = KernelCause::DifferentConfig;
    } else {
      d.cause = KernelCause::NonDeterministic;
    }
    return d;
  }

  CodeEvidence code_evidence(std::uint32_t b, std::uint32_t c) {
    CodeEvidence e;
    const KernelSite& bs = sv_.base_sites[b];
    const KernelSite& cs = sv_.cand_sites[c];
    const auto* bsrc = bs.source();
    const auto* csrc = cs.source();
    e.base_code = bsrc != nullptr;
    e.cand_code = csrc != nullptr;
    e.other_kernel = sv_.align.paired_by[b] == PairedBy::Signature;
    if (bsrc && csrc && bsrc->hash != csrc->hash) {
      e.code_differs = true;
      const std::size_t n = std::min(bsrc->lines.size(), csrc->lines.size());
      std::size_t i = 0;
      while (i < n && bsrc->lines[i] == csrc->lines[i]) ++i;
      e.base_line = i < bsrc->lines.size() ? bsrc->lines[i] : "(end of source)";
      e.cand_line = i < csrc->lines.size() ? csrc->lines[i] : "(end of source)";
    }
    if (bs.known() && cs.known() && !bs.site->aten.empty() && !cs.site->aten.empty())
      e.aten_differs = bs.site->aten != cs.site->aten;
    if (const auto* cfg = bs.config()) e.base_config = *cfg;
    if (const auto* cfg = cs.config()) e.cand_config = *cfg;
    recorded_evidence(e, brec(b), crec(c));
    e.deterministic_off = (bsrc && bsrc->deterministic_off) || (csrc && csrc->deterministic_off);
    e.atomics = (bsrc && bsrc->atomics) || (csrc && csrc->atomics);
    return e;
  }

  /// What gparity's op recorder wrote of both launches (records of kind "kernel"): the source
  /// hash where provenance gave no source, and the config the autotuner chose, which provenance
  /// logs only for a kernel with one config ("autotuned among N configs").
  void recorded_evidence(CodeEvidence& e, const OpRecord& br, const OpRecord& cr) const {
    const auto* bk = bl().recorded_kernel(br);
    const auto* ck = cl().recorded_kernel(cr);
    if (bk && ck && bk->source_hash && ck->source_hash) {
      e.base_code = e.base_code || bk->source_hash != 0;
      e.cand_code = e.cand_code || ck->source_hash != 0;
      if (!e.code_differs && bl().str(bk->source_hash) != cl().str(ck->source_hash)) {
        e.code_differs = true;
        e.base_line = "source hash " + std::string(bl().str(bk->source_hash));
        e.cand_line = "source hash " + std::string(cl().str(ck->source_hash));
      }
    }
    if (bk && bk->config) e.base_config = std::string(bl().str(bk->config));
    if (ck && ck->config) e.cand_config = std::string(cl().str(ck->config));
  }

  /// What the first divergence carries on in the step (launches whose outputs differ and that read
  /// a differing input), and other origins (equal inputs, different outputs).
  void spread(KernelDivergence& d, std::size_t max_listed) {
    const auto& a = sv_.align;
    const std::uint32_t from = d.base >= 0 ? static_cast<std::uint32_t>(d.base) + 1 : 0;
    for (std::uint32_t b = from; b < a.base.size(); ++b) {
      const LaunchValues& v = sv_.values[b];
      if (v.outputs != ValueState::Differs) continue;
      if (v.inputs == ValueState::Differs) {
        if (d.carried.size() < max_listed) d.carried.push_back(b);
        ++d.carried_total;
      } else if (ops::is_collective(bl().op_name(brec(b)))) {
        ++d.other_received_total;
      } else {
        if (d.other_origins.size() < max_listed) d.other_origins.push_back(b);
        ++d.other_origin_total;
      }
    }
  }

  KernelStepVerdict& sv_;
  const ops::HashChoice& choice_;
  std::vector<std::uint64_t> bdt_, cdt_;
  std::vector<std::vector<std::int32_t>> producers_;
};

/// A step of every rank in diff/causality's records: each baseline launch a record reading the
/// launches that wrote its arguments in the step; an argument from before the step that differs
/// is a graph input record that differs.
struct CausalStep {
  std::vector<causality::RankRecords> ranks;
  std::vector<std::vector<std::size_t>> index;  // per rank, per baseline launch: its record
  causality::Result result;
};

std::string node_name(const KernelStepVerdict& sv, std::uint32_t b) {
  const OpRecord& r = sv.base.at(sv.align.base[b]);
  return std::string(sv.base.log->op_name(r)) + " #" + std::to_string(r.index);
}

/// The user frame a launch came from (provenance), else its `# File:` line.
std::string launch_source(const KernelStepVerdict& sv, std::uint32_t b) {
  if (const auto* o = sv.base_sites[b].origin(); o && !o->frames.empty()) return o->frames.back().text();
  return sv.base.log->source_text(sv.base.at(sv.align.base[b]));
}

CausalStep causal_step(const std::vector<KernelRankVerdict>& verdicts,
                       const std::vector<std::vector<std::vector<std::vector<std::int32_t>>>>& producers,
                       std::int64_t step, const std::vector<int>& world) {
  CausalStep cs;
  for (std::size_t ri = 0; ri < verdicts.size(); ++ri) {
    const auto& rv = verdicts[ri];
    for (std::size_t si = 0; si < rv.steps.size(); ++si) {
      const auto& sv = rv.steps[si];
      if (sv.step != step) continue;
      const auto& prod = producers[ri][si];
      causality::RankRecords rr;
      rr.rank = rv.rank;
      std::vector<std::size_t> index(sv.align.base.size(), 0);
      const std::string graph = "step " + std::to_string(step);
      for (std::uint32_t b = 0; b < sv.align.base.size(); ++b) {
        const OpRecord& r = sv.base.at(sv.align.base[b]);
        const LaunchValues& v = sv.values[b];
        causality::Record rec;
        rec.graph = graph;
        for (std::uint32_t i = 0; i < prod[b].size(); ++i) {
          const bool differs =
              std::find(v.inputs_differ.begin(), v.inputs_differ.end(), i) != v.inputs_differ.end();
          if (prod[b][i] >= 0) {
            rec.inputs.push_back(index[static_cast<std::size_t>(prod[b][i])]);
          } else if (differs) {
            causality::Record in;
            in.graph = graph;
            in.node = "input of " + node_name(sv, b);
            in.graph_input = true;
            in.differs = true;
            rec.inputs.push_back(rr.records.size());
            rr.records.push_back(std::move(in));
          }
        }
        const std::string_view op = sv.base.log->op_name(r);
        rec.compared = v.outputs != ValueState::Unknown;
        rec.differs = v.outputs == ValueState::Differs;
        if (ops::is_collective(op))
          rec.comm = causality::Comm{causality::Comm::Kind::Collective,
                                     std::string(ops::collective_group(*sv.base.log, r)), -1};
        rec.op = std::string(op);
        rec.node = node_name(sv, b);
        rec.source = launch_source(sv, b);
        std::sort(rec.inputs.begin(), rec.inputs.end());
        rec.inputs.erase(std::unique(rec.inputs.begin(), rec.inputs.end()), rec.inputs.end());
        index[b] = rr.records.size();
        rr.records.push_back(std::move(rec));
      }
      cs.ranks.push_back(std::move(rr));
      cs.index.push_back(std::move(index));
    }
  }
  causality::GroupTable groups;
  groups[std::string(ops::kAllRanksGroup)] = {world, "default_pg"};
  cs.result = causality::classify(cs.ranks, groups);
  return cs;
}

/// The cause diff/causality gives a collective, in a kernel verdict's terms.
KernelCause kernel_cause(causality::Cause c) noexcept {
  switch (c) {
    case causality::Cause::Origin: return KernelCause::Origin;
    case causality::Cause::Received: return KernelCause::Received;
    case causality::Cause::Propagated: return KernelCause::Propagated;
    case causality::Cause::Input: return KernelCause::Input;
    case causality::Cause::Unknown: return KernelCause::Unknown;
  }
  return KernelCause::Unknown;
}

/// A collective's first divergence as the causal order over every rank judges it.
void apply_causality(const CausalStep& cs, std::size_t pos, KernelDivergence& d) {
  const auto& records = cs.ranks[pos];
  const std::size_t at = cs.index[pos][static_cast<std::size_t>(d.base)];
  if (const causality::Classification* c = cs.result.find(records.rank, at)) {
    d.cause = kernel_cause(c->cause);
    d.from_ranks = c->from_ranks;
    d.causal_text = c->text(records.records[at].node, records.rank);
    d.causal = c->to_json();
  }
}

/// The side whose records of the step stop short, if one does: a slice that ends its log with a
/// stop sign (ops::detail::stop_sign, as the op comparison judges it). The candidate's first.
std::optional<LaunchCut> launch_cut(const KernelStepVerdict& sv, int rank,
                                    const ops::detail::SideSteps& base_steps,
                                    const ops::detail::SideSteps& cand_steps) {
  for (const bool candidate : {true, false}) {
    const ops::OpSlice& s = candidate ? sv.cand : sv.base;
    if (s.size() == 0 || s.end != s.log->records.size()) continue;
    const auto sign =
        ops::detail::stop_sign(s, rank, candidate ? "candidate" : "baseline",
                               candidate ? cand_steps : base_steps, candidate ? base_steps : cand_steps);
    if (sign.stopped()) return LaunchCut{candidate, sign.why, 0};
  }
  return std::nullopt;
}

}  // namespace

std::vector<KernelRankVerdict> judge_kernel_logs(const std::vector<ops::RankLogs>& base,
                                                 const std::vector<ops::RankLogs>& cand,
                                                 const ops::HashChoice& choice, const SideProvenance& prov,
                                                 std::size_t max_listed) {
  std::vector<KernelRankVerdict> out;
  const auto base_steps = ops::detail::side_steps(base), cand_steps = ops::detail::side_steps(cand);
  // per rank, per step: producers of each baseline launch's arguments (for the causal order)
  std::vector<std::vector<std::vector<std::vector<std::int32_t>>>> producers;
  for (const auto& br : base) {
    const auto cr =
        std::find_if(cand.begin(), cand.end(), [&](const ops::RankLogs& c) { return c.rank == br.rank; });
    if (cr == cand.end()) continue;
    std::map<std::int64_t, ops::OpSlice> bs, cs;
    for (const auto& l : br.logs)
      for (const auto& s : ops::slices_of(l)) bs.emplace(s.step, s);
    for (const auto& l : cr->logs)
      for (const auto& s : ops::slices_of(l)) cs.emplace(s.step, s);
    const model::ops::RankProvenance* bp = prov.base ? prov.base->rank(br.rank) : nullptr;
    const model::ops::RankProvenance* cp = prov.cand ? prov.cand->rank(br.rank) : nullptr;
    KernelRankVerdict rv;
    rv.rank = br.rank;
    auto& rank_producers = producers.emplace_back();
    std::int64_t diverged = 0;
    for (const auto& [step, slice] : bs) {
      const auto it = cs.find(step);
      if (it == cs.end()) continue;
      KernelStepVerdict sv;
      sv.step = step;
      sv.base = slice;
      sv.cand = it->second;
      sv.align = align_launches(sv.base, sv.cand);
      sv.base_sites = map_sites(sv.base, sv.align.base, bp);
      sv.cand_sites = map_sites(sv.cand, sv.align.cand, cp);
      sv.cut = launch_cut(sv, br.rank, base_steps, cand_steps);
      StepJudge judge(sv, choice);
      judge.compare_values();
      judge.dataflow();
      sv.first = judge.first(diverged, max_listed);
      if (sv.first && diverged == 0) diverged = step;
      rank_producers.push_back(judge.producers());
      rv.steps.push_back(std::move(sv));
    }
    out.push_back(std::move(rv));
  }
  // Collectives across ranks, in the causal order of the step on every rank.
  std::set<std::int64_t> cross;
  for (const auto& rv : out)
    for (const auto& sv : rv.steps)
      if (sv.first && sv.first->base >= 0 && sv.first->cause == KernelCause::Unknown) cross.insert(sv.step);
  std::set<int> world_set;
  for (const auto* side : {&base, &cand})
    for (const auto& r : *side) world_set.insert(r.rank);
  const std::vector<int> world(world_set.begin(), world_set.end());
  for (const std::int64_t step : cross) {
    const CausalStep cs = causal_step(out, producers, step, world);
    for (std::size_t pos = 0; pos < cs.ranks.size(); ++pos)
      for (auto& rv : out) {
        if (rv.rank != cs.ranks[pos].rank) continue;
        for (auto& sv : rv.steps)
          if (sv.step == step && sv.first && sv.first->base >= 0 && sv.first->cause == KernelCause::Unknown)
            apply_causality(cs, pos, *sv.first);
      }
  }
  return out;
}

}  // namespace gparity::diff::kernels
