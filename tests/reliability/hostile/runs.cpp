// Hostile trace runs (rank-<r>.jsonl + manifest.json) and what `compare` imports as runs: the
// samples' reference JSONL and TensorBoard event files.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/model/run/trace_writer.hpp"
#include "tests/reliability/hostile/formats.hpp"
#include "tests/support/tensorboard_writer.hpp"

namespace gparity::testing::hostile {
namespace {

/// A trace v1 run: `world` ranks, steps 1..`steps`, two parameters; `salt` changes every value.
std::string write_trace_run(const fs::path& dir, int world, int steps, std::uint64_t salt = 0) {
  model::RunManifest m;
  m.run_id = "reliability";
  m.world_size = world;
  m.steps = steps;
  model::write_manifest(dir, m);
  for (int r = 0; r < world; ++r) {
    model::TraceWriter w(dir, r);
    model::ParamsRecord p;
    p.params.push_back(
        {"w", model::DType::F32, {4, 2}, {0, 0}, {4, 2}, {{model::Placement::Kind::Replicate, -1}}, r == 0});
    p.params.push_back(
        {"b", model::DType::F32, {2}, {0}, {2}, {{model::Placement::Kind::Replicate, -1}}, r == 0});
    w.write_params(p);
    for (int s = 1; s <= steps; ++s) {
      model::StepRecord rec;
      rec.step = s;
      rec.loss = model::TraceScalar::from_f32(1.0F / static_cast<float>(s) + static_cast<float>(salt));
      rec.hashes.push_back({"param.xxh3", {0x1000U + static_cast<std::uint64_t>(s) + salt, 0x2000U + salt}});
      w.write_step(rec);
    }
  }
  return dir.string();
}

std::string rank_file(const fs::path& run, int r) {
  return model::rank_trace_path(run, r).string();
}

}  // namespace

void add_run_inputs(const InputAdder& add) {
  // -- runs ----------------------------------------------------------------------------------
  add("trace-run-empty-ranks", "one side empty", [](const fs::path& d) {
    write_trace_run(d / "good", 2, 3);
    write_trace_run(d / "in", 2, 3);
    for (int r = 0; r < 2; ++r) write_file(rank_file(d / "in", r), "");
    fs::create_directories(d / "samples");
    write_file(d / "samples" / "rank0.jsonl", "");
    write_file(d / "samples" / "rank1.jsonl", "");
    return std::vector{one({{"in", (d / "in").string()},
                            {"good", (d / "good").string()},
                            {"samples_in", (d / "samples").string()}})};
  });
  add("trace-run-truncated", "truncated at every record boundary", [](const fs::path& d) {
    // Rank 1's file cut after each line, and in the middle of each line.
    write_trace_run(d / "good", 2, 3);
    const auto full = read_file(rank_file(d / "good", 1));
    std::vector<Variant> out;
    std::vector<std::size_t> cuts{0};
    for (auto b : line_boundaries(full)) cuts.push_back(b);
    const auto lines = line_boundaries(full);
    std::size_t prev = 0;
    for (auto b : lines) {
      cuts.push_back((prev + b) / 2);
      prev = b;
    }
    cuts.push_back((prev + full.size()) / 2);
    std::sort(cuts.begin(), cuts.end());
    for (std::size_t k = 0; k < cuts.size(); ++k) {
      const auto dir = d / ("cut" + std::to_string(k));
      write_trace_run(dir, 2, 3);
      write_file(rank_file(dir, 1), full.substr(0, cuts[k]));
      out.push_back(one({{"in", dir.string()}, {"good", (d / "good").string()}, {"file", rank_file(dir, 1)}},
                        "rank-1.jsonl cut at byte " + std::to_string(cuts[k])));
    }
    return out;
  });
  add("samples-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kRuns / "eager" / "rank1.jsonl");
    std::vector<std::size_t> cuts{0};
    for (auto b : line_boundaries(full)) cuts.push_back(b);
    for (auto b : line_boundaries(full)) cuts.push_back(b - 100);
    std::vector<Variant> out;
    for (std::size_t k = 0; k < cuts.size(); ++k) {
      const auto dir = d / ("cut" + std::to_string(k));
      copy_dir(kRuns / "eager", dir);
      write_file(dir / "rank1.jsonl", full.substr(0, cuts[k]));
      out.push_back(one({{"in", dir.string()}, {"file", (dir / "rank1.jsonl").string()}},
                        "rank1.jsonl cut at byte " + std::to_string(cuts[k])));
    }
    return out;
  });
  add("tensorboard-truncated", "truncated at every record boundary", [](const fs::path& d) {
    EventFileWriter w;
    for (int s = 1; s <= 3; ++s) w.scalar(s, "loss", 1.0F / static_cast<float>(s));
    const std::string name = "events.out.tfevents.1700000000.host";
    w.save((d / "good" / name).string());
    std::vector<std::size_t> cuts;
    for (auto at : w.record_offsets()) cuts.push_back(at);
    for (auto at : w.record_offsets()) cuts.push_back(at + 5);
    std::vector<Variant> out;
    for (std::size_t k = 0; k < cuts.size(); ++k) {
      if (cuts[k] == 0) continue;  // an empty file: the empty-file row
      const auto file = d / ("cut" + std::to_string(k)) / name;
      write_file(file, w.bytes().substr(0, cuts[k]));
      out.push_back(
          one({{"in", file.parent_path().string()}, {"good", (d / "good").string()}, {"file", file.string()}},
              "event file cut at byte " + std::to_string(cuts[k])));
    }
    return out;
  });
  add("trace-run-zero-ranks", "zero ranks", [](const fs::path& d) {
    write_file(d / "in" / "manifest.json",
               R"({"schema_version": 1, "format": "gparity-trace", "world_size": 0})");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("samples-mixed-runs", "ranks mixed from two runs", [](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(kRuns / "eager" / "rank0.jsonl", d / "in" / "rank0.jsonl");
    fs::copy_file(kRuns / "compile" / "rank1.jsonl", d / "in" / "rank1.jsonl");
    write_trace_run(d / "good", 2, 3);
    write_trace_run(d / "mixed", 2, 3);
    write_trace_run(d / "other", 2, 3, 7);
    fs::copy_file(rank_file(d / "other", 1), rank_file(d / "mixed", 1), fs::copy_options::overwrite_existing);
    return std::vector{one({{"in", (d / "in").string()},
                            {"good", (d / "good").string()},
                            {"trace_in", (d / "mixed").string()}})};
  });
  add("duplicate-rank-files", "duplicate ranks", [](const fs::path& d) {
    Vars vars;
    vars["in"] = copy_dir(kRuns / "eager", d / "samples");
    fs::copy_file(kRuns / "compile" / "rank0.jsonl", d / "samples" / "rank00.jsonl");
    vars["copied"] = copy_dir(kRuns / "eager", d / "copied");
    fs::copy_file(d / "copied" / "rank0.jsonl", d / "copied" / "rank1.jsonl",
                  fs::copy_options::overwrite_existing);
    vars["trace_in"] = write_trace_run(d / "trace", 2, 3);
    fs::copy_file(rank_file(d / "trace", 1), d / "trace" / "rank-01.jsonl");
    vars["good"] = write_trace_run(d / "good", 2, 3);
    EventFileWriter w;
    w.scalar(1, "loss", 1.0F);
    w.save((d / "tb" / "rank_0" / "events.out.tfevents.1.host").string());
    w.save((d / "tb" / "rank-0" / "events.out.tfevents.2.host").string());
    vars["tb_in"] = (d / "tb").string();
    return std::vector{one(vars)};
  });
  add("run-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    auto lines = lines_of(read_file(kRuns / "eager" / "rank0.jsonl"));
    lines.insert(lines.begin() + 2, deep_json(kMillion));
    copy_dir(kRuns / "eager", d / "in");
    write_file(d / "in" / "rank0.jsonl", join_lines(lines));
    write_trace_run(d / "manifest", 1, 1);
    write_file(d / "manifest" / "manifest.json", deep_json(kMillion));
    return std::vector{one({{"in", (d / "in").string()}, {"manifest_in", (d / "manifest").string()}})};
  });
  add("run-nan", "NaN/Inf in JSON", [](const fs::path& d) {
    // Python's json writes NaN and Infinity: a diverging run's loss. The bits fields are kept, so
    // the run is still the eager run bit for bit.
    copy_dir(kRuns / "eager", d / "in");
    for (int r = 0; r < 2; ++r) {
      const auto file = d / "in" / ("rank" + std::to_string(r) + ".jsonl");
      auto lines = lines_of(read_file(file));
      for (auto& l : lines) {
        auto j = nlohmann::ordered_json::parse(l);
        l = j.dump();
        const auto replace = [&](const std::string& key, const std::string& word) {
          const auto at = l.find("\"" + key + "\":");
          const auto end = l.find(',', at);
          l.replace(at, end - at, "\"" + key + "\":" + word);
        };
        replace("loss", "NaN");
        replace("grad_norm", "-Infinity");
      }
      write_file(file, join_lines(lines));
    }
    write_trace_run(d / "good", 1, 1);
    write_trace_run(d / "trace", 1, 1);
    auto text = read_file(rank_file(d / "trace", 0));
    const auto at = text.find("\"value\":");
    text.replace(at, text.find_first_of(",}", at) - at, "\"value\": NaN");
    write_file(rank_file(d / "trace", 0), text);
    return std::vector{one({{"in", (d / "in").string()},
                            {"good", (d / "good").string()},
                            {"trace_in", (d / "trace").string()}})};
  });
  add("run-100mb-line", "100 MB single line", [](const fs::path&) {
    const auto dir = shared_dir() / "run-100mb-line";
    if (!fs::exists(dir)) {
      auto lines = lines_of(read_file(kRuns / "eager" / "rank0.jsonl"));
      lines.insert(lines.begin() + 2, hundred_mb_of('x'));
      copy_dir(kRuns / "eager", dir);
      write_file(dir / "rank0.jsonl", join_lines(lines));
    }
    return std::vector{one({{"in", dir.string()}})};
  });
}

}  // namespace gparity::testing::hostile
