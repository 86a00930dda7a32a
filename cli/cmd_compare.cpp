// `gparity compare BASELINE CANDIDATE`: step-by-step, rank-by-rank parity of two runs.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/report_options.hpp"
#include "diff/resolve/inputs.hpp"
#include "diff/runs/run_compare.hpp"

namespace gparity::cli {
namespace {

struct CompareArgs {
  std::string baseline;
  std::string candidate;
  ReportOptions report;
  std::uint64_t ulp = 0;
  double rtol = 0;
  double atol = 0;
  std::int64_t first_step = 0;
  std::int64_t last_step = 0;
  unsigned threads = 0;
  bool allow_incomplete = false;
};

}  // namespace

void add_report_options(CLI::App& cmd, ReportOptions& r) {
  cmd.add_flag("--json", r.json, "Machine-readable JSON on stdout instead of text");
  cmd.add_option("--junit", r.junit, "Also write JUnit XML (a test case per check and rank) to FILE");
  cmd.add_option("--markdown", r.markdown, "Also write a Markdown report (CI job summary) to FILE");
  cmd.add_option("--json-file", r.json_file, "Also write the JSON report to FILE");
  cmd.add_option("--html", r.html, "Also write a self-contained HTML report to FILE");
  cmd.add_flag("-v,--verbose", r.verbose, "Show informational findings too");
}

void add_allow_incomplete(CLI::App& cmd, bool& flag) {
  cmd.add_flag("--allow-incomplete", flag,
               "Do not fail on missing evidence (failure events, killed or missing ranks, declared steps not "
               "recorded): still reported, and every report names this flag. Nothing compared stays exit 2");
}

void register_compare(CLI::App& app, Action& action) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare a candidate run against its baseline by rank and step: loss, grad norm and every "
      "parameter hash, bitwise unless a tolerance is named. Runs: trace directories (docs/trace-format.md), "
      "folders of reference rank<r>.jsonl files, TensorBoard event files (events.out.tfevents.*, or "
      "folders of them / of rank_<r>/ folders), or torchtitan console logs (rounded: cannot prove "
      "bitwise parity). Exit 0 parity, 1 divergence or INCOMPLETE evidence (failure events, killed or "
      "missing ranks, declared steps not recorded; docs/gate.md), 2 bad input or nothing compared. "
      "Checkpoints (DCP folders, .safetensors files, or run folders of step-<n> "
      "checkpoints) are compared per parameter, whatever their parallel layout (docs/checkpoints.md). "
      "PyTorch DebugMode op logs (folders of rank<r>_step<s>.debug.txt, or one log) are aligned op by op, "
      "eager against compiled: the first divergent op per rank, its cause and its compiled counterparts "
      "(docs/ops.md).");
  cmd->add_option("BASELINE", a->baseline, "Baseline run")->required();
  cmd->add_option("CANDIDATE", a->candidate, "Candidate run")->required();
  auto* ulp = cmd->add_option("--ulp", a->ulp, "Accept loss/grad_norm within N ULP (named in the report)");
  auto* rtol = cmd->add_option("--rtol", a->rtol, "Accept loss/grad_norm within relative tolerance X");
  auto* atol = cmd->add_option("--atol", a->atol, "Accept loss/grad_norm within absolute tolerance X");
  auto* first = cmd->add_option("--first-step", a->first_step, "Compare from this step on");
  auto* last = cmd->add_option("--last-step", a->last_step, "Compare up to this step");
  cmd->add_option("--threads", a->threads, "Worker threads over ranks (0: all cores)");
  add_allow_incomplete(*cmd, a->allow_incomplete);
  add_report_options(*cmd, a->report);
  cmd->callback([a, ulp, rtol, atol, first, last, &action] {
    diff::CompareOptions o;
    if (ulp->count()) o.tolerance.ulp = a->ulp;
    if (rtol->count()) o.tolerance.rtol = a->rtol;
    if (atol->count()) o.tolerance.atol = a->atol;
    if (first->count()) o.first_step = a->first_step;
    if (last->count()) o.last_step = a->last_step;
    o.threads = a->threads;
    o.allow_incomplete = a->allow_incomplete;
    action = [a, o] {
      // Which comparison runs: diff/resolve (the gate and gparity-view decide alike).
      const std::string paths[] = {a->baseline, a->candidate};
      const auto in = diff::resolve_inputs(paths, diff::ResolveFor::Compare);
      ReportSinks sinks(a->report, "gparity.compare");
      return diff::compare_inputs(in, o, sinks.consumer());
    };
  });
}

}  // namespace gparity::cli
