#include "diff/runs/bucket_plans_read.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/format_detect.hpp"
#include "core/model/formats/import_samples.hpp"
#include "core/model/run/trace_reader.hpp"

namespace gparity::diff {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using model::InputError;

/// rank<r>_meta.json / rank-<r>.jsonl -> r; -1 when the name carries none.
std::int32_t rank_in_name(const std::string& name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return -1;
  std::int32_t r = 0;
  std::size_t i = prefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && r < 1'000'000; ++i)
    r = r * 10 + (name[i] - '0');
  return r;
}

std::int64_t padded_shard_elems(std::span<const std::int64_t> shape, std::int32_t world) {
  if (shape.empty()) return 1;
  std::int64_t row = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) row *= shape[d];
  return (shape[0] + world - 1) / world * row;
}

std::vector<std::int64_t> shape_of(const Json& j, const std::string& source) {
  if (!j.is_array()) throw InputError(source, "a shape must be a list of integers");
  std::vector<std::int64_t> s;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0 ||
        d.get<std::int64_t>() > (std::int64_t{1} << 40))
      throw InputError(source, "a shape must be a list of non-negative integers");
    s.push_back(d.get<std::int64_t>());
  }
  return s;
}

std::vector<std::string> strings_of(const Json& j, const std::string& source, const char* what) {
  if (!j.is_array()) throw InputError(source, std::string(what) + " must be a list of names");
  std::vector<std::string> out;
  for (const auto& x : j) {
    if (!x.is_string()) throw InputError(source, std::string(what) + " must be a list of names");
    out.push_back(x.get<std::string>());
  }
  return out;
}

BucketPlan read_meta_plan(const fs::path& path, const BucketLoadOptions& o) {
  const std::string source = path.string();
  const model::MappedFile file(source);
  const Json j = model::parse_json(file.text(), source);
  if (!j.is_object()) throw InputError(source, "a meta file is a JSON object");
  const std::int32_t rank = rank_in_name(path.filename().string(), "rank");

  // Parameters known from the sample's rank<r>.jsonl beside the meta file: dtype and shape.
  std::unordered_map<std::string, model::ParamInfo> known;
  const fs::path jsonl = path.parent_path() / ("rank" + std::to_string(std::max(rank, 0)) + ".jsonl");
  std::error_code ec;
  if (rank >= 0 && fs::exists(jsonl, ec)) {
    const auto t = model::import_sample_rank(jsonl.string(), rank);
    if (!t.params_tables.empty())
      for (const auto& p : t.params_tables.front().params) known.emplace(p.fqn, p);
  }

  std::int32_t world = o.world;
  if (world <= 0 && j.contains("world")) {
    if (!j["world"].is_number_integer() || j["world"].get<std::int64_t>() < 1 ||
        j["world"].get<std::int64_t>() > 1 << 20)
      throw InputError(source, "\"world\" must be a positive integer");
    world = j["world"].get<std::int32_t>();
  }
  if (world <= 0) throw InputError(source, "no \"world\" in the file: give --world");
  if (!j.contains("registration_order")) throw InputError(source, "no \"registration_order\"");
  const auto registration = strings_of(j["registration_order"], source, "registration_order");
  if (!j.contains("fsdp_buckets") || !j["fsdp_buckets"].is_array())
    throw InputError(source, "no \"fsdp_buckets\" list (the FSDP2 parameter groups)");

  std::unordered_map<std::string, std::vector<std::int64_t>> shapes;
  std::vector<FsdpGroup> groups;
  for (const auto& b : j["fsdp_buckets"]) {
    if (!b.is_object() || !b.contains("module") || !b["module"].is_string())
      throw InputError(source, "every fsdp_buckets entry needs a \"module\" string");
    FsdpGroup g;
    g.module = b["module"].get<std::string>();
    if (b.contains("params")) g.params = strings_of(b["params"], source, "params");
    if (b.contains("shapes")) {
      if (!b["shapes"].is_array() || b["shapes"].size() != g.params.size())
        throw InputError(source, "module '" + g.module + "': \"shapes\" must have one shape per param");
      for (std::size_t i = 0; i < g.params.size(); ++i)
        shapes[g.params[i]] = shape_of(b["shapes"][i], source);
    }
    if (o.derive) g.params.clear();
    groups.push_back(std::move(g));
  }
  std::vector<FsdpParam> params;
  model::DType dtype = o.dtype;
  bool dtype_known = false;
  for (const auto& fqn : registration) {
    FsdpParam p{fqn, {}};
    if (const auto it = shapes.find(fqn); it != shapes.end()) {
      p.shape = it->second;
    } else if (const auto k = known.find(fqn); k != known.end()) {
      p.shape = k->second.global_shape;
    } else {
      throw InputError(source, "no shape for parameter '" + fqn + "'");
    }
    if (const auto k = known.find(fqn); k != known.end() && !dtype_known) {
      dtype = k->second.dtype;
      dtype_known = true;
    }
    params.push_back(std::move(p));
  }
  bool derived = o.derive;
  for (const auto& g : groups) derived = derived || g.params.empty();
  auto plan = derive_fsdp2_plan(params, groups, dtype, world, source);
  plan.rank = std::max(rank, 0);
  plan.origin = std::string(derived ? "FSDP2 plan derived from registration order" : "FSDP2 packing order") +
                " (world " + std::to_string(world) + ", " + std::string(model::dtype_name(dtype)) +
                (dtype_known ? "" : " assumed") + ")";
  return plan;
}

