// Formats told by content (core/model/formats/format_detect.hpp): every format the readers take,
// from real files (bundled samples, Python's pickle module, the TensorBoard writer), whatever
// their names; and what no reader takes (empty, binary, a symlink loop) named as such.

#include "core/model/formats/format_detect.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/graph_json.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tensorboard_writer.hpp"

namespace {

using gparity::model::detect_format;
using gparity::model::Format;
using gparity::testing::TempDir;

const std::string kDetectData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/";

using gparity::testing::slurp;

/// The same bytes under a name that says nothing: detection must not need the name.
std::string renamed(const TempDir& dir, const std::string& path, const std::string& name = "input.bin") {
  return dir.write(name, slurp(path));
}

TEST(FormatDetect, PicklesByProtocolOpcode) {
  TempDir dir;
  for (int protocol = 2; protocol <= 5; ++protocol) {
    const auto d = detect_format(
        renamed(dir, kDetectData + "pickle/plain_protocol" + std::to_string(protocol) + ".pkl", "x.log"));
    EXPECT_EQ(d.format, Format::Pickle) << protocol << ": " << d.describe();
    EXPECT_EQ(d.reason, "pickle protocol " + std::to_string(protocol));
  }
  EXPECT_EQ(detect_format(kDetectData + "reliability/hello.pkl").format, Format::Pickle);
  // Protocols 0 and 1 have no PROTO opcode: text-like opcodes, not claimed as pickles.
  EXPECT_NE(detect_format(kDetectData + "pickle/plain_protocol0.pkl").format, Format::Pickle);
}

TEST(FormatDetect, ZipSafetensorsAndDcpByContent) {
  TempDir dir;
  EXPECT_EQ(detect_format(renamed(dir, kDetectData + "graph/eager/tiny_export.pt2")).format, Format::Zip);
  const auto st = detect_format(renamed(dir, kDetectData + "dcp/grid.safetensors", "weights.bin"));
  EXPECT_EQ(st.format, Format::Safetensors) << st.describe();
  const auto dcp = detect_format(kDetectData + "dcp/grid");
  EXPECT_EQ(dcp.format, Format::DcpCheckpoint) << dcp.describe();
  EXPECT_NE(dcp.reason.find("4 .distcp files"), std::string::npos) << dcp.reason;
  // A .metadata that is not a pickle does not make a checkpoint.
  dir.write("fake/.metadata", "not a pickle");
  EXPECT_EQ(detect_format((dir.path() / "fake").string()).format, Format::Folder);
  // A safetensors header length past the file's end is not a safetensors file.
  std::string lying(8, '\0');
  lying[0] = '\x40';  // 64 bytes of header claimed, 4 present
  lying += "{\"a\"";
  EXPECT_NE(detect_format(dir.write("lying.safetensors", lying)).format, Format::Safetensors);
}

TEST(FormatDetect, TensorBoardByRecordFramingAndCrc) {
  TempDir dir;
  gparity::testing::EventFileWriter w;
  w.scalar(1, "loss", 2.5F);
  const auto path = dir.write("no_event_name.dat", w.bytes());
  const auto d = detect_format(path);
  EXPECT_EQ(d.format, Format::TensorBoard) << d.describe();
  // One flipped bit in the length's CRC: the framing no longer holds.
  std::string bad = w.bytes();
  bad[9] = static_cast<char>(bad[9] ^ 1);
  EXPECT_NE(detect_format(dir.write("bad.dat", bad)).format, Format::TensorBoard);
}

TEST(FormatDetect, TorchTraceFlightRecorderAndJsonByKeys) {
  TempDir dir;
  const auto log = detect_format(renamed(
      dir, kDetectData + "graph/compile_tp/dedicated_log_torch_trace_rank_0_07s9lv36.log", "trace.txt"));
  EXPECT_EQ(log.format, Format::TorchTrace) << log.describe();
  const auto fr = detect_format(renamed(dir, kDetectData + "graph/eager/rank0_flight_recorder.json", "dump"));
  EXPECT_EQ(fr.format, Format::FlightRecorderJson) << fr.describe();

  gparity::model::Graph g;
  g.name = g.intern("empty");
  const auto graph = detect_format(dir.write("g.txt", gparity::model::graph_to_json(g).dump(2)));
  EXPECT_EQ(graph.format, Format::GraphJson) << graph.describe();

  const auto other = detect_format(dir.write("other.json", R"({"hello": [1, 2, 3], "x": {"entries": 1}})"));
  EXPECT_EQ(other.format, Format::Json);
  EXPECT_EQ(other.reason, "JSON object with keys \"hello\", \"x\"");  // "entries" nested: not a dump

  // A '{' that does not parse is still the JSON readers': they name the damage by line and column.
  const auto cut = detect_format(dir.write("cut.json", "{ oops"));
  EXPECT_EQ(cut.format, Format::Json);
  EXPECT_EQ(cut.reason, "a '{' that does not parse as JSON");

  const auto lines = detect_format(dir.write("rank-0.jsonl", "{\"type\": \"step\"}\n{\"type\": \"step\"}\n"));
  EXPECT_EQ(lines.format, Format::JsonLines) << lines.describe();
}

TEST(FormatDetect, EmptyTextBinaryMissingAndLoops) {
  TempDir dir;
  const auto empty = detect_format(dir.write("empty.bin", ""));
  EXPECT_EQ(empty.format, Format::Empty);
  EXPECT_EQ(empty.describe(), "empty file (0 bytes)");
  EXPECT_EQ(detect_format(dir.write("fx.txt", "def forward(self, x):\n    return (x,)\n")).format,
            Format::Text);
  EXPECT_EQ(detect_format(dir.write("bin", std::string("\x01\x02\x00\xff\xfe", 5))).format, Format::Binary);
  EXPECT_EQ(detect_format(dir.write("latin1.log", "caf\xe9 au lait\n")).format, Format::Binary);
  EXPECT_EQ(detect_format((dir.path() / "nope").string()).format, Format::Missing);
  std::filesystem::create_symlink(dir.path() / "loop_b", dir.path() / "loop_a");
  std::filesystem::create_symlink(dir.path() / "loop_a", dir.path() / "loop_b");
  const auto loop = detect_format((dir.path() / "loop_a").string());
  EXPECT_EQ(loop.format, Format::Missing);
  EXPECT_NE(loop.reason.find("symbolic links"), std::string::npos) << loop.reason;
}

TEST(FormatDetect, DeepNestingInTheHeadCostsNoRecursion) {
  TempDir dir;
  // 10^6 nested arrays: the head (64 KiB of it) is scanned without building a document.
  const auto d = detect_format(dir.write("deep.json", "{\"a\": " + std::string(1'000'000, '[')));
  EXPECT_EQ(d.format, Format::Json) << d.describe();
  EXPECT_EQ(d.reason, "JSON object with keys \"a\"");
}

TEST(FormatDetect, UnrecognizedInputNamesTheFileAndTheFormatsTried) {
  TempDir dir;
  const auto path = dir.write("empty.bin", "");
  const auto e = gparity::model::unrecognized_input(path, detect_format(path), {"A reader", "B reader"});
  EXPECT_EQ(std::string(e.what()), path + ": empty file (0 bytes); formats tried: A reader, B reader");
}

}  // namespace
