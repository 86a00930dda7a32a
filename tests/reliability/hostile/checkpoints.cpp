// Hostile checkpoints: safetensors headers and DCP folders (.metadata pickles, record zips).

#include <span>
#include <stdexcept>

#include "core/model/formats/pickle/pickle_ops.hpp"
#include "tests/reliability/hostile/formats.hpp"

namespace gparity::testing::hostile {
namespace {

const fs::path kGrid = kData / "dcp" / "grid";

std::string dcp_with_metadata(const fs::path& dir, const std::string& metadata) {
  copy_dir(kGrid, dir);
  write_file(dir / ".metadata", metadata);
  return dir.string();
}

}  // namespace

void add_checkpoint_inputs(const InputAdder& add) {
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
    return file_cuts(d, "grid.safetensors", full,
                     std::vector<std::size_t>{std::size_t{4}, std::size_t{8}, 8 + n / 2, 8 + n, 8 + n + 1,
                                              full.size() - 1});
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
}

}  // namespace gparity::testing::hostile
