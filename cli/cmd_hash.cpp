// `gparity hash PATH...`: per-tensor XXH3-64 and shard-invariant hashes of checkpoints
// (.safetensors files, DCP checkpoint folders) and of plain files.

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/terminal.hpp"
#include "core/model/base/display_text.hpp"
#include "core/model/base/json_output.hpp"
#include "core/model/formats/checkpoint_hash.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

namespace gparity::cli {
namespace {

struct HashOptions {
  std::vector<std::string> files;
  bool json = false;
  unsigned threads = 0;
  std::string spec = "v1";
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string dtype_text(const model::TensorDigest& t) {
  return t.dtype ? std::string(model::dtype_name(*t.dtype)) : "bytes";
}

nlohmann::json to_json(const std::vector<model::FileDigest>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : f.tensors) {
      tensors.push_back({{"name", t.name},
                         {"dtype", dtype_text(t)},
                         {"shape", t.shape},
                         {"xxh3", hash::to_hex(t.xxh3)},
                         {"shard_hash", hash::to_hex(t.shard_hash)},
                         {"layout", t.layout}});
    }
    out.push_back({{"path", f.path},
                   {"format", f.format},
                   {"shard_spec", std::string(hash::shard_spec_name(f.shard_spec))},
                   {"tensors", tensors},
                   {"other_entries", f.other_entries}});
  }
  return out;
}

void print_text(const std::vector<model::FileDigest>& files) {
  const bool colour = colour_enabled(stdout);
  for (const auto& f : files) {
    // Tensor names and entries come from the files: shown through display_text (--json: exact).
    std::cout << paint(model::display_text(f.path), Colour::Bold, colour) << " (" << f.format << ", "
              << f.tensors.size() << (f.tensors.size() == 1 ? " tensor" : " tensors") << ")\n";
    std::size_t name_w = 4;
    std::size_t shape_w = 5;
    for (const auto& t : f.tensors) {
      name_w = std::max(name_w, model::display_text(t.name).size());
      shape_w = std::max(shape_w, shape_text(t.shape).size());
    }
    const auto pad = [](std::string s, std::size_t w) {
      s.resize(std::max(w, s.size()), ' ');
      return s;
    };
    const std::string shard_label = "shard_hash " + std::string(hash::shard_spec_name(f.shard_spec));
    std::cout << "  " << pad("name", name_w) << "  " << pad("dtype", 9) << "  " << pad("shape", shape_w)
              << "  " << pad("xxh3", 16) << "  "
              << (f.format == "dcp" ? pad(shard_label, 16) + "  layout" : shard_label) << "\n";
    for (const auto& t : f.tensors) {
      std::cout << "  " << pad(model::display_text(t.name), name_w) << "  " << pad(dtype_text(t), 9) << "  "
                << pad(shape_text(t.shape), shape_w) << "  " << hash::to_hex(t.xxh3) << "  "
                << hash::to_hex(t.shard_hash)
                << (f.format == "dcp" ? "  " + model::display_text(t.layout) : "") << '\n';
    }
    for (const auto& e : f.other_entries) std::cout << "  " << model::shown(e) << "  (not a tensor)\n";
  }
}

}  // namespace

void register_hash(CLI::App& app, Action& action) {
  auto opts = std::make_shared<HashOptions>();
  CLI::App* cmd = app.add_subcommand(
      "hash",
      "Hash every tensor of .safetensors checkpoints and DCP checkpoint folders (and plain "
      "files as raw bytes): XXH3-64 of the full tensor and the shard-invariant hash "
      "(docs/hashing.md, docs/checkpoints.md).");
  cmd->add_option("PATH", opts->files, "Files or DCP checkpoint folders to hash")->required();
  cmd->add_option("--threads", opts->threads,
                  "Threads (0 = all cores): paths are hashed in parallel, and a DCP checkpoint's tensors "
                  "with at most one thread per 8 MiB");
  cmd->add_option("--spec", opts->spec,
                  "Shard-invariant hash spec: v1 (default; what traces record) or v2 (docs/hashing.md)")
      ->check(CLI::IsMember({"v1", "v2"}));
  cmd->add_flag("--json", opts->json, "Machine-readable output");
  cmd->callback([opts, &action] {
    action = [opts] {
      ProgressBar progress("hashing", opts->files.size());
      model::CheckpointHashOptions hash_options{opts->threads};
      hash_options.spec = *hash::parse_shard_spec(opts->spec);  // CLI11 allowed only v1 / v2
      const auto digests = model::hash_files(
          opts->files, hash_options, [&](std::size_t k, const std::string& f) { progress.update(k, f); });
      progress.finish();
      if (opts->json) {
        std::cout << model::json_output(to_json(digests)) << '\n';
      } else {
        print_text(digests);
      }
      return kExitParity;
    };
  });
}

}  // namespace gparity::cli
