#include "diff/kernels/kernel_findings.hpp"

#include <filesystem>

#include "core/model/ops/kernel_launch.hpp"
#include "diff/ops/op_findings.hpp"

namespace gparity::diff::kernels {

using json = nlohmann::json;
using model::ops::OpLog;
using model::ops::OpRecord;
using model::ops::TensorRef;
using ops::detail::printable;

namespace {

std::string list_text(const std::vector<std::string>& v, std::size_t max = 12) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + printable(v[i]);
  if (v.size() > max) s += ", ... (" + std::to_string(v.size()) + ")";
  return s;
}

/// The user frames a launch came from: "gen.py:36 `x = ...`", at most a few.
std::string frames_text(const model::ops::KernelOrigin& o, std::size_t max = 3) {
  std::string s;
  for (std::size_t i = 0; i < o.frames.size() && i < max; ++i) {
    const auto& f = o.frames[i];
    s += (i ? ", " : "") + printable(f.text()) + (f.code.empty() ? "" : " `" + printable(f.code) + "`");
  }
  if (o.frames.size() > max) s += ", ...";
  return s;
}

std::string text_of(const ops::OpSlice& s, std::uint32_t at, const KernelSite& site) {
  const OpRecord& r = s.at(at);
  std::string out = printable(s.log->op_name(r));
  std::vector<std::string> ctx;
  if (const auto line = site.known() ? site.site->line : model::ops::launch_line(*s.log, r); line > 0)
    ctx.push_back("output code line " + std::to_string(line));
  if (const auto* o = site.origin(); o && !o->frames.empty()) {
    ctx.push_back(printable(o->frames.front().text()));
  } else if (const std::string src = s.log->source_text(r);
             !src.empty() && !model::ops::is_kernel(r) && model::ops::launch_line(*s.log, r) == 0) {
    // A kernel's `# File:` line is its launch or a frame DebugMode printed long before it.
    ctx.push_back(printable(src));
  }
  std::string c;
  for (const auto& x : ctx) c += (c.empty() ? "" : ", ") + x;
  return c.empty() ? out : out + " (" + c + ")";
}

std::string hashes_of(const OpLog& log, const TensorRef& t) {
  std::string s;
  for (std::uint32_t i = 0; i < t.hash_count; ++i) s += (i ? "/" : "") + log.hash_text(log.hash(t, i));
  return s.empty() ? "-" : s;
}

/// The argument (or output) name of a launch's tensor: a kernel's Inductor name, else its position.
std::string tensor_name(const OpLog& log, const TensorRef& t, std::uint32_t i, bool output) {
  if (t.name != 0) return std::string(log.str(t.name));
  return (output ? "output " : "arg ") + std::to_string(i);
}

/// Each argument of the pair: role, tensor, both sides' values before and (written ones) after.
json args_json(const KernelStepVerdict& sv, std::uint32_t b, std::int32_t c) {
  const OpLog& bl = *sv.base.log;
  const OpRecord& br = sv.base.at(sv.align.base[b]);
  const OpRecord* cr = c >= 0 ? &sv.cand.at(sv.align.cand[static_cast<std::size_t>(c)]) : nullptr;
  const OpLog& cl = *sv.cand.log;
  auto find = [&](const OpLog& log, std::uint32_t first, std::uint32_t count, const TensorRef& t,
                  std::uint32_t i) -> const TensorRef* {
    if (i < count && log.str(log.tensors[first + i].name) == bl.str(t.name)) return &log.tensors[first + i];
    for (std::uint32_t k = 0; k < count && t.name != 0; ++k)
      if (log.str(log.tensors[first + k].name) == bl.str(t.name)) return &log.tensors[first + k];
    return nullptr;
  };
  // The value an argument held before the launch: its own hashes, else (gparity's op records)
  // those of the step's earlier output it is, which the judge resolved.
  auto before = [](const OpLog& log, const TensorRef& t, const auto& resolved, std::size_t launch,
                   std::size_t arg, bool& from_step) {
    const TensorRef* v =
        launch < resolved.size() && arg < resolved[launch].size() ? resolved[launch][arg] : nullptr;
    from_step = from_step || (v && v != &t);
    return hashes_of(log, v ? *v : t);
  };
  json out = json::array();
  for (std::uint32_t i = 0; i < br.arg_count; ++i) {
    const TensorRef& t = bl.arg(br, i);
    json j = {{"name", tensor_name(bl, t, i, false)}, {"tensor", printable(bl.tensor_text(t))}};
    if (model::ops::is_kernel(br)) j["role"] = model::ops::arg_role_name(model::ops::launch_arg_role(bl, t));
    bool from_step = false;
    j["baseline_before"] = before(bl, t, sv.base_inputs, b, i, from_step);
    if (cr)
      if (const auto* ct = find(cl, cr->first_arg, cr->arg_count, t, i))
        j["candidate_before"] = before(cl, *ct, sv.cand_inputs, static_cast<std::size_t>(c),
                                       static_cast<std::size_t>(ct - &cl.tensors[cr->first_arg]), from_step);
    if (from_step) j["before_written_in_step"] = true;  // the value an earlier record of the step wrote
    if (const auto* bo = find(bl, br.first_out, br.out_count, t, i); bo && model::ops::is_kernel(br)) {
      j["baseline_after"] = hashes_of(bl, *bo);
      if (cr)
        if (const auto* co = find(cl, cr->first_out, cr->out_count, t, i))
          j["candidate_after"] = hashes_of(cl, *co);
    }
    out.push_back(j);
  }
  return out;
}

std::string names_of(const OpLog& log, const OpRecord& r, const std::vector<std::uint32_t>& idx,
                     bool output) {
  std::string s;
  for (const auto i : idx) {
    const TensorRef& t = output ? log.out(r, i) : log.arg(r, i);
    s += (s.empty() ? "" : ", ") + printable(tensor_name(log, t, i, output));
  }
  return s;
}

std::string cause_text(const KernelStepVerdict& sv, const KernelDivergence& d,
                       const ops::detail::SideWords& w) {
  const CodeEvidence& e = d.code;
  switch (d.cause) {
    case KernelCause::DifferentCode:
      if (e.other_kernel)
        return "origin, different code: " + w.cand_run + " launched another kernel with these arguments, " +
               cand_launch_text(sv, static_cast<std::uint32_t>(d.cand));
      if (e.code_differs)
        return "origin, different code: its source differs (" + w.base + " `" + printable(e.base_line) +
               "`, " + w.cand + " `" + printable(e.cand_line) + "`)";
      return "origin, different code: the ATen ops its launch computes differ (" + w.base + " [" +
             list_text(sv.base_sites[static_cast<std::size_t>(d.base)].site->aten) + "], " + w.cand + " [" +
             list_text(sv.cand_sites[static_cast<std::size_t>(d.cand)].site->aten) + "])";
    case KernelCause::DifferentConfig:
      return "origin, same code, different config (" + w.base + " " + printable(e.base_config) + ", " +
             w.cand + " " + printable(e.cand_config) + ")";
    case KernelCause::NonDeterministic: {
      std::string s = "non-deterministic: ";
      if (e.base_code && e.cand_code) {
        s += "same code";
      } else {
        s += std::string("its code was compared on ") +
             (e.base_code || e.cand_code ? "one side only" : "neither side") + " (no output code in " +
             (e.base_code ? w.cand : w.base) +
             "'s TORCH_TRACE: the same kernel name, output-code line and arguments are all the logs show)";
      }
      if (!e.base_config.empty() && e.base_config == e.cand_config) s += ", same config";
      s += ", equal inputs, different outputs: run to run";
      if (e.deterministic_off) s += "; it was compiled with deterministic algorithms off";
      if (e.atomics) s += "; it uses atomics";
      if (e.base_config.starts_with("autotuned") || e.cand_config.starts_with("autotuned"))
        s += "; its launch config was autotuned at run time (the choice is not logged)";
      return s;
    }
    case KernelCause::Origin: return "origin: its inputs are equal, its outputs differ";
    case KernelCause::NoCounterpart:
      return d.base >= 0 ? "no counterpart: " + w.cand_run + " made no such launch here (the programs differ)"
                         : "no counterpart: " + w.cand_run + " launched " +
                               cand_launch_text(sv, static_cast<std::uint32_t>(d.cand)) + " here, " + w.base +
                               " nothing of the kind (the programs differ)";
    case KernelCause::Propagated:
      return "propagated: its input was written by " +
             launch_text(sv, static_cast<std::uint32_t>(d.producer)) + ", which already differed";
    case KernelCause::FollowsStep:
      return "follows from step " + std::to_string(d.follows_step) +
             " (an input made before this step differs)";
    case KernelCause::Input:
      return "input: an input made before this step differs, with no earlier divergence seen";
    case KernelCause::Received:
    case KernelCause::Unknown:
      return d.causal_text.empty() ? std::string(kernel_cause_name(d.cause)) : printable(d.causal_text);
  }
  return {};
}

}  // namespace

