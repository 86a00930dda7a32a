#include "tests/reliability/hostile_inputs.hpp"

#include <minizip/zip.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/model/formats/pickle/pickle_ops.hpp"
#include "core/model/run/trace_writer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tensorboard_writer.hpp"

namespace gparity::testing {
namespace {

namespace fs = std::filesystem;
using Vars = std::map<std::string, std::string>;

const fs::path kSource = GPARITY_SOURCE_DIR;
const fs::path kData = kSource / "tests" / "data";
const fs::path kRuns = kSource / "samples" / "runs";
constexpr std::size_t kMillion = 1000000;

// ---- files ------------------------------------------------------------------------------------

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string write_file(const fs::path& p, std::string_view bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return p.string();
}

std::string copy_dir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy(from, to, fs::copy_options::recursive);
  return to.string();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string le_bytes(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string random_bytes(std::size_t n) {
  std::mt19937_64 rng(26);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  s[0] = '\x9c';  // not '{', 'P', 'V', '<', 0x80 or a digit: no reader's magic
  return s;
}

std::string deep_json(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

/// Cut points: `count` of `points`, spread evenly (all of them when there are fewer).
std::vector<std::size_t> spread(const std::vector<std::size_t>& points, std::size_t count) {
  if (points.size() <= count) return points;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(points[i * (points.size() - 1) / (count - 1)]);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Offsets of each line start after the first (cuts that keep whole lines).
std::vector<std::size_t> line_boundaries(const std::string& text) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 1 < text.size(); ++i)
    if (text[i] == '\n') out.push_back(i + 1);
  return out;
}

Variant one(Vars vars, std::string label = "") {
  return {std::move(label), std::move(vars), {}};
}

// ---- runs -------------------------------------------------------------------------------------

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

// ---- pickles ----------------------------------------------------------------------------------

std::string bin_unicode(std::string_view s) {
  return "X" + le_bytes(s.size(), 4) + std::string(s);
}

/// The head of a pickled Flight Recorder dump, up to an open "entries" list: is_flight_recorder_pickle
/// claims it ('}' after the protocol, "version" in the first 64 bytes).
std::string fr_pickle_head() {
  return std::string("\x80\x02}(", 4) + bin_unicode("version") + bin_unicode("2.4") + bin_unicode("entries") +
         "]";
}

/// An entry that calls `callable` (module.name) with a command, as pickle.loads would.
std::string reduce_call(const std::string& module, const std::string& name, const std::string& marker,
                        bool stack_global) {
  std::string s;
  if (stack_global) {
    s += "\x8c" + le_bytes(module.size(), 1) + module + "\x8c" + le_bytes(name.size(), 1) + name + "\x93";
  } else {
    s += "c" + module + "\n" + name + "\n";
  }
  if (name == "eval") return s + "(" + bin_unicode("open('" + marker + "', 'w')") + "tR";
  if (name == "Popen") return s + "((" + bin_unicode("touch") + bin_unicode(marker) + "ltR";
  return s + "(" + bin_unicode("touch " + marker) + "tR";
}

struct Callable {
  std::string module, name;
  bool stack_global;
};
const std::vector<Callable> kCallables = {{"os", "system", false},
                                          {"os", "system", true},
                                          {"builtins", "eval", false},
                                          {"subprocess", "Popen", false}};

/// A pickle length claim of 2^40 bytes with 3 behind it (BINUNICODE8).
std::string length_claim() {
  return "\x8d" + le_bytes(1ULL << 40, 8) + "abc";
}

// ---- zips -------------------------------------------------------------------------------------

/// A zip of stored members written by minizip.
std::string write_zip(const fs::path& path, const std::vector<std::pair<std::string, std::string>>& members) {
  fs::create_directories(path.parent_path());
  zipFile z = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  if (!z) throw std::runtime_error("zipOpen64 " + path.string());
  for (const auto& [name, content] : members) {
    if (zipOpenNewFileInZip64(z, name.c_str(), nullptr, nullptr, 0, nullptr, 0, nullptr, 0, 0, 0) != ZIP_OK ||
        zipWriteInFileInZip(z, content.data(), static_cast<unsigned>(content.size())) != ZIP_OK ||
        zipCloseFileInZip(z) != ZIP_OK)
      throw std::runtime_error("zip member " + name);
  }
  zipClose(z, nullptr);
  return path.string();
}

/// A one-member stored zip whose central directory declares `declared` bytes (zip64 extra).
std::string zip_declaring(const std::string& name, const std::string& data, std::uint64_t declared) {
  const std::string extra = le_bytes(1, 2) + le_bytes(16, 2) + le_bytes(declared, 8) + le_bytes(declared, 8);
  const std::string local = le_bytes(0x04034b50, 4) + le_bytes(45, 2) + le_bytes(0, 2) + le_bytes(0, 2) +
                            le_bytes(0, 4) + le_bytes(0, 4) + le_bytes(0xffffffff, 4) +
                            le_bytes(0xffffffff, 4) + le_bytes(name.size(), 2) + le_bytes(extra.size(), 2) +
                            name + extra + data;
  const std::string central = le_bytes(0x02014b50, 4) + le_bytes(45, 2) + le_bytes(45, 2) + le_bytes(0, 2) +
                              le_bytes(0, 2) + le_bytes(0, 4) + le_bytes(0, 4) + le_bytes(0xffffffff, 4) +
                              le_bytes(0xffffffff, 4) + le_bytes(name.size(), 2) + le_bytes(extra.size(), 2) +
                              le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 4) +
                              le_bytes(0, 4) + name + extra;
  const std::string end = le_bytes(0x06054b50, 4) + le_bytes(0, 4) + le_bytes(1, 2) + le_bytes(1, 2) +
                          le_bytes(central.size(), 4) + le_bytes(local.size(), 4) + le_bytes(0, 2);
  return local + central + end;
}

/// Offsets of every local file header ("PK\3\4") of a zip.
std::vector<std::size_t> local_headers(const std::string& zip) {
  std::vector<std::size_t> out;
  for (auto at = zip.find("PK\x03\x04"); at != std::string::npos; at = zip.find("PK\x03\x04", at + 1))
    out.push_back(at);
  return out;
}

// ---- DCP --------------------------------------------------------------------------------------

const fs::path kGrid = kData / "dcp" / "grid";

std::string dcp_with_metadata(const fs::path& dir, const std::string& metadata) {
  copy_dir(kGrid, dir);
  write_file(dir / ".metadata", metadata);
  return dir.string();
}

// ---- TORCH_TRACE ------------------------------------------------------------------------------

const fs::path kCompile = kData / "graph" / "compile";
const std::string kLog0 = "dedicated_log_torch_trace_rank_0_vp85oaze.log";
const std::string kLog1 = "dedicated_log_torch_trace_rank_1_w98tottg.log";
const std::string kEnvelope = "V1121 04:50:36.775000 735 torch/_logging/structured.py:28] ";

/// Offsets where an envelope line starts (payload lines start with a tab), after the first.
std::vector<std::size_t> envelope_starts(const std::string& log) {
  std::vector<std::size_t> out;
  for (std::size_t at : line_boundaries(log))
    if (log[at] != '\t') out.push_back(at);
  return out;
}

// ---- FX text ----------------------------------------------------------------------------------

std::string fx_module(const std::string& body) {
  return "class M(torch.nn.Module):\n    def forward(self, x: \"f32[4][1]cpu\"):\n" + body +
         "        return (y,)\n";
}

// ---- 100 MB lines, made once per process ------------------------------------------------------

const fs::path& shared_dir() {
  static const TempDir dir;
  return dir.path();
}

std::string hundred_mb_of(char c) {
  return std::string(100U << 20, c);
}

// ---- the inputs -------------------------------------------------------------------------------

// An empty or a wrong file under each name a reader looks for: {in} has no telling name.
const std::vector<std::pair<std::string, std::string>> kNamedCopies = {
    {"in", "data"},
    {"in_fr", "rank0_flight_recorder.json"},
    {"in_log", "train.log"},
    {"in_pkl", "rank0_flight_recorder.pkl"},
    {"in_safetensors", "model.safetensors"},
    {"in_pt2", "model.pt2"},
    {"in_xml", "graph.xml"},
    {"in_meta", "meta/rank0_meta.json"},
    {"in_policy", "policy.json"},
    {"in_graph", "graph.json"},
};

std::vector<HostileInput> make_inputs() {
  std::vector<HostileInput> inputs;
  const auto add = [&](std::string key, std::string kind, auto build) {
    inputs.push_back({std::move(key), std::move(kind), std::move(build)});
  };

  // -- any input ---------------------------------------------------------------------------------
  add("empty-file", "empty file", [](const fs::path& d) {
    Vars vars;
    for (const auto& [var, name] : kNamedCopies) vars[var] = write_file(d / name, "");
    return std::vector{one(vars)};
  });
  add("empty-folder", "empty folder", [](const fs::path& d) {
    fs::create_directories(d / "empty");
    return std::vector{one({{"in", (d / "empty").string()}})};
  });
  add("random-bytes", "wrong format", [](const fs::path& d) {
    const auto bytes = random_bytes(4096);
    Vars vars;
    for (const auto& [var, name] : kNamedCopies) vars[var] = write_file(d / name, bytes);
    write_file(d / "folder" / "data.bin", bytes);
    vars["in_dir"] = (d / "folder").string();
    return std::vector{one(vars)};
  });
  add("plain-pickle", "wrong format", [](const fs::path& d) {
    // pickle.dumps({'hello': [1, 2, 3]}, protocol=4): a pickle, not a Flight Recorder dump.
    const std::string bytes(
        "\x80\x04\x95\x16\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x05hello\x94]\x94(K\x01K\x02K\x03es.", 33);
    return std::vector{one({{"in", write_file(d / "x.pkl", bytes)}})};
  });
  add("other-json", "wrong format", [](const fs::path& d) {
    // Valid JSON with none of the format's keys: not a dump, a policy, a graph or a plan.
    const std::string j = R"({"hello": [1, 2, 3]})";
    return std::vector{one({{"in", write_file(d / "rank0_flight_recorder.json", j)},
                            {"in_meta", write_file(d / "meta" / "rank0_meta.json", j)},
                            {"in_graph", write_file(d / "graph.json", j)},
                            {"in_policy", write_file(d / "policy.json", j)}})};
  });
  add("symlink-loop", "symlink loop", [](const fs::path& d) {
    fs::create_symlink(d / "b", d / "a");
    fs::create_symlink(d / "a", d / "b");
    return std::vector{one({{"in", (d / "a").string()}})};
  });
  add("symlink-loop-in-folder", "symlink loop", [](const fs::path& d) {
    // Each folder holds a good rank 0 and a rank 1 entry that is a link to itself.
    const auto loop = [](const fs::path& p) {
      fs::create_symlink(p.filename(), p);
      return p.string();
    };
    Vars vars;
    vars["run"] = (d / "run").string();
    fs::create_directories(d / "run");
    fs::copy_file(kRuns / "eager" / "rank0.jsonl", d / "run" / "rank0.jsonl");
    vars["run_entry"] = loop(d / "run" / "rank1.jsonl");
    vars["trace"] = (d / "trace").string();
    fs::create_directories(d / "trace");
    fs::copy_file(kCompile / kLog0, d / "trace" / kLog0);
    vars["trace_entry"] = loop(d / "trace" / kLog1);
    vars["fr"] = (d / "fr").string();
    fs::create_directories(d / "fr");
    fs::copy_file(kData / "graph" / "eager" / "rank0_flight_recorder.json",
                  d / "fr" / "rank0_flight_recorder.json");
    vars["fr_entry"] = loop(d / "fr" / "rank1_flight_recorder.json");
    vars["meta"] = (d / "meta").string();
    fs::create_directories(d / "meta");
    fs::copy_file(kData / "graph" / "eager" / "rank0_meta.json", d / "meta" / "rank0_meta.json");
    vars["meta_entry"] = loop(d / "meta" / "rank1_meta.json");
    return std::vector{one(vars)};
  });
  add("control-chars-in-names", "non-UTF-8 and control characters in names", [](const fs::path& d) {
    // A folder name with invalid UTF-8 and an escape sequence that clears the screen.
    const std::string name = "bad\xff\xfe\x1b[2Jname";
    Vars vars{
        {"in", copy_dir(kRuns / "eager", d / name)},
        {"fx", write_file(d / ("graph" + name + ".txt"), read_file(kData / "replay" / "collectives.txt"))}};
    return std::vector{one(vars)};
  });
  add("control-chars-in-content", "non-UTF-8 and control characters in names", [](const fs::path& d) {
    // The issue's example: an FX argument (a string literal with escapes) that retitles the
    // terminal and clears the screen once printed raw, and a parameter name holding one.
    const std::string arg = R"('\x1b]0;title\x07\x1b[2J')";
    Vars vars;
    vars["fx"] =
        write_file(d / "a.txt", fx_module("        y = torch.ops.aten.add.Tensor(x, " + arg + ")\n"));
    vars["fx_other"] =
        write_file(d / "b.txt", fx_module("        y = torch.ops.aten.add.Tensor(x, 'plain')\n"));
    // Reference runs whose first parameter is named "tok\x1b]0;pwn\x07.weight"; in the
    // candidate its hash differs at step 2, so the name is printed in a divergence.
    const std::string bad_name = "tok\\u001b]0;pwn\\u0007.weight";
    for (const auto* side : {"base", "cand"}) {
      for (int r = 0; r < 2; ++r) {
        auto text = read_file(kRuns / "eager" / ("rank" + std::to_string(r) + ".jsonl"));
        for (std::size_t at = text.find("\"tok.weight\""); at != std::string::npos;
             at = text.find("\"tok.weight\"", at + 1))
          text.replace(at, 12, "\"" + bad_name + "\"");
        if (std::string(side) == "cand") {
          auto lines = lines_of(text);
          const auto h = lines[1].find("\"shard_xxh3\": \"") + 15;
          lines[1][h] = lines[1][h] == '0' ? '1' : '0';
          text = join_lines(lines);
        }
        write_file(d / side / ("rank" + std::to_string(r) + ".jsonl"), text);
      }
      vars[side] = (d / side).string();
    }
    return std::vector{one(vars)};
  });

  // -- outputs -------------------------------------------------------------------------------
  add("full-disk", "full disk", [](const fs::path& d) {
    // Writes past 512 bytes fail with EFBIG, as on a full disk: every report is longer (a
    // collectives HTML page of a parity run is 1.4 KB, compare's 1.9 KB).
    fs::create_directories(d / "out");
    Variant v = one({{"out", (d / "out").string()}, {"error", "File too large"}}, "RLIMIT_FSIZE 512 bytes");
    v.limits.file_size_bytes = 512;
    return std::vector{v};
  });
  add("full-tmpfs", "full disk", [](const fs::path& d) {
    fs::create_directories(d / "out");
    Variant v = one({{"out", (d / "out").string()}, {"error", "No space left on device"}}, "a full tmpfs");
    v.limits.mounts.push_back({(d / "out").string(), 1 << 16, false, true});
    return std::vector{v};
  });
  add("read-only-folder", "read-only output folder", [](const fs::path& d) {
    fs::create_directories(d / "out");
    Variant v = one({{"out", (d / "out").string()}, {"error", "Read-only file system"}}, "a read-only tmpfs");
    v.limits.mounts.push_back({(d / "out").string(), 1 << 16, true, false});
    return std::vector{v};
  });
  add("output-under-a-file", "read-only output folder", [](const fs::path& d) {
    // A folder that cannot be made: its parent is a regular file (root is not stopped by chmod).
    write_file(d / "file", "x");
    return std::vector{one({{"out", (d / "file" / "out").string()}, {"error", "Not a directory"}})};
  });

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

  // -- checkpoints -----------------------------------------------------------------------------
  add("safetensors-header-past-end", "safetensors header longer than the file", [](const fs::path& d) {
    const std::string header = R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
    return std::vector{
        one({{"in", write_file(d / "long.safetensors", le_bytes(5000, 8) + header)}}, "length 5000"),
        one({{"in", write_file(d / "huge.safetensors", le_bytes(1ULL << 40, 8) + header)}}, "length 2^40")};
  });
  add("safetensors-truncated", "truncated at every record boundary", [](const fs::path& d) {
    // grid.safetensors cut inside the length, after it, inside the header, after it, in the data.
    const auto full = read_file(kData / "dcp" / "grid.safetensors");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(full[i]);
    std::vector<Variant> out;
    for (const std::size_t cut :
         {std::size_t{4}, std::size_t{8}, 8 + n / 2, 8 + n, 8 + n + 1, full.size() - 1}) {
      const auto file = d / ("cut" + std::to_string(cut)) / "grid.safetensors";
      out.push_back(
          one({{"in", write_file(file, full.substr(0, cut))}}, "cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("safetensors-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    const std::string header = R"({"t": )" + deep_json(kMillion) + "}";
    return std::vector{
        one({{"in", write_file(d / "deep.safetensors", le_bytes(header.size(), 8) + header)}})};
  });
  add("dcp-data-past-end", "DCP metadata past a file's end", [](const fs::path& d) {
    copy_dir(kGrid, d / "in");
    const auto file = d / "in" / "__1_0.distcp";
    fs::resize_file(file, fs::file_size(file) / 2);
    return std::vector{one({{"in", (d / "in").string()}, {"file", file.string()}})};
  });
  add("dcp-metadata-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kGrid / ".metadata");
    // Every opcode boundary of the pickle, a dozen of them spread over the file.
    std::vector<std::size_t> ops;
    model::pickle::OpReader reader(std::as_bytes(std::span(full.data(), full.size())), ".metadata");
    while (!reader.at_end()) {
      const auto op = reader.next();
      if (op.offset > 0) ops.push_back(op.offset);
      if (op.code == '.') break;
    }
    std::vector<Variant> out;
    for (const auto cut : spread(ops, 12)) {
      const auto dir = d / ("cut" + std::to_string(cut));
      dcp_with_metadata(dir, full.substr(0, cut));
      out.push_back(one({{"in", dir.string()}, {"file", (dir / ".metadata").string()}},
                        ".metadata cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("dcp-metadata-globals", "pickle GLOBAL/REDUCE of os.system / builtins.eval / subprocess.Popen",
      [](const fs::path& d) {
        std::vector<Variant> out;
        int k = 0;
        for (const auto& c : kCallables) {
          const auto dir = d / ("c" + std::to_string(k++));
          const auto marker = (d / "PWNED").string();
          dcp_with_metadata(
              dir, std::string("\x80\x02", 2) + reduce_call(c.module, c.name, marker, c.stack_global) + ".");
          out.push_back(one({{"in", dir.string()}, {"callable", c.module + "." + c.name}, {"marker", marker}},
                            c.module + "." + c.name + (c.stack_global ? " (STACK_GLOBAL)" : " (GLOBAL)")));
        }
        return out;
      });
  add("dcp-metadata-length-claim", "pickle 2^40 length claim", [](const fs::path& d) {
    return std::vector{
        one({{"in", dcp_with_metadata(d / "in", std::string("\x80\x04", 2) + length_claim())}})};
  });
  add("dcp-metadata-deep", "10^6-deep nesting", [](const fs::path& d) {
    const std::string deep =
        std::string("\x80\x02", 2) + std::string(kMillion, '(') + std::string(kMillion, 'l') + ".";
    return std::vector{one({{"in", dcp_with_metadata(d / "in", deep)}})};
  });
  add("dcp-record-zip", "zip 2^40 declared sizes or ../ names", [](const fs::path& d) {
    // The first torch.save record of __0_0.distcp, patched in place: its data.pkl declared at
    // 4 GiB - 1 (the most a zip without zip64 can say), or renamed with a '..' component.
    std::vector<Variant> out;
    for (const std::string how : {"size", "dotdot"}) {
      const auto dir = d / how;
      copy_dir(kGrid, dir);
      const auto file = dir / "__0_0.distcp";
      auto bytes = read_file(file);
      const auto central = bytes.find("PK\x01\x02");
      const auto name_at = bytes.find("/data.pkl", central);
      if (central == std::string::npos || name_at == std::string::npos)
        throw std::runtime_error("no data.pkl");
      const std::size_t entry = bytes.rfind("PK\x01\x02", name_at);
      if (how == "size") {
        // Compressed and uncompressed size fields of the central entry.
        bytes.replace(entry + 20, 8, le_bytes(0xfffffffeULL, 4) + le_bytes(0xfffffffeULL, 4));
      } else {
        // The member's name, in its central entry and its local header: same length, "../" first.
        const std::string name = bytes.substr(entry + 46, name_at + 9 - (entry + 46));
        const std::string evil = "../" + name.substr(3);
        for (auto at = bytes.find(name); at != std::string::npos; at = bytes.find(name, at + 1))
          bytes.replace(at, name.size(), evil);
      }
      write_file(file, bytes);
      out.push_back(one({{"in", dir.string()},
                         {"file", file.string()},
                         {"problem", how == "size" ? "declares 4294967294 bytes" : "'..' in member path"}},
                        how));
    }
    return out;
  });

  // -- graphs --------------------------------------------------------------------------------
  add("fx-deep-parens", "10^6-deep nesting", [](const fs::path& d) {
    const auto text = fx_module("        y = torch.ops.aten.add.Tensor(" + std::string(kMillion, '(') + "x" +
                                std::string(kMillion, ')') + ", 1)\n");
    return std::vector{one({{"in", write_file(d / "deep.txt", text)}})};
  });
  add("fx-100mb-line", "100 MB single line", [](const fs::path&) {
    const auto file = shared_dir() / "fx-100mb-line.txt";
    if (!fs::exists(file))
      write_file(file, fx_module("        # " + hundred_mb_of('x') +
                                 "\n        y = torch.ops.aten.add.Tensor(x, 1)\n"));
    return std::vector{one({{"in", file.string()}})};
  });
  add("graph-json-deep", "10^6-deep nesting", [](const fs::path& d) {
    const std::string j =
        R"({"format": "gparity.graph", "version": 1, "nodes": )" + deep_json(kMillion) + "}";
    return std::vector{one({{"in", write_file(d / "graph.json", j)}})};
  });
  add("torch-trace-cut-at-envelopes", "truncated at every record boundary", [](const fs::path& d) {
    // Rank 1's log cut at envelope starts before its last graph: rank 1 then lacks graphs rank 0 has.
    const auto full = read_file(kCompile / kLog1);
    const auto last_graph = full.rfind("_graph\"");
    std::vector<std::size_t> cuts;
    for (auto at : envelope_starts(full))
      if (at < last_graph) cuts.push_back(at);
    std::vector<Variant> out;
    for (const auto cut : spread(cuts, 10)) {
      const auto dir = d / ("cut" + std::to_string(cut));
      fs::create_directories(dir);
      fs::copy_file(kCompile / kLog0, dir / kLog0);
      write_file(dir / kLog1, full.substr(0, cut));
      out.push_back(one({{"in", dir.string()}, {"file", (dir / kLog1).string()}},
                        "rank 1 cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("torch-trace-cut-in-payloads", "truncated at every record boundary", [](const fs::path& d) {
    // Cut in the middle of graph payloads: the cut graph is reported with its line.
    const auto full = read_file(kCompile / kLog1);
    std::vector<std::size_t> cuts;
    for (auto at = full.find("_graph\""); at != std::string::npos; at = full.find("_graph\"", at + 1)) {
      const auto body = full.find("\n\t", at);
      const auto next = full.find("\nV", body);
      if (body != std::string::npos && next != std::string::npos) cuts.push_back((body + next) / 2);
    }
    std::vector<Variant> out;
    for (const auto cut : spread(cuts, 6)) {
      const auto dir = d / ("cut" + std::to_string(cut));
      fs::create_directories(dir);
      fs::copy_file(kCompile / kLog0, dir / kLog0);
      write_file(dir / kLog1, full.substr(0, cut));
      out.push_back(one({{"in", dir.string()}, {"file", (dir / kLog1).string()}},
                        "rank 1 cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("torch-trace-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    const auto text = kEnvelope + R"({"str": )" + deep_json(kMillion) + "}\n" + read_file(kCompile / kLog0);
    fs::create_directories(d / "dir");
    fs::copy_file(kCompile / kLog1, d / "dir" / kLog1);
    return std::vector{one({{"in", write_file(d / "dir" / kLog0, text)}, {"dir", (d / "dir").string()}})};
  });
  add("torch-trace-duplicate-ranks", "duplicate ranks", [](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(kCompile / kLog0, d / "in" / kLog0);
    fs::copy_file(kCompile / kLog0, d / "in" / "dedicated_log_torch_trace_rank_0_restart.log");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("torch-trace-mixed-runs", "ranks mixed from two runs", [](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(kCompile / kLog0, d / "in" / kLog0);
    for (const auto& e : fs::directory_iterator(kData / "graph" / "compile_rankbug"))
      if (e.path().filename().string().find("rank_1") != std::string::npos)
        fs::copy_file(e.path(), d / "in" / e.path().filename());
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("torch-trace-one-rank-empty", "one side empty", [](const fs::path& d) {
    // Rank 1's log holds one envelope and no graph.
    fs::create_directories(d / "in");
    fs::copy_file(kCompile / kLog0, d / "in" / kLog0);
    const auto full = read_file(kCompile / kLog1);
    write_file(d / "in" / kLog1, full.substr(0, envelope_starts(full).front()));
    return std::vector{one({{"in", (d / "in").string()}, {"file", (d / "in" / kLog1).string()}})};
  });
  add("torch-trace-100mb-line", "100 MB single line", [](const fs::path&) {
    const auto file = shared_dir() / "torch-trace-100mb-line" / kLog0;
    if (!fs::exists(file))
      write_file(
          file, kEnvelope + R"({"str": [")" + hundred_mb_of('x') + "\", 7]}\n" + read_file(kCompile / kLog0));
    return std::vector{one({{"in", file.string()}})};
  });
  add("pt2-dotdot", "zip 2^40 declared sizes or ../ names", [](const fs::path& d) {
    return std::vector{one({{"in", write_zip(d / "m.pt2", {{"../evil/models/model.json", "{}"}})},
                            {"member", "../evil/models/model.json"}})};
  });
  add("pt2-declared-2^40", "zip 2^40 declared sizes or ../ names", [](const fs::path& d) {
    return std::vector{
        one({{"in", write_file(d / "m.pt2", zip_declaring("a/models/model.json", "{}", 1ULL << 40))}})};
  });
  add("pt2-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "graph" / "eager" / "tiny_export.pt2");
    auto cuts = local_headers(full);
    cuts.push_back(full.rfind("PK\x01\x02"));
    cuts.push_back(full.size() - 10);
    std::vector<Variant> out;
    for (const auto cut : spread(cuts, 12)) {
      if (cut == 0) continue;
      out.push_back(
          one({{"in", write_file(d / ("cut" + std::to_string(cut)) / "tiny.pt2", full.substr(0, cut))}},
              "cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("pt2-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    return std::vector{one({{"in", write_zip(d / "m.pt2", {{"a/models/model.json", deep_json(kMillion)}})}})};
  });

  // -- Flight Recorder ----------------------------------------------------------------------
  const fs::path fr_eager = kData / "graph" / "eager";
  add("fr-pickle-globals", "pickle GLOBAL/REDUCE of os.system / builtins.eval / subprocess.Popen",
      [](const fs::path& d) {
        std::vector<Variant> out;
        int k = 0;
        for (const auto& c : kCallables) {
          const auto marker = (d / "PWNED").string();
          const auto file = d / ("c" + std::to_string(k++)) / "rank0_flight_recorder.pkl";
          const auto bytes = fr_pickle_head() + reduce_call(c.module, c.name, marker, c.stack_global) + "au.";
          out.push_back(one(
              {{"in", write_file(file, bytes)}, {"callable", c.module + "." + c.name}, {"marker", marker}},
              c.module + "." + c.name + (c.stack_global ? " (STACK_GLOBAL)" : " (GLOBAL)")));
        }
        return out;
      });
  add("fr-pickle-length-claim", "pickle 2^40 length claim", [](const fs::path& d) {
    return std::vector{
        one({{"in", write_file(d / "rank0_flight_recorder.pkl", fr_pickle_head() + length_claim())}})};
  });
  add("fr-pickle-deep", "10^6-deep nesting", [](const fs::path& d) {
    const auto bytes = fr_pickle_head() + std::string(kMillion, '(') + std::string(kMillion, 'l') + "au.";
    return std::vector{one({{"in", write_file(d / "rank0_flight_recorder.pkl", bytes)}})};
  });
  add("fr-pickle-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "flight_recorder_pickle" / "fr_rank0.pkl");
    std::vector<std::size_t> ops;
    model::pickle::OpReader reader(std::as_bytes(std::span(full.data(), full.size())), "fr_rank0.pkl");
    while (!reader.at_end()) {
      const auto op = reader.next();
      if (op.offset > 2) ops.push_back(op.offset);  // from the first opcode after the protocol
      if (op.code == '.') break;
    }
    std::vector<Variant> out;
    for (const auto cut : spread(ops, 16)) {
      const auto file = d / ("cut" + std::to_string(cut)) / "rank0_flight_recorder.pkl";
      out.push_back(
          one({{"in", write_file(file, full.substr(0, cut))}}, "cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("fr-json-truncated", "truncated at every record boundary", [fr_eager](const fs::path& d) {
    const auto full = read_file(fr_eager / "rank0_flight_recorder.json");
    std::vector<std::size_t> cuts;
    for (auto at = full.find("},{"); at != std::string::npos; at = full.find("},{", at + 1))
      cuts.push_back(at + 2);
    std::vector<Variant> out;
    for (const auto cut : spread(cuts, 8)) {
      const auto file = d / ("cut" + std::to_string(cut)) / "rank0_flight_recorder.json";
      out.push_back(
          one({{"in", write_file(file, full.substr(0, cut))}}, "cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("fr-json-deep", "10^6-deep nesting", [](const fs::path& d) {
    const auto text = R"({"version": "2.4", "entries": )" + deep_json(kMillion) + "}";
    // Also beside a graph: hoist and replay read the process groups of the dumps next to it.
    return std::vector{
        one({{"in", write_file(d / "rank0_flight_recorder.json", text)},
             {"graph", write_file(d / "graph.txt", read_file(kData / "replay" / "collectives.txt"))}})};
  });
  add("fr-json-nan", "NaN/Inf in JSON", [fr_eager](const fs::path& d) {
    auto text = read_file(fr_eager / "rank0_flight_recorder.json");
    const auto at = text.find("\"time_created_ns\":");
    text.replace(at, text.find(',', at) - at, "\"time_created_ns\":NaN");
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank1_flight_recorder.json", d / "in" / "rank1_flight_recorder.json");
    write_file(d / "in" / "rank0_flight_recorder.json", text);
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("fr-duplicate-ranks", "duplicate ranks", [fr_eager](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank0_flight_recorder.json");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank00_flight_recorder.json");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("fr-mixed-runs", "ranks mixed from two runs", [fr_eager](const fs::path& d) {
    // Rank 0 of the two-rank eager run beside rank 1 of a four-rank run.
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank0_flight_recorder.json");
    fs::copy_file(kData / "flight_recorder_pickle" / "json" / "rank1_flight_recorder.json",
                  d / "in" / "rank1_flight_recorder.json");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("fr-one-rank-empty", "one side empty", [fr_eager](const fs::path& d) {
    auto j = nlohmann::json::parse(read_file(fr_eager / "rank1_flight_recorder.json"));
    j["entries"] = nlohmann::json::array();
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank0_flight_recorder.json");
    write_file(d / "in" / "rank1_flight_recorder.json", j.dump());
    return std::vector{
        one({{"in", (d / "in").string()}, {"file", (d / "in" / "rank1_flight_recorder.json").string()}})};
  });

  // -- bucket plans, gate policies, NCCL graphs -------------------------------------------------
  add("meta-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    return std::vector{one({{"in", write_file(d / "in" / "rank0_meta.json",
                                              R"({"registration_order": )" + deep_json(kMillion) + "}")}})};
  });
  add("meta-duplicate-ranks", "duplicate ranks", [](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(kData / "graph" / "eager" / "rank0_meta.json", d / "in" / "rank0_meta.json");
    fs::copy_file(kData / "graph" / "eager" / "rank0_meta.json", d / "in" / "rank00_meta.json");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("meta-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "graph" / "eager" / "rank0_meta.json");
    std::vector<Variant> out;
    for (const auto cut : spread(line_boundaries(full), 8)) {
      const auto file = d / ("cut" + std::to_string(cut)) / "rank0_meta.json";
      out.push_back(
          one({{"in", write_file(file, full.substr(0, cut))}}, "cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("policy-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    return std::vector{
        one({{"in", write_file(d / "policy.json", R"({"baseline": )" + deep_json(kMillion) + "}")}})};
  });
  add("policy-nan", "NaN/Inf in JSON", [](const fs::path& d) {
    const std::string policy = R"({"baseline": ")" + (kRuns / "eager").string() + R"(", "candidate": ")" +
                               (kRuns / "eager_repeat").string() + R"(", "tolerance": {"rtol": NaN}})";
    return std::vector{one({{"in", write_file(d / "policy.json", policy)}})};
  });
  add("nccl-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "nccl" / "graph-dump-2xh200-ring.xml");
    std::vector<std::size_t> cuts;
    for (std::size_t at = full.find('<', 1); at != std::string::npos; at = full.find('<', at + 1))
      cuts.push_back(at);
    std::vector<Variant> out;
    for (const auto cut : spread(cuts, 10)) {
      const auto file = d / ("cut" + std::to_string(cut)) / "dump.xml";
      out.push_back(
          one({{"in", write_file(file, full.substr(0, cut))}}, "cut at byte " + std::to_string(cut)));
    }
    return out;
  });
  add("nccl-deep", "10^6-deep nesting", [](const fs::path& d) {
    std::string xml = "<graphs version=\"1\">";
    for (std::size_t i = 0; i < kMillion; ++i) xml += "<a>";
    for (std::size_t i = 0; i < kMillion; ++i) xml += "</a>";
    xml += "</graphs>\n";
    return std::vector{one({{"in", write_file(d / "dump.xml", xml)}})};
  });
  add("nccl-entity-expansion", "10^6-deep nesting", [](const fs::path& d) {
    // "Billion laughs": ten levels of ten references each, 10^10 bytes once expanded.
    std::string xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE graphs [\n<!ENTITY e0 \"lol\">\n";
    for (int i = 1; i <= 10; ++i) {
      xml += "<!ENTITY e" + std::to_string(i) + " \"";
      for (int k = 0; k < 10; ++k) xml += "&e" + std::to_string(i - 1) + ";";
      xml += "\">\n";
    }
    xml += "]>\n<graphs version=\"1\">&e10;</graphs>\n";
    return std::vector{one({{"in", write_file(d / "dump.xml", xml)}})};
  });
  return inputs;
}

}  // namespace

const std::vector<HostileInput>& hostile_inputs() {
  static const std::vector<HostileInput> inputs = make_inputs();
  return inputs;
}

const std::vector<std::string>& hostile_kinds() {
  static const std::vector<std::string> kinds = {
      "empty file",
      "empty folder",
      "wrong format",
      "truncated at every record boundary",
      "zero ranks",
      "one side empty",
      "ranks mixed from two runs",
      "duplicate ranks",
      "pickle GLOBAL/REDUCE of os.system / builtins.eval / subprocess.Popen",
      "pickle 2^40 length claim",
      "10^6-deep nesting",
      "zip 2^40 declared sizes or ../ names",
      "safetensors header longer than the file",
      "DCP metadata past a file's end",
      "symlink loop",
      "non-UTF-8 and control characters in names",
      "NaN/Inf in JSON",
      "100 MB single line",
      "full disk",
      "read-only output folder",
  };
  return kinds;
}

std::map<std::string, std::string> standard_vars(const std::filesystem::path& dir) {
  return {{"tmp", dir.string()},
          {"out", (dir / "out").string()},
          {"eager", (kRuns / "eager").string()},
          {"eager_repeat", (kRuns / "eager_repeat").string()},
          {"compile", (kRuns / "compile").string()},
          {"policy", (kRuns / "gate.json").string()},
          {"samples", (kSource / "samples").string()},
          {"data", kData.string()}};
}

}  // namespace gparity::testing