std::vector<BucketPlan> trace_plans(const model::RankTrace& t, const std::string& source) {
  std::vector<BucketPlan> out;
  for (std::size_t r = 0; r < t.buckets.size(); ++r) {
    const auto& rec = t.buckets[r];
    std::vector<std::string> names;
    if (const auto it = rec.extra.find("bucket_names"); it != rec.extra.end() && it->is_array())
      for (const auto& n : *it) names.push_back(n.is_string() ? n.get<std::string>() : "");
    std::string order;
    if (const auto it = rec.extra.find("order"); it != rec.extra.end() && it->is_string())
      order = it->get<std::string>();
    for (const auto& g : rec.groups) {
      BucketPlan p;
      p.rank = t.rank;
      p.label =
          source + (t.buckets.size() > 1 ? " record " + std::to_string(r + 1) : "") + " group " + g.group;
      p.origin = "trace buckets record" + (order.empty() ? "" : " (" + order + " order)");
      for (std::size_t b = 0; b < g.buckets.size(); ++b) {
        const auto& bk = g.buckets[b];
        PlanBucket pb;
        pb.name =
            names.size() == g.buckets.size() && !names[b].empty() ? names[b] : "bucket " + std::to_string(b);
        pb.collective = bk.collective;
        pb.dtype = std::string(model::dtype_name(bk.dtype));
        for (const auto& m : bk.members) pb.members.push_back({m.fqn, m.offset_bytes, m.size_bytes});
        p.buckets.push_back(std::move(pb));
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

void add_trace_file(BucketPlans& out, const fs::path& file, std::int32_t rank) {
  const auto t = model::read_rank_trace(file.string(), rank);
  for (const auto& issue : t.issues) out.problems.push_back(issue.text());
  for (auto& p : trace_plans(t, file.string())) out.plans.push_back(std::move(p));
}

}  // namespace

BucketPlan derive_fsdp2_plan(std::span<const FsdpParam> registration, std::span<const FsdpGroup> groups,
                             model::DType dtype, std::int32_t world, const std::string& label) {
  if (world < 1) throw InputError(label, "world size must be positive");
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < registration.size(); ++i) index.emplace(registration[i].fqn, i);
  // Which group owns each parameter: listed members first, then the deepest module prefix.
  std::vector<std::ptrdiff_t> owner(registration.size(), -1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const auto& fqn : groups[g].params) {
      const auto it = index.find(fqn);
      if (it == index.end())
        throw InputError(label, "module '" + groups[g].module + "' lists unknown parameter '" + fqn + "'");
      if (owner[it->second] >= 0) throw InputError(label, "parameter '" + fqn + "' is in two FSDP2 groups");
      owner[it->second] = static_cast<std::ptrdiff_t>(g);
    }
  for (std::size_t i = 0; i < registration.size(); ++i) {
    if (owner[i] >= 0) continue;
    std::size_t best_len = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (!groups[g].params.empty()) continue;
      const auto& mod = groups[g].module;
      const bool under = mod.empty() || registration[i].fqn.starts_with(mod + ".");
      if (under && (owner[i] < 0 || mod.size() > best_len)) {
        owner[i] = static_cast<std::ptrdiff_t>(g);
        best_len = mod.size();
      }
    }
  }
  BucketPlan plan;
  plan.label = label;
  const auto elem = static_cast<std::int64_t>(model::dtype_size(dtype));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    PlanBucket b;
    b.name = groups[g].module.empty() ? "root" : groups[g].module;
    b.collective = "reduce_scatter";
    b.dtype = std::string(model::dtype_name(dtype));
    std::vector<std::size_t> members;
    if (!groups[g].params.empty()) {
      for (const auto& fqn : groups[g].params) members.push_back(index.at(fqn));
    } else {
      for (std::size_t i = 0; i < registration.size(); ++i)
        if (owner[i] == static_cast<std::ptrdiff_t>(g)) members.push_back(i);
    }
    std::int64_t offset = 0;
    for (auto i : members) {
      const std::int64_t size = padded_shard_elems(registration[i].shape, world) * elem;
      b.members.push_back({registration[i].fqn, offset, size});
      offset += size;
    }
    plan.buckets.push_back(std::move(b));
  }
  return plan;
}