std::string launch_text(const KernelStepVerdict& sv, std::uint32_t b) {
  return text_of(sv.base, sv.align.base[b], sv.base_sites[b]);
}

std::string cand_launch_text(const KernelStepVerdict& sv, std::uint32_t c) {
  return text_of(sv.cand, sv.align.cand[c], sv.cand_sites[c]);
}

std::string provenance_text(const KernelSite& site) {
  std::string s;
  if (const auto* o = site.origin()) {
    if (!o->post_nodes.empty()) s += "; post-grad nodes " + list_text(o->post_nodes);
    if (!o->pre_nodes.empty()) s += "; pre-grad nodes " + list_text(o->pre_nodes);
  }
  if (site.known()) {
    if (!site.site->aten.empty()) s += "; ATen " + list_text(site.site->aten);
    if (!site.site->source_nodes.empty() && (!site.origin() || site.origin()->pre_nodes.empty()))
      s += "; source nodes " + list_text(site.site->source_nodes);
  }
  if (const auto* o = site.origin(); o && !o->frames.empty()) s += "; from " + frames_text(*o);
  return s;
}

json provenance_json(const KernelSite& site) {
  if (!site.known()) return nullptr;
  json j = {{"output_code", site.code->path}, {"graph", site.code->graph},
            {"line", site.site->line},        {"kernel", site.site->kernel},
            {"handle", site.site->handle},    {"source_nodes", site.site->source_nodes},
            {"aten", site.site->aten}};
  if (const auto* o = site.origin()) {
    j["post_grad_nodes"] = o->post_nodes;
    j["pre_grad_nodes"] = o->pre_nodes;
    json frames = json::array();
    for (const auto& f : o->frames)
      frames.push_back({{"file", f.file}, {"line", f.line}, {"function", f.function}, {"code", f.code}});
    j["frames"] = frames;
  }
  if (const auto* c = site.config()) j["config"] = *c;
  if (const auto* s = site.source()) j["source_hash"] = s->hash;
  return j;
}

