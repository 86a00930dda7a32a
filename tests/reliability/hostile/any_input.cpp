// Hostile inputs any reader may get (empty, wrong format, symlink loops, control characters in
// names and content) and hostile output paths (a full disk, a read-only folder).

#include <random>

#include "tests/reliability/hostile/formats.hpp"

namespace gparity::testing::hostile {
namespace {

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

std::string random_bytes(std::size_t n) {
  std::mt19937_64 rng(26);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  s[0] = '\x9c';  // not '{', 'P', 'V', '<', 0x80 or a digit: no reader's magic
  return s;
}

}  // namespace

void add_any_inputs(const InputAdder& add) {
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
}

}  // namespace gparity::testing::hostile
