// Hostile graphs: FX text, graph JSON, TORCH_TRACE logs and torch.export .pt2 archives.

#include <minizip/zip.h>

#include <stdexcept>

#include "tests/reliability/hostile/formats.hpp"

namespace gparity::testing::hostile {
namespace {

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

const std::string kEnvelope = "V1121 04:50:36.775000 735 torch/_logging/structured.py:28] ";

/// Offsets where an envelope line starts (payload lines start with a tab), after the first.
std::vector<std::size_t> envelope_starts(const std::string& log) {
  std::vector<std::size_t> out;
  for (std::size_t at : line_boundaries(log))
    if (log[at] != '\t') out.push_back(at);
  return out;
}

/// One variant per cut: the two-rank log folder with rank 1's log (`log1`) cut there.
std::vector<Variant> rank1_log_cuts(const fs::path& d, const std::string& log1,
                                    const std::vector<std::size_t>& cuts) {
  std::vector<Variant> out;
  for (const auto cut : cuts) {
    const auto dir = d / ("cut" + std::to_string(cut));
    fs::create_directories(dir);
    fs::copy_file(kCompile / kLog0, dir / kLog0);
    write_file(dir / kLog1, log1.substr(0, cut));
    out.push_back(one({{"in", dir.string()}, {"file", (dir / kLog1).string()}},
                      "rank 1 cut at byte " + std::to_string(cut)));
  }
  return out;
}

}  // namespace

void add_graph_inputs(const InputAdder& add) {
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
    return rank1_log_cuts(d, full, spread(cuts, 10));
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
    return rank1_log_cuts(d, full, spread(cuts, 6));
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
    return file_cuts(d, "tiny.pt2", full, spread(cuts, 12));
  });
  add("pt2-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    return std::vector{one({{"in", write_zip(d / "m.pt2", {{"a/models/model.json", deep_json(kMillion)}})}})};
  });
}

}  // namespace gparity::testing::hostile