Finding kernel_divergence_finding(const KernelRankVerdict& rv, const KernelStepVerdict& sv,
                                  const KernelDivergence& d, const ops::HashChoice& choice, bool follow_up,
                                  const ops::detail::SideWords& w) {
  const bool base_side = d.base >= 0;
  const ops::OpSlice& s = base_side ? sv.base : sv.cand;
  const std::uint32_t at = base_side ? sv.align.base[static_cast<std::size_t>(d.base)]
                                     : sv.align.cand[static_cast<std::size_t>(d.cand)];
  const OpRecord& r = s.at(at);
  const KernelSite& site = base_side ? sv.base_sites[static_cast<std::size_t>(d.base)]
                                     : sv.cand_sites[static_cast<std::size_t>(d.cand)];
  Finding f;
  f.severity = Severity::Divergence;
  f.kind =
      follow_up && d.cause == KernelCause::FollowsStep ? "kernel_divergence_follows" : "kernel_divergence";
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  f.where.node = std::string(s.log->op_name(r));
  f.where.source = s.log->path;
  f.where.line = r.line;
  const std::string what = model::ops::is_kernel(r) ? "kernel" : "launch";
  std::string msg = "first divergent " + what + " " + text_of(s, at, site) + ", " +
                    std::string(model::ops::phase_name(r.phase)) + ": " + cause_text(sv, d, w);
  if (base_side && d.cand >= 0) {
    const LaunchValues& v = sv.values[static_cast<std::size_t>(d.base)];
    if (!v.outputs_differ.empty())
      msg += "; it wrote other values to " + names_of(*s.log, r, v.outputs_differ, true);
    if (v.reader >= 0)
      msg += "; its value as " + launch_text(sv, static_cast<std::uint32_t>(v.reader)) + " read it differs";
    if (!v.inputs_differ.empty()) {
      msg += "; its input(s) " + names_of(*s.log, r, v.inputs_differ, false) + " differ";
    } else if (v.inputs == ValueState::Equal || v.inputs == ValueState::WeakEqual) {
      msg += "; every input it read is equal";
      if (v.inputs_unknown > 0) msg += " (" + std::to_string(v.inputs_unknown) + " without evidence)";
    }
  }
  msg += provenance_text(site);
  if (d.carried_total > 0)
    msg += "; carried on by " + std::to_string(d.carried_total) + " launch(es) reading what differs, first " +
           launch_text(sv, d.carried.front());
  if (d.other_received_total > 0)
    msg += "; " + std::to_string(d.other_received_total) +
           " other collective(s) of the step differ with equal inputs";
  if (d.other_origin_total > 0)
    msg += "; " + std::to_string(d.other_origin_total) +
           " other launch(es) differ with equal inputs, first " + launch_text(sv, d.other_origins.front());
  msg += "; decided by " + choice.text();
  f.message = msg;
  json carried = json::array(), others = json::array();
  for (const auto b : d.carried)
    carried.push_back(ops::detail::record_json(*sv.base.log, sv.base.at(sv.align.base[b])));
  for (const auto b : d.other_origins)
    others.push_back(ops::detail::record_json(*sv.base.log, sv.base.at(sv.align.base[b])));
  f.values = {{"rank", rv.rank},
              {"step", sv.step},
              {"level", "kernels"},
              {"cause", kernel_cause_name(d.cause)},
              {"launch", ops::detail::record_json(*s.log, r)},
              {"side", base_side ? "baseline" : "candidate"},
              {"provenance", provenance_json(site)},
              {"carried", carried},
              {"carried_total", d.carried_total},
              {"other_origins", others},
              {"other_origin_total", d.other_origin_total},
              {"other_received_total", d.other_received_total},
              {"from_ranks", d.from_ranks},
              {"decided_by", choice.text()}};
  if (base_side && d.cand >= 0) {
    const OpRecord& cr = sv.cand.at(sv.align.cand[static_cast<std::size_t>(d.cand)]);
    f.values["counterpart"] = ops::detail::record_json(*sv.cand.log, cr);
    f.values["counterpart_provenance"] = provenance_json(sv.cand_sites[static_cast<std::size_t>(d.cand)]);
    f.values["paired_by"] = paired_by_name(sv.align.paired_by[static_cast<std::size_t>(d.base)]);
    f.values["args"] = args_json(sv, static_cast<std::uint32_t>(d.base), d.cand);
  }
  if (d.producer >= 0)
    f.values["producer"] = ops::detail::record_json(
        *sv.base.log, sv.base.at(sv.align.base[static_cast<std::size_t>(d.producer)]));
  if (d.follows_step > 0) f.values["follows_step"] = d.follows_step;
  if (!d.causal.is_null()) f.values["causality"] = d.causal;
  if (d.cause == KernelCause::DifferentCode || d.cause == KernelCause::DifferentConfig ||
      d.cause == KernelCause::NonDeterministic) {
    const CodeEvidence& e = d.code;
    f.values["code"] = {{"baseline_known", e.base_code},
                        {"candidate_known", e.cand_code},
                        {"source_differs", e.code_differs},
                        {"aten_differs", e.aten_differs},
                        {"other_kernel", e.other_kernel},
                        {"baseline_line", e.base_line},
                        {"candidate_line", e.cand_line},
                        {"baseline_config", e.base_config},
                        {"candidate_config", e.cand_config},
                        {"deterministic_off", e.deterministic_off},
                        {"atomics", e.atomics}};
  }
  return f;
}

