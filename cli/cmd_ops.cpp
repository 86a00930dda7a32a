// `gparity ops show LOG`: one DebugMode log (core/model/ops) as a table of its records, or as
// JSON; with --kernels its kernel launches only: each argument's role and values before and after
// the launch, the output-code line and, from a trace/ beside the log (Inductor's provenance), the
// post-grad and pre-grad nodes, ATen ops and user lines. Damaged lines are listed on stderr with
// file:line (exit 1); a file with no record is exit 2.

#include <CLI/CLI.hpp>
#include <bit>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/ops/debugmode.hpp"
#include "core/model/ops/inductor_provenance.hpp"
#include "core/model/ops/kernel_launch.hpp"
#include "core/model/ops/op_run.hpp"
#include "diff/kernels/kernel_findings.hpp"
#include "diff/kernels/kernel_sites.hpp"

namespace gparity::cli {
namespace {

using model::ops::OpLog;
using model::ops::OpRecord;
using model::ops::TensorRef;

struct OpsShowOptions {
  std::string path;
  bool json = false;
  bool kernels = false;
  std::size_t limit = 0;
};

/// Artifact text for a terminal: model::display_text (controls and invalid UTF-8 as \xNN).
std::string printable(std::string_view s) {
  return model::display_text(s);
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.resize(w, ' ');
  return s;
}

nlohmann::ordered_json hash_json(const OpLog& log, const model::ops::HashValue& h) {
  using Kind = model::ops::HashValue::Kind;
  if (h.kind == Kind::Int) return h.bits;
  if (h.kind == Kind::Float) {
    const double d = std::bit_cast<double>(h.bits);
    if (std::isfinite(d)) return d;
  }
  return log.hash_text(h);
}

nlohmann::ordered_json tensor_json(const OpLog& log, const TensorRef& t) {
  nlohmann::ordered_json j;
  if (t.id >= 0) j["id"] = t.id;
  if (t.name != 0) j["name"] = log.str(t.name);
  if (t.dtype != 0) j["dtype"] = log.str(t.dtype);
  if (t.dtype != 0 || t.shape != 0) j["shape"] = log.str(t.shape);
  if (t.numel >= 0) j["numel"] = t.numel;
  if (t.placement != 0) j["placement"] = log.str(t.placement);
  if (t.unhashed != model::ops::Unhashed::No) j["unhashed"] = model::ops::unhashed_name(t.unhashed);
  if (t.hashed()) {
    nlohmann::ordered_json hashes = nlohmann::ordered_json::object();
    for (std::uint32_t i = 0; i < t.hash_count; ++i) {
      const std::string fn =
          i < log.hash_spec.functions.size() ? log.hash_spec.functions[i] : "hash" + std::to_string(i);
      hashes[fn] = hash_json(log, log.hash(t, i));
    }
    j["hashes"] = hashes;
  }
  return j;
}

nlohmann::ordered_json record_json(const OpLog& log, const OpRecord& r) {
  nlohmann::ordered_json j = {{"index", r.index},    {"line", r.line},
                              {"step", r.step},      {"phase", model::ops::phase_name(r.phase)},
                              {"depth", r.depth},    {"kind", model::ops::record_kind_name(r.kind)},
                              {"op", log.op_name(r)}};
  if (r.module != 0) j["module"] = log.str(r.module);
  if (r.source != 0) j["source"] = model::ops::source_json<nlohmann::ordered_json>(log, r.source);
  nlohmann::ordered_json args = nlohmann::ordered_json::array();
  for (std::uint32_t i = 0; i < r.arg_count; ++i) args.push_back(tensor_json(log, log.arg(r, i)));
  j["args"] = args;
  nlohmann::ordered_json outs = nlohmann::ordered_json::array();
  for (std::uint32_t i = 0; i < r.out_count; ++i) outs.push_back(tensor_json(log, log.out(r, i)));
  j["outputs"] = outs;
  if (r.output_hash_unreliable) j["output_hash_unreliable"] = true;
  if (r.group != 0) {
    // The process group a collective names (op records' "group", a functional collective's
    // group_name), with its members where the log lists them.
    j["group"] = log.str(r.group);
    if (const auto it = log.group_ranks.find(r.group); it != log.group_ranks.end())
      j["group_ranks"] = it->second;
  }
  if (r.hash_noise) j["hash_noise"] = true;
  return j;
}

std::string outputs_text(const OpLog& log, const OpRecord& r) {
  std::string s;
  for (std::uint32_t i = 0; i < r.out_count; ++i) {
    const TensorRef& t = log.out(r, i);
    if (!s.empty()) s += ", ";
    if (t.id >= 0) s += "$" + std::to_string(t.id) + " ";
    if (t.name != 0 && t.dtype == 0) s += std::string(log.str(t.name)) + " ";
    s += log.tensor_text(t);
  }
  return s;
}

std::string hashes_text(const OpLog& log, const OpRecord& r) {
  std::string s;
  for (std::uint32_t i = 0; i < r.out_count; ++i) {
    const TensorRef& t = log.out(r, i);
    if (!s.empty()) s += ", ";
    if (!t.hashed()) {
      s += t.unhashed != model::ops::Unhashed::No ? "-" + std::string(model::ops::unhashed_name(t.unhashed))
                                                  : "-";
      continue;
    }
    for (std::uint32_t k = 0; k < t.hash_count; ++k) s += (k ? "/" : "") + log.hash_text(log.hash(t, k));
  }
  if (r.output_hash_unreliable && !s.empty()) s += " (before wait)";
  return s;
}

/// One tensor's hashes as the log printed them ("-" when none).
std::string hash_list(const OpLog& log, const TensorRef& t) {
  if (!t.hashed()) return "-";
  std::string s;
  for (std::uint32_t k = 0; k < t.hash_count; ++k) s += (k ? "/" : "") + log.hash_text(log.hash(t, k));
  return s;
}

/// A launch's written value of argument `name` (its post-kernel hash), or nullptr.
const TensorRef* written(const OpLog& log, const OpRecord& r, std::uint32_t name) {
  for (std::uint32_t i = 0; i < r.out_count; ++i)
    if (log.out(r, i).name == name) return &log.out(r, i);
  return nullptr;
}

/// The kernel launches of a log, their arguments by role, and their provenance where a trace/
/// lies beside the log.
int show_kernels(const OpLog& log, const OpsShowOptions& o) {
  model::ops::RunProvenance prov;
  std::string prov_note = "no trace/ beside the log: no provenance";
  if (const std::string dir = model::ops::find_provenance_dir(o.path); !dir.empty()) {
    try {
      prov = model::ops::read_provenance(dir);
      prov_note = "provenance from " + dir;
    } catch (const model::InputError& e) {
      std::cerr << "gparity: warning: " << printable(e.what()) << " (kernels shown without provenance)\n";
    }
  }
  const model::ops::RankProvenance* rank = prov.rank(log.rank);
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  const bool colour = colour_enabled(stdout);
  std::size_t shown = 0, total = 0;
  std::string text;
  for (const auto& slice : diff::ops::slices_of(log)) {
    const auto launches = diff::kernels::step_launches(slice);
    const auto sites = diff::kernels::map_sites(slice, launches, rank);
    for (std::size_t i = 0; i < launches.size(); ++i) {
      const OpRecord& r = slice.at(launches[i]);
      if (!model::ops::is_kernel(r)) continue;
      ++total;
      if (o.limit > 0 && shown >= o.limit) continue;
      ++shown;
      const auto& site = sites[i];
      const std::int64_t line = site.known() ? site.site->line : model::ops::launch_line(log, r);
      nlohmann::ordered_json args = nlohmann::ordered_json::array();
      text += paint("step " + std::to_string(r.step) + "  #" + std::to_string(r.index) + "  line " +
                        std::to_string(r.line) + "  " + printable(log.op_name(r)),
                    Colour::Bold, colour) +
              (line > 0 ? "  (output code line " + std::to_string(line) + ")" : std::string()) + "\n";
      for (std::uint32_t a = 0; a < r.arg_count; ++a) {
        const TensorRef& t = log.arg(r, a);
        const auto role = model::ops::launch_arg_role(log, t);
        const TensorRef* after = written(log, r, t.name);
        nlohmann::ordered_json j = {{"name", log.str(t.name)},
                                    {"role", model::ops::arg_role_name(role)},
                                    {"tensor", log.tensor_text(t)}};
        // An out_ptr's value before the launch is whatever its buffer held: not shown as an input.
        if (model::ops::kernel_reads(role)) j["before"] = hash_list(log, t);
        if (after) j["after"] = hash_list(log, *after);
        args.push_back(j);
        text += "    " + pad(std::string(model::ops::arg_role_name(role)), 8) +
                pad(printable(log.str(t.name)), 13) + pad(printable(log.tensor_text(t)), 20) +
                (model::ops::kernel_reads(role) ? hash_list(log, t) : std::string()) +
                (after ? " -> " + hash_list(log, *after) : std::string()) + "\n";
      }
      if (const std::string p = diff::kernels::provenance_text(site); !p.empty())
        text += "    " + printable(p.substr(2)) + "\n";
      nlohmann::ordered_json k = {{"step", r.step},
                                  {"index", r.index},
                                  {"line", r.line},
                                  {"kernel", log.op_name(r)},
                                  {"family", model::ops::kernel_family(log.op_name(r))},
                                  {"launch_line", line},
                                  {"args", args}};
      k["provenance"] = nlohmann::ordered_json::parse(diff::kernels::provenance_json(site).dump());
      kernels.push_back(k);
    }
  }
  if (o.json) {
    nlohmann::ordered_json out = {
        {"path", log.path},
        {"rank", log.rank},
        {"hash_functions", log.hash_spec.functions},
        {"provenance", prov.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(prov.dir)},
        {"kernel_launches", total},
        {"kernels", kernels}};
    std::cout << model::json_output(out) << '\n';
  } else {
    std::cout << paint(printable(log.path), Colour::Bold, colour) << " (rank " << log.rank << ", " << total
              << " kernel launches of " << log.records.size() << " records; " << printable(prov_note) << ")\n"
              << text;
    if (shown < total) std::cout << "... " << total - shown << " more kernel launches (--limit)\n";
  }
  return log.issues.empty() ? kExitParity : kExitDivergence;
}

int show(const OpsShowOptions& o) {
  const auto run = model::ops::open_op_run(o.path);
  if (run.files.size() != 1)
    throw model::InputError(
        o.path, "a folder of " + std::to_string(run.files.size()) + " logs: name one of its files");
  const OpLog log = model::ops::read_op_run_file(run.files.front());
  for (const auto& i : log.issues)
    std::cerr << "gparity: warning: " << printable(log.path) << ':' << i.line << ": " << printable(i.problem)
              << '\n';
  if (log.records.empty()) throw model::InputError(o.path, "no DebugMode record in this file");
  if (o.kernels) return show_kernels(log, o);
  const std::size_t n = o.limit > 0 ? std::min(o.limit, log.records.size()) : log.records.size();
  if (o.json) {
    nlohmann::ordered_json out = {{"path", log.path},          {"rank", log.rank},
                                  {"format", log.format},      {"hash_functions", log.hash_spec.functions},
                                  {"steps", log.steps},        {"records", log.records.size()},
                                  {"truncated", log.truncated}};
    nlohmann::ordered_json issues = nlohmann::ordered_json::array();
    for (const auto& i : log.issues) issues.push_back({{"line", i.line}, {"problem", i.problem}});
    out["issues"] = issues;
    nlohmann::ordered_json recs = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < n; ++i) recs.push_back(record_json(log, log.records[i]));
    out["ops"] = recs;
    std::cout << model::json_output(out) << '\n';
  } else {
    const bool colour = colour_enabled(stdout);
    std::cout << paint(printable(log.path), Colour::Bold, colour) << " (" << log.format << ", rank "
              << log.rank << ", " << log.records.size() << " records, hashes: " << log.hash_spec.text()
              << ")\n";
    std::cout << pad("step", 5) << pad("#", 6) << pad("line", 7) << pad("phase", 10) << pad("op", 44)
              << pad("outputs", 34) << pad("hash", 24) << "source  module\n";
    for (std::size_t i = 0; i < n; ++i) {
      const OpRecord& r = log.records[i];
      std::string op(r.depth > 1 ? 2 * (r.depth - 1) : 0, ' ');
      op += log.op_name(r);
      if (r.hash_noise) op += " (hashing)";
      std::cout << pad(std::to_string(r.step), 5) << pad(std::to_string(r.index), 6)
                << pad(std::to_string(r.line), 7) << pad(std::string(model::ops::phase_name(r.phase)), 10)
                << pad(printable(op), 44) << pad(printable(outputs_text(log, r)), 34) << ' '
                << pad(printable(hashes_text(log, r)), 24) << ' ' << printable(log.source_text(r)) << "  "
                << printable(log.str(r.module)) << '\n';
    }
    if (n < log.records.size()) std::cout << "... " << log.records.size() - n << " more records (--limit)\n";
  }
  return log.issues.empty() ? kExitParity : kExitDivergence;
}

}  // namespace

