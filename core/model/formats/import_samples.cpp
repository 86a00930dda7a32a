#include "core/model/formats/import_samples.hpp"

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "hash/xxh3.hpp"

namespace gparity::model {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& source, std::int64_t line, const std::string& problem) {
  throw InputError(source, line, problem);
}

std::uint64_t hex_field(const ordered_json& j, const char* key, const std::string& source,
                        std::int64_t line) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    bad(source, line, std::string("missing string field \"") + key + "\"");
  const auto& text = it->get_ref<const std::string&>();
  if (text.empty() || text.size() > 16) bad(source, line, std::string("\"") + key + "\" is not a hex value");
  const auto v = hash::from_hex(std::string(16 - text.size(), '0') + text);
  if (!v) bad(source, line, std::string("\"") + key + "\" is not a hex value");
  return *v;
}

std::vector<std::int64_t> shape_field(const ordered_json& j, const char* key, const std::string& source,
                                      std::int64_t line) {
  const auto it = j.find(key);
  if (it == j.end()) bad(source, line, std::string("missing field \"") + key + "\"");
  if (!it->is_array()) bad(source, line, std::string("\"") + key + "\" is not a list of integers");
  std::vector<std::int64_t> shape;
  for (const auto& d : *it) {
    // Exact integers only (a float such as 1e30 was converted to int64: undefined behaviour).
    const auto v = json_integer<std::int64_t>(d);
    if (!v || *v < 0)
      bad(source, line, std::string("\"") + key + "\" is not a list of non-negative integers");
    shape.push_back(*v);
  }
  return shape;
}

/// One line into a step plus the params table it implies.
void parse_line(std::string_view text, const std::string& source, std::int64_t line, int rank,
                StepRecord& step, ParamsRecord& table) {
  const auto j = parse_ordered_json(text, source, line);
  if (!j.is_object()) bad(source, line, "line is not a JSON object");
  const auto s = j.find("step");
  if (s == j.end() || !s->is_number_integer()) bad(source, line, "missing integer \"step\"");
  step.step = s->get<std::int64_t>();
  // A line that says it is another rank's: a file copied or mixed up between ranks or runs would
  // otherwise stand in for the rank it is named after.
  if (const auto r = j.find("rank"); r != j.end()) {
    if (!r->is_number_integer()) bad(source, line, "\"rank\" is not an integer");
    if (r->get<std::int64_t>() != rank)
      bad(source, line,
          "the line is rank " + std::to_string(r->get<std::int64_t>()) + "'s, in the file of rank " +
              std::to_string(rank));
  }
  step.loss = TraceScalar::from_bits(hex_field(j, "loss_bits", source, line), DType::F32);
  if (j.contains("grad_norm_bits")) {
    step.grad_norm = TraceScalar::from_bits(hex_field(j, "grad_norm_bits", source, line), DType::F32);
  }
  const auto p = j.find("params");
  if (p == j.end() || !p->is_object()) bad(source, line, "missing object \"params\"");
  HashArray shard{"param.xxh3", {}};
  HashArray full{"param.full_xxh3", {}};
  for (auto it = p->begin(); it != p->end(); ++it) {
    const auto& e = *it;
    if (!e.is_object()) bad(source, line, "parameter \"" + it.key() + "\" is not an object");
    ParamInfo info;
    info.fqn = it.key();
    const auto dt = e.find("dtype");
    if (dt == e.end() || !dt->is_string()) bad(source, line, "parameter \"" + info.fqn + "\" has no dtype");
    const auto d = parse_dtype(dt->get<std::string>());
    if (!d) bad(source, line, "parameter \"" + info.fqn + "\": unknown dtype " + dt->dump());
    info.dtype = *d;
    info.global_shape = shape_field(e, "shape", source, line);
    info.local_shape =
        e.contains("shard_shape") ? shape_field(e, "shard_shape", source, line) : info.global_shape;
    if (info.local_shape.size() != info.global_shape.size()) {
      bad(source, line, "parameter \"" + info.fqn + "\": shape and shard_shape differ in rank");
    }
    // FSDP2 shards dim 0 evenly; the reference format does not record offsets, so they are
    // inferred (and only used to describe the block, never to hash).
    info.local_offsets.assign(info.global_shape.size(), 0);
    if (!info.global_shape.empty() && info.local_shape != info.global_shape) {
      if (__builtin_mul_overflow(std::int64_t{rank}, info.local_shape[0], &info.local_offsets[0]))
        bad(source, line, "parameter \"" + info.fqn + "\": shard_shape[0] times the rank overflows");
      info.placements.push_back({Placement::Kind::Shard, 0});
    } else {
      info.placements.push_back({Placement::Kind::Replicate, -1});
    }
    table.params.push_back(std::move(info));
    shard.values.push_back(hex_field(e, "shard_xxh3", source, line));
    if (e.contains("full_xxh3")) full.values.push_back(hex_field(e, "full_xxh3", source, line));
  }
  step.hashes.push_back(std::move(shard));
  if (full.values.size() == table.params.size()) step.hashes.push_back(std::move(full));
}

}  // namespace

RankTrace import_sample_rank(const std::string& path, int rank) {
  const MappedFile file(path);
  RankTrace out;
  out.rank = rank;
  out.source = path;
  scan_jsonl(
      file.text(), path,
      [&](std::string_view line, std::int64_t line_no) {
        StepRecord step;
        ParamsRecord table;
        parse_line(line, path, line_no, rank, step, table);
        if (out.params_tables.empty() || out.params_tables.back().params != table.params) {
          out.params_tables.push_back(std::move(table));
        }
        out.steps.push_back(std::move(step));
        out.step_table.push_back(out.params_tables.size() - 1);
      },
      [&out](TraceIssue&& issue) { out.issues.push_back(std::move(issue)); });
  return out;
}

}  // namespace gparity::model
