#include "diff/resolve/inputs.hpp"

#include <filesystem>
#include <optional>

#include "core/model/base/input_error.hpp"
#include "diff/checkpoints/checkpoint_compare.hpp"
#include "diff/ops/op_compare.hpp"

namespace gparity::diff {

std::string_view input_kind_name(InputKind k) noexcept {
  switch (k) {
    case InputKind::OpLogs: return "op logs";
    case InputKind::Checkpoints: return "checkpoints";
    case InputKind::Runs: return "runs";
    case InputKind::ReplayRun: return "replay run";
    case InputKind::Collectives: return "collectives";
  }
  return "?";
}

bool is_run_input(const std::string& path) {
  try {
    (void)model::open_run(path);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool is_replay_run(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return false;
  try {
    const auto run = model::open_run(path);
    const auto rep = run.manifest.extra.find("replay");
    return rep != run.manifest.extra.end() && rep->is_object() &&
           (rep->value("coor", false) || rep->contains("against"));
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

ResolvedInputs resolved(InputKind kind, std::span<const std::string> paths) {
  return {kind, {paths.begin(), paths.end()}, {}, {}};
}

}  // namespace

ResolvedInputs resolve_inputs(std::span<const std::string> paths, ResolveFor who) {
  const bool view = who == ResolveFor::View;
  if (paths.empty() || paths.size() > 2 || (!view && paths.size() != 2))
    throw model::InputError(
        "", view ? "open one or two paths" : "compare two inputs: a baseline and a candidate");
  if (paths.size() == 2) {
    const std::string& a = paths[0];
    const std::string& b = paths[1];
    const bool ops_a = model::ops::is_op_log_path(a), ops_b = model::ops::is_op_log_path(b);
    if (ops_a || ops_b) {
      if (!ops_a || !ops_b)
        throw model::InputError(ops_a ? b : a,
                                "not op logs (DebugMode logs or gparity op records), but the other side "
                                "is: compare op logs with op logs");
      ResolvedInputs in = resolved(InputKind::OpLogs, paths);
      for (const auto& p : paths) in.op_runs.push_back(model::ops::open_op_run(p));
      return in;
    }
    if (is_checkpoint_path(a) && is_checkpoint_path(b)) return resolved(InputKind::Checkpoints, paths);
  }
  if (view && paths.size() == 1 && is_replay_run(paths[0])) return resolved(InputKind::ReplayRun, paths);
  if (paths.size() == 2) {
    // Runs, or the error of the first input that is none (naming it). The viewer goes on to
    // collectives only when neither input is a run.
    ResolvedInputs in = resolved(InputKind::Runs, paths);
    std::optional<model::InputError> first_error;
    for (const auto& p : paths) {
      try {
        in.runs.push_back(model::open_run(p));
      } catch (const model::InputError& e) {
        if (!first_error) first_error = e;
      }
    }
    if (!first_error) return in;
    if (!view || !in.runs.empty()) throw *first_error;
  }
  // The viewer: Flight Recorder dumps and pickles, TORCH_TRACE collectives; their reader decides
  // (and names a file it cannot read, the baseline first).
  return resolved(InputKind::Collectives, paths);
}

int compare_inputs(const ResolvedInputs& in, const CompareOptions& o, FindingConsumer& out) {
  switch (in.kind) {
    case InputKind::OpLogs: {
      ops::OpCompareOptions oo;
      oo.title = o.title;
      oo.allow_incomplete = o.allow_incomplete;
      oo.require_kernels = o.require_kernels;
      return ops::compare_op_runs(in.op_runs.at(0), in.op_runs.at(1), oo, out);
    }
    case InputKind::Checkpoints:
      return compare_checkpoints(in.paths[0], in.paths[1], {o.threads, o.title}, out);
    case InputKind::Runs: return compare_runs(in.runs.at(0), in.runs.at(1), o, out);
    case InputKind::ReplayRun:
    case InputKind::Collectives: break;
  }
  throw model::InputError(in.paths.empty() ? std::string() : in.paths.back(),
                          std::string(input_kind_name(in.kind)) +
                              " have no two-sided comparison here (gparity replay, gparity collectives)");
}

}  // namespace gparity::diff
