// `gparity gate`: the CI parity gate. Compares a candidate run against its baseline under a
// policy (docs/gate.md) and always writes JUnit XML, Markdown and JSON reports.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/report_options.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/output_error.hpp"
#include "diff/gate/gate_policy.hpp"
#include "diff/resolve/inputs.hpp"

namespace gparity::cli {
namespace {

/// The policy's required op-level comparison (docs/ops.md), under its own title: both inputs
/// must resolve as op logs (diff/resolve, as the gate's main comparison and `compare` do).
int gate_ops(const std::string& baseline, const std::string& candidate, bool allow_incomplete, bool kernels,
             const ReportOptions& r) {
  const std::string paths[] = {baseline, candidate};
  const auto in = diff::resolve_inputs(paths, diff::ResolveFor::Compare);
  if (in.kind != diff::InputKind::OpLogs)
    throw model::InputError(baseline, "not op logs (gparity op records or DebugMode logs) but " +
                                          std::string(diff::input_kind_name(in.kind)) +
                                          ": the gate's \"ops\" compares op runs (docs/ops.md)");
  ReportSinks sinks(r, "gparity.gate.ops");
  diff::CompareOptions o;
  o.title = "gparity gate (op-level parity)";
  o.allow_incomplete = allow_incomplete;
  // With kernels required, a side without kernel launches on every rank is no kernel evidence
  // (checked on the logs the comparison reads: exit 2 naming run and rank).
  o.require_kernels = kernels;
  return diff::compare_inputs(in, o, sinks.consumer());
}

/// The worse of two exit codes: 2 (nothing usable) over 1 (divergence) over 0.
int worse(int a, int b) {
  return std::max(a, b);
}

struct GateArgs {
  std::string policy;
  std::string baseline;
  std::string candidate;
  std::string out_dir = "gparity-gate";
  bool allow_incomplete = false;
  ReportOptions report;
};

}  // namespace

void register_gate(CLI::App& app, Action& action) {
  auto a = std::make_shared<GateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gate",
      "CI parity gate: compare --candidate against --baseline (bitwise, every rank, step and parameter) or "
      "as a "
      "policy file says (docs/gate.md); writes JUnit XML, Markdown and JSON reports. Exit 0 parity, 1 "
      "divergence or incomplete evidence (a failure, a killed or missing rank, a declared step not recorded, "
      "a policy minimum not met), 2 bad input or nothing compared.");
  cmd->add_option("--policy", a->policy, "Policy file (JSON, docs/gate.md)");
  cmd->add_option("--baseline", a->baseline, "Baseline run (overrides the policy)");
  cmd->add_option("--candidate", a->candidate, "Candidate run (overrides the policy)");
  cmd->add_option(
         "--out", a->out_dir,
         "Folder for the reports the policy does not place: junit.xml, report.md, report.json, report.html")
      ->capture_default_str();
  add_allow_incomplete(*cmd, a->allow_incomplete);
  add_report_options(*cmd, a->report);
  cmd->callback([a, &action] {
    action = [a] {
      diff::GatePolicy p;
      if (!a->policy.empty()) p = diff::load_gate_policy(a->policy);
      // A run named on the command line exists already: its policy command is not run.
      if (!a->baseline.empty()) {
        p.baseline = a->baseline;
        p.baseline_command.clear();
      }
      if (!a->candidate.empty()) {
        p.candidate = a->candidate;
        p.candidate_command.clear();
      }
      if (p.baseline.empty() || p.candidate.empty()) {
        throw model::InputError("gate",
                                "name the runs: --baseline and --candidate, or a --policy file with both");
      }
      ReportOptions r = a->report;
      const std::filesystem::path out(a->out_dir);
      const auto pick = [&out](std::string& flag, const std::string& policy, const char* name) {
        if (flag.empty()) flag = policy.empty() ? (out / name).string() : policy;
      };
      pick(r.junit, p.junit, "junit.xml");
      pick(r.markdown, p.markdown, "report.md");
      pick(r.json_file, p.json, "report.json");
      pick(r.html, p.html, "report.html");
      for (const auto& f : {r.junit, r.markdown, r.json_file, r.html}) {
        const auto parent = std::filesystem::path(f).parent_path();
        std::error_code ec;
        if (!parent.empty()) std::filesystem::create_directories(parent, ec);
        if (ec)
          throw model::OutputError(f, "cannot create its folder " + parent.string() + ": " + ec.message());
      }
      p.options.title = "gparity gate";
      p.options.allow_incomplete = p.options.allow_incomplete || a->allow_incomplete;
      for (const auto& [argv, which] : {std::pair{&p.baseline_command, "baseline command"},
                                        std::pair{&p.candidate_command, "candidate command"}}) {
        if (argv->empty()) continue;
        std::cerr << "gate: running the " << which << " (in "
                  << model::shown(p.command_dir.empty() ? "." : p.command_dir) << ")\n";
        diff::run_gate_command(*argv, p.command_dir, a->policy + ": " + which);
      }
      // Which comparison runs (op logs, checkpoints, runs): diff/resolve, as for `compare`.
      const std::string paths[] = {p.baseline, p.candidate};
      const auto in = diff::resolve_inputs(paths, diff::ResolveFor::Compare);
      int rc = 0;
      {
        ReportSinks sinks(r, in.kind == diff::InputKind::OpLogs ? "gparity.gate.ops" : "gparity.gate");
        rc = diff::compare_inputs(in, p.options, sinks.consumer());
      }
      if (!r.json)
        std::cout << "reports: " << model::shown(r.junit) << ", " << model::shown(r.markdown) << ", "
                  << model::shown(r.json_file) << ", " << model::shown(r.html) << '\n';
      if (p.requires_ops()) {
        // Op-level parity required too: its own reports beside the others, the worse exit wins.
        ReportOptions ro = r;
        const auto beside = [](const std::string& f, const char* name) {
          return (std::filesystem::path(f).parent_path() / name).string();
        };
        ro.junit = beside(r.junit, "ops-junit.xml");
        ro.markdown = beside(r.markdown, "ops-report.md");
        ro.json_file = beside(r.json_file, "ops-report.json");
        ro.html = beside(r.html, "ops-report.html");
        if (r.json) {
          ro.json = false;
          ro.terminal = &std::cerr;
        }
        rc = worse(rc,
                   gate_ops(p.ops_baseline, p.ops_candidate, p.options.allow_incomplete, p.ops_kernels, ro));
        if (!r.json)
          std::cout << "op-level reports: " << model::shown(ro.junit) << ", " << model::shown(ro.markdown)
                    << ", " << model::shown(ro.json_file) << ", " << model::shown(ro.html) << '\n';
      }
      return rc;
    };
  });
}

}  // namespace gparity::cli
