#include "diff/checkpoints/checkpoint_compare.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/model/base/input_error.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/checkpoint_hash.hpp"
#include "core/model/formats/dcp_checkpoint.hpp"
#include "core/model/formats/format_detect.hpp"
#include "diff/report/evidence.hpp"
#include "hash/xxh3.hpp"

namespace gparity::diff {
namespace fs = std::filesystem;
namespace {

bool is_safetensors(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  // Named so (its reader then says what is wrong inside), or a safetensors header by content.
  return p.extension() == ".safetensors" ||
         model::detect_format(p.string()).format == model::Format::Safetensors;
}

bool is_single(const std::string& path) {
  return model::is_dcp_checkpoint(path) || is_safetensors(path);
}

// step-<n>, step_<n>, step<n> (with an optional .safetensors): n, or -1.
std::int64_t step_of(std::string name) {
  if (name.ends_with(".safetensors")) name.resize(name.size() - 12);
  if (!name.starts_with("step")) return -1;
  std::size_t i = 4;
  if (i < name.size() && (name[i] == '-' || name[i] == '_')) ++i;
  std::int64_t n = -1;
  const auto r = std::from_chars(name.data() + i, name.data() + name.size(), n);
  return r.ec == std::errc() && r.ptr == name.data() + name.size() ? n : -1;
}

std::map<std::int64_t, std::string> scan_steps(const fs::path& dir) {
  std::map<std::int64_t, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto n = step_of(e.path().filename().string());
    if (n < 0 || model::path_kind(e.path()) == model::PathKind::Missing || !is_single(e.path().string()))
      continue;  // path_kind throws for a looping link, naming it
    // A DCP folder and the safetensors of the same step hold the same weights: the folder is
    // what the run saved, so it wins.
    const auto it = out.find(n);
    if (it == out.end() || model::is_dcp_checkpoint(e.path().string())) out[n] = e.path().string();
  }
  return out;
}

struct Side {
  std::string path;
  model::FileDigest digest;
  std::string prefix;  // dropped from every name to match the other side ("model.")
  [[nodiscard]] std::string key(const model::TensorDigest& t) const { return t.name.substr(prefix.size()); }
};

// The first dotted component shared by every name ("model."), or "".
std::string common_prefix(const model::FileDigest& d) {
  if (d.tensors.empty()) return "";
  const auto& first = d.tensors[0].name;
  const auto dot = first.find('.');
  if (dot == std::string::npos) return "";
  const std::string p = first.substr(0, dot + 1);
  for (const auto& t : d.tensors)
    if (!t.name.starts_with(p) || t.name.size() == p.size()) return "";
  return p;
}

std::size_t matches(const Side& a, const Side& b) {
  std::set<std::string> keys;
  for (const auto& t : a.digest.tensors) keys.insert(a.key(t));
  std::size_t n = 0;
  for (const auto& t : b.digest.tensors) n += keys.count(b.key(t));
  return n;
}

// Picks the name alignment that matches most parameters: as they are, or without one side's
// common wrapper prefix (a DCP state dict saved as {"model": ...} vs a bare safetensors file).
void align(Side& a, Side& b) {
  std::size_t best = matches(a, b);
  for (Side* s : {&a, &b}) {
    s->prefix = common_prefix(s->digest);
    if (s->prefix.empty()) continue;
    const auto m = matches(a, b);
    if (m > best) return;
    s->prefix.clear();
  }
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::string describe(const model::TensorDigest& t) {
  return (t.dtype ? std::string(model::dtype_name(*t.dtype)) : "bytes") + " " + shape_text(t.shape);
}

nlohmann::json side_json(const model::TensorDigest& t) {
  return {{"name", t.name},
          {"dtype", t.dtype ? std::string(model::dtype_name(*t.dtype)) : "bytes"},
          {"shape", t.shape},
          {"xxh3", hash::to_hex(t.xxh3)},
          {"shard_hash", hash::to_hex(t.shard_hash)},
          {"layout", t.layout}};
}

struct StepResult {
  std::size_t compared = 0, equal = 0;
  std::size_t pairs = 0;                     // parameters present on both sides
  std::size_t tensors_a = 0, tensors_b = 0;  // what each checkpoint holds
  std::vector<std::string> differing;        // registration order
};

StepResult compare_one(const std::string& a_path, const std::string& b_path, std::optional<std::int64_t> step,
                       const CheckpointCompareOptions& o, FindingConsumer& out) {
  const model::CheckpointHashOptions ho{o.threads};
  Side a{a_path, model::hash_file(a_path, ho), ""};
  Side b{b_path, model::hash_file(b_path, ho), ""};
  for (const Side* s : {&a, &b}) {
    if (s->digest.format == "raw")
      throw model::InputError(s->path, "not a checkpoint (neither a DCP folder nor a .safetensors file)");
  }
  align(a, b);
  StepResult r;
  r.tensors_a = a.digest.tensors.size();
  r.tensors_b = b.digest.tensors.size();
  const auto base_finding = [&](Severity sev, std::string kind, std::string param, std::string msg) {
    Finding f;
    f.severity = sev;
    f.kind = std::move(kind);
    f.where.step = step;
    f.where.parameter = std::move(param);
    f.message = std::move(msg);
    return f;
  };
  for (const Side* s : {&a, &b}) {
    if (!s->prefix.empty())
      out.finding(
          base_finding(Severity::Info, "checkpoint_name_prefix", "",
                       s->path + ": names matched without their common prefix \"" + s->prefix + "\""));
  }
  // Registration order: a DCP side's metadata order (safetensors headers are sorted by name).
  const Side& order = (a.digest.format != "dcp" && b.digest.format == "dcp") ? b : a;
  const Side& other = &order == &a ? b : a;
  std::map<std::string, const model::TensorDigest*> other_by_key;
  for (const auto& t : other.digest.tensors) other_by_key[other.key(t)] = &t;
  std::set<std::string> seen;
  for (const auto& t : order.digest.tensors) {
    const std::string key = order.key(t);
    seen.insert(key);
    const auto it = other_by_key.find(key);
    const model::TensorDigest* ta = &order == &a ? &t : (it == other_by_key.end() ? nullptr : it->second);
    const model::TensorDigest* tb = &order == &a ? (it == other_by_key.end() ? nullptr : it->second) : &t;
    ++r.compared;
    if (!ta || !tb) {
      const bool in_a = ta != nullptr;
      Finding f = base_finding(Severity::Divergence, "checkpoint_param_missing", key,
                               "\"" + key + "\" is only in the " + (in_a ? "baseline" : "candidate"));
      f.values = {{in_a ? "baseline" : "candidate", side_json(in_a ? *ta : *tb)}};
      out.finding(f);
      r.differing.push_back(key);
      continue;
    }
    ++r.pairs;
    const bool same = ta->dtype == tb->dtype && ta->shape == tb->shape && ta->xxh3 == tb->xxh3 &&
                      ta->shard_hash == tb->shard_hash;
    const std::string layouts = "layout " + ta->layout + " vs " + tb->layout;
    Finding f = base_finding(same ? Severity::Info : Severity::Divergence,
                             same ? "checkpoint_param_equal" : "checkpoint_param_mismatch", key, "");
    f.values = {{"baseline", side_json(*ta)}, {"candidate", side_json(*tb)}};
    if (same) {
      ++r.equal;
      f.message = "\"" + key + "\" bitwise identical (" + describe(*ta) + "; " + layouts + ")";
    } else if (ta->dtype != tb->dtype || ta->shape != tb->shape) {
      f.message = "\"" + key + "\" is " + describe(*ta) + " in the baseline but " + describe(*tb) +
                  " in the candidate";
    } else {
      f.message = "\"" + key + "\" differs (" + describe(*ta) + "; " + layouts + "; shard hash " +
                  hash::to_hex(ta->shard_hash) + " vs " + hash::to_hex(tb->shard_hash) + ")";
    }
    if (!same) r.differing.push_back(key);
    out.finding(f);
  }
  for (const auto& t : other.digest.tensors) {
    const std::string key = other.key(t);
    if (seen.contains(key)) continue;
    const bool in_a = &other == &a;
    Finding f = base_finding(Severity::Divergence, "checkpoint_param_missing", key,
                             "\"" + key + "\" is only in the " + (in_a ? "baseline" : "candidate"));
    f.values = {{in_a ? "baseline" : "candidate", side_json(t)}};
    out.finding(f);
    ++r.compared;
    r.differing.push_back(key);
  }
  if (a.digest.other_entries != b.digest.other_entries) {
    out.finding(base_finding(Severity::Warning, "checkpoint_entries_differ", "",
                             "the checkpoints hold different non-tensor entries (not compared)"));
  }
  Check c;
  c.name = step ? "weights (checkpoint, step " + std::to_string(*step) + ")" : "weights (checkpoint)";
  c.outcome = r.differing.empty() ? Check::Outcome::Pass : Check::Outcome::Fail;
  c.message = std::to_string(r.equal) + " of " + std::to_string(r.compared) + " parameters bitwise identical";
  out.check(c);
  return r;
}

std::string list(const std::vector<std::string>& names, std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... (" + std::to_string(names.size() - max) + " more)";
  return s;
}

/// The warning that `step` has a checkpoint in `side` ("baseline" or "candidate") only.
Finding step_missing(std::int64_t step, const std::string& side) {
  Finding f;
  f.severity = Severity::Warning;
  f.kind = "checkpoint_step_missing";
  f.where.step = step;
  f.message = "step " + std::to_string(step) + " has a checkpoint only in the " + side;
  return f;
}

}  // namespace

bool is_checkpoint_path(const std::string& path) {
  std::error_code ec;
  if (is_single(path)) return true;
  if (!fs::is_directory(path, ec)) return false;
  if (!scan_steps(path).empty()) return true;
  return fs::is_directory(fs::path(path) / "checkpoint", ec) &&
         !scan_steps(fs::path(path) / "checkpoint").empty();
}

std::map<std::int64_t, std::string> checkpoints_by_step(const std::string& path) {
  if (is_single(path)) return {{-1, path}};
  auto steps = scan_steps(path);
  std::error_code ec;
  if (steps.empty() && fs::is_directory(fs::path(path) / "checkpoint", ec))
    steps = scan_steps(fs::path(path) / "checkpoint");
  if (steps.empty())
    throw model::InputError(path,
                            "no checkpoint here: not a DCP folder (.metadata), not a .safetensors file, "
                            "and no step-<n>/ or step-<n>.safetensors inside");
  return steps;
}

int compare_checkpoints(const std::string& baseline, const std::string& candidate,
                        const CheckpointCompareOptions& options, FindingConsumer& out) {
  const auto a = checkpoints_by_step(baseline);
  const auto b = checkpoints_by_step(candidate);
  const bool single = a.size() == 1 && a.begin()->first == -1 && b.size() == 1 && b.begin()->first == -1;
  if (!single && (a.contains(-1) || b.contains(-1)))
    throw model::InputError(
        a.contains(-1) ? baseline : candidate,
        "one side is a single checkpoint, the other a run folder of per-step checkpoints: name "
        "one checkpoint on each side");
  ReportHeader h;
  h.title = options.title;
  h.baseline = baseline;
  h.candidate = candidate;
  h.mode = "bitwise";
  h.notes.push_back(
      "checkpoints compared per parameter by dtype, shape, shard-invariant hash and XXH3-64 of the "
      "full tensor (layouts may differ)");
  out.begin(h);
  Verdict v;
  std::size_t compared = 0, equal = 0, pairs = 0, tensors_a = 0, tensors_b = 0, checkpoints = 0;
  std::vector<std::string> differing;
  nlohmann::json steps = nlohmann::json::array();
  bool any_common = false;
  for (const auto& [step, path] : a) {
    const auto it = b.find(step);
    if (it == b.end()) {
      out.finding(step_missing(step, "baseline"));
      continue;
    }
    any_common = true;
    const auto r =
        compare_one(path, it->second, step >= 0 ? std::optional(step) : std::nullopt, options, out);
    compared += r.compared;
    equal += r.equal;
    pairs += r.pairs;
    tensors_a += r.tensors_a;
    tensors_b += r.tensors_b;
    ++checkpoints;
    for (const auto& d : r.differing)
      differing.push_back(step >= 0 ? "step " + std::to_string(step) + ": " + d : d);
    steps.push_back({{"step", step},
                     {"baseline", path},
                     {"candidate", it->second},
                     {"parameters", r.compared},
                     {"identical", r.equal},
                     {"differing", r.differing}});
  }
  for (const auto& [step, path] : b) {
    if (!a.contains(step)) out.finding(step_missing(step, "candidate"));
  }
  Evidence e;
  e.what = "parameters";
  e.compared = pairs;
  EvidenceSide sa{"baseline", baseline, tensors_a, "", "", {std::string(kCheckpointFormats)}};
  EvidenceSide sb{"candidate", candidate, tensors_b, "", "", {std::string(kCheckpointFormats)}};
  if (!any_common) {
    // Nothing was opened: each side counts its checkpoints, and the rule names the reason.
    sa.items = a.size();
    sb.items = b.size();
    sa.detail = std::to_string(a.size()) + " checkpoint steps, none in the candidate";
    sb.detail = std::to_string(b.size()) + " checkpoint steps, none in the baseline";
    e.nothing_why = "the runs have no checkpoint step in common";
  } else {
    const std::string in = checkpoints == 1 ? "" : " in " + std::to_string(checkpoints) + " checkpoints";
    sa.detail = std::to_string(tensors_a) + " parameters" + in;
    sb.detail = std::to_string(tensors_b) + " parameters" + in;
    for (auto* side : {&sa, &sb})
      if (side->items == 0) side->nothing = "holds no tensor";
  }
  e.sides = {sa, sb};
  if (differing.empty()) {
    v.exit_code = 0;
    v.headline = "parity: all " + std::to_string(compared) + " parameters bitwise identical";
  } else {
    v.exit_code = 1;
    v.headline = std::to_string(compared - equal) + " of " + std::to_string(compared) +
                 " parameters differ; first: " + list(differing, options.max_params_listed);
  }
  v.summary.push_back(std::to_string(equal) + " of " + std::to_string(compared) +
                      " parameters bitwise identical");
  v.data = {{"checkpoints", steps}, {"first_differing", differing}};
  return finish_verdict(v, e, out);
}

}  // namespace gparity::diff