BucketPlans load_bucket_plans(const std::string& path, const BucketLoadOptions& options) {
  BucketPlans out;
  out.path = path;
  const fs::path p(path);
  std::error_code ec;
  const model::PathKind kind = model::path_kind(p);
  if (kind == model::PathKind::Directory) {
    std::vector<std::pair<std::int32_t, fs::path>> metas, traces;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (model::path_kind(e.path()) != model::PathKind::Regular) continue;  // a loop throws
      const auto name = e.path().filename().string();
      if (name.ends_with("_meta.json") && rank_in_name(name, "rank") >= 0)
        metas.emplace_back(rank_in_name(name, "rank"), e.path());
      if (name.ends_with(".jsonl") && rank_in_name(name, "rank-") >= 0)
        traces.emplace_back(rank_in_name(name, "rank-"), e.path());
    }
    std::sort(metas.begin(), metas.end());
    std::sort(traces.begin(), traces.end());
    for (const auto* files : {&metas, &traces}) {
      for (std::size_t i = 1; i < files->size(); ++i) {
        if ((*files)[i].first == (*files)[i - 1].first)
          throw InputError(path, "rank " + std::to_string((*files)[i].first) +
                                     " is in two places: " + (*files)[i - 1].second.string() + " and " +
                                     (*files)[i].second.string() + " (keep one)");
      }
    }
    for (const auto& [r, f] : traces) add_trace_file(out, f, r);
    if (out.plans.empty())
      for (const auto& [r, f] : metas) out.plans.push_back(read_meta_plan(f, options));
  } else if (kind == model::PathKind::Missing) {
    throw InputError(path, "no such file or directory");
  } else {
    // By content: a pickle or a log read as JSON lines would be nothing but damaged lines.
    const auto d = model::detect_format(path);
    if (d.format == model::Format::Missing) throw InputError(path, d.reason);
    const bool json = d.format == model::Format::Json || d.format == model::Format::JsonLines;
    if (!json) throw model::unrecognized_input(path, d, kBucketFormats);
    if (p.filename().string().ends_with("_meta.json")) {
      out.plans.push_back(read_meta_plan(p, options));
    } else {
      add_trace_file(out, p, std::max(rank_in_name(p.filename().string(), "rank-"), 0));
    }
  }
  if (out.plans.empty())
    throw InputError(path, "no bucket plan: neither a trace \"buckets\" record nor a rank<r>_meta.json");
  return out;
}

}  // namespace gparity::diff
