// `gparity buckets BASELINE CANDIDATE`: bucket plans from trace "buckets" records or FSDP2
// parameter groups (rank<r>_meta.json): same partition? same member order? each moved member's
// byte offset in both. Everything is computed in diff/buckets; this file parses options.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/report_options.hpp"
#include "core/model/base/dtype.hpp"
#include "core/model/base/input_error.hpp"
#include "diff/runs/buckets.hpp"

namespace gparity::cli {
namespace {

struct BucketsArgs {
  std::string baseline, candidate;
  bool derive = false;
  std::string dtype = "float32";
  std::int32_t world = 0;
  ReportOptions report;
};

}  // namespace

void register_buckets(CLI::App& app, Action& action) {
  auto a = std::make_shared<BucketsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "buckets",
      "Compare two bucket plans: trace directories / rank-<r>.jsonl files with \"buckets\" records, or "
      "sample folders / rank<r>_meta.json files (FSDP2 parameter groups). Same partition? same member "
      "order? byte offsets of moved members. Exit 0 same, 1 different, 2 bad input.");
  cmd->add_option("BASELINE", a->baseline, "Baseline plan(s)")->required();
  cmd->add_option("CANDIDATE", a->candidate, "Candidate plan(s)")->required();
  cmd->add_flag(
      "--derive", a->derive,
      "Meta files: derive eager FSDP2's packing order from registration order instead of the listed one");
  cmd->add_option("--dtype", a->dtype,
                  "Meta files: element type when no rank<r>.jsonl says (default float32)");
  cmd->add_option("--world", a->world, "Meta files: world size when the file does not say");
  add_report_options(*cmd, a->report);
  cmd->callback([a, &action] {
    action = [a] {
      diff::BucketLoadOptions o;
      o.derive = a->derive;
      o.world = a->world;
      const auto dt = model::parse_dtype(a->dtype);
      if (!dt) throw model::InputError("--dtype", "unknown dtype '" + a->dtype + "'");
      o.dtype = *dt;
      const auto base = diff::load_bucket_plans(a->baseline, o);
      const auto cand = diff::load_bucket_plans(a->candidate, o);
      ReportSinks sinks(a->report, "gparity.buckets");
      return diff::report_buckets(base, cand, sinks.consumer());
    };
  });
}

}  // namespace gparity::cli