void register_ops(CLI::App& app, Action& action) {
  CLI::App* ops =
      app.add_subcommand("ops", "Op-level logs: PyTorch DebugMode debug_string() text (docs/ops.md)");
  ops->require_subcommand(1);
  auto o = std::make_shared<OpsShowOptions>();
  CLI::App* show_cmd = ops->add_subcommand(
      "show",
      "Print one DebugMode log (rank<r>_step<s>.debug.txt) as a table of its records: step, index, file "
      "line, phase, op, outputs, output hashes, source line, nn.Module. Unreadable lines are listed on "
      "stderr (exit 1); a file with no record is exit 2.");
  show_cmd->add_option("LOG", o->path, "A DebugMode log file")->required();
  show_cmd->add_flag("--json", o->json, "The records as JSON");
  show_cmd->add_flag(
      "--kernels", o->kernels,
      "Only the kernel launches ([triton] lines): each argument's role (in_ptr, out_ptr, in_out_ptr) "
      "and values before and after the launch, the output-code line, and from a trace/ beside the "
      "log (TORCH_TRACE with Inductor's provenance) the kernel's post-grad and pre-grad nodes, ATen "
      "ops and user lines");
  show_cmd->add_option("--limit", o->limit, "Print at most N records");
  show_cmd->callback([o, &action] { action = [o] { return show(*o); }; });
}

}  // namespace gparity::cli