Finding kernel_step_info(const KernelRankVerdict& rv, const KernelStepVerdict& sv,
                         const ops::detail::SideWords& w) {
  Finding f;
  f.severity = Severity::Info;
  f.kind = "kernel_step_compared";
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  const auto& a = sv.align;
  const std::size_t paired = a.base.size() - a.unpaired_base;
  std::size_t sites = 0;
  for (const auto& s : sv.base_sites) sites += s.known() ? 1 : 0;
  f.message = std::to_string(a.base.size()) + " " + w.base + " launches (" + std::to_string(sv.kernels) +
              " kernels), " + std::to_string(a.cand.size()) + " " + w.cand + "; " + std::to_string(paired) +
              " paired, " + std::to_string(sv.values_compared) + " values compared by a strong hash, " +
              std::to_string(sv.differing) + " launches wrote other values; " +
              std::to_string(a.unpaired_base) + " " + w.base + " and " + std::to_string(a.unpaired_cand) +
              " " + w.cand + " launches without counterpart; " + std::to_string(sites) + " " + w.base +
              " launches mapped to their output code";
  f.values = {{"baseline_launches", a.base.size()},
              {"candidate_launches", a.cand.size()},
              {"kernels", sv.kernels},
              {"paired", paired},
              {"values_compared", sv.values_compared},
              {"differing", sv.differing},
              {"unpaired_baseline", a.unpaired_base},
              {"unpaired_candidate", a.unpaired_cand},
              {"mapped_to_output_code", sites}};
  return f;
}

Finding kernel_cut_finding(const KernelRankVerdict& rv, const KernelStepVerdict& sv,
                           const ops::detail::SideWords& w) {
  const LaunchCut& cut = *sv.cut;
  const ops::OpSlice& s = cut.candidate ? sv.cand : sv.base;
  Finding f{Severity::Incomplete, "kernel_step_cut", {}, "", json::object()};
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  f.where.source = s.log->path;
  if (s.size() > 0) f.where.line = s.at(s.size() - 1).line;
  const std::string& stopped = cut.candidate ? w.cand : w.base;
  const std::string& other = cut.candidate ? w.base : w.cand;
  f.message = "rank " + std::to_string(rv.rank) + ": the " + stopped + " records of step " +
              std::to_string(sv.step) + " stop short (" + printable(cut.why) +
              "): " + std::to_string(cut.not_compared) + " " + other +
              " launch(es) past the last paired one not compared: not recorded, never divergent";
  f.values = {{"rank", rv.rank},
              {"step", sv.step},
              {"side", cut.candidate ? "candidate" : "baseline"},
              {"why", cut.why},
              {"not_compared", cut.not_compared}};
  return f;
}

}  // namespace gparity::diff::kernels
