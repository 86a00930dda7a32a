// torch.export .pt2 archives (the real 2.11 archive and a synthesized flat zip of the older
// layout) and hostile zips: huge members, zip bombs, path tricks, too many members.

#include <gtest/gtest.h>
#include <minizip/zip.h>

#include <fstream>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/pt2.hpp"
#include "core/model/graph/fx_text.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::model;

const std::string kPt2 = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/eager/tiny_export.pt2";

// Writes a zip with the given (name, content) members through minizip, deflated unless `stored`.
std::string make_zip(const gparity::testing::TempDir& dir, const std::string& name,
                     const std::vector<std::pair<std::string, std::string>>& members, bool stored = false) {
  const std::string path = (dir.path() / name).string();
  zipFile z = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  EXPECT_NE(z, nullptr);
  for (const auto& [m, content] : members) {
    EXPECT_EQ(zipOpenNewFileInZip64(z, m.c_str(), nullptr, nullptr, 0, nullptr, 0, nullptr,
                                    stored ? 0 : Z_DEFLATED, stored ? 0 : Z_DEFAULT_COMPRESSION, 0),
              ZIP_OK)
        << m;
    EXPECT_EQ(zipWriteInFileInZip(z, content.data(), static_cast<unsigned>(content.size())), ZIP_OK) << m;
    EXPECT_EQ(zipCloseFileInZip(z), ZIP_OK) << m;
  }
  EXPECT_EQ(zipClose(z, nullptr), ZIP_OK);
  return path;
}

using gparity::testing::slurp;

std::string model_json() {
  const ZipArchive zip(kPt2);
  return zip.read("tiny_export/models/model.json");
}

TEST(GraphPt2, RealArchiveMatchesItsPrintReadableText) {
  const auto programs = read_pt2(kPt2);
  ASSERT_EQ(programs.size(), 1U);
  EXPECT_EQ(programs[0].member, "tiny_export/models/model.json");
  const Graph& g = programs[0].graph;
  std::ifstream f(std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/eager/tiny_export_graph.txt");
  std::stringstream ss;
  ss << f.rdbuf();
  const Graph text = parse_fx_text(ss.str(), "tiny_export_graph.txt");
  // The same program from two importers: node for node the same names, kinds and targets.
  ASSERT_EQ(g.nodes.size(), text.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(g.node_name(static_cast<NodeId>(i)), text.node_name(static_cast<NodeId>(i)));
    EXPECT_EQ(g.nodes[i].kind, text.nodes[i].kind) << i;
    if (g.nodes[i].kind == NodeKind::CallFunction) {
      EXPECT_EQ(g.str(g.nodes[i].target), text.str(text.nodes[i].target)) << i;
      EXPECT_EQ(g.nodes[i].meta.sizes.size(), text.nodes[i].meta.sizes.size()) << i;
    }
  }
  const Node& rms = g.node(g.find_node("rms_norm"));
  EXPECT_EQ(g.str(rms.module_path), "layers.0.norm1");
  EXPECT_EQ(g.str(rms.source.file), "/usr/lib/python3/site-packages/torch/nn/modules/normalization.py");
  EXPECT_EQ(rms.source.line, 419);
  EXPECT_EQ(g.str(rms.source.function), "forward");
  const Node& sdpa = g.node(g.find_node("scaled_dot_product_attention"));
  EXPECT_EQ(g.str(sdpa.kwargs.empty() ? kEmptyStr : sdpa.kwargs[0].name), "");
  EXPECT_EQ(sdpa.args[4].kind, ValueKind::Float);
  EXPECT_EQ(g.str(sdpa.args[4].s), "0.0");
  EXPECT_EQ(g.node(0).meta.dtype, DType::F32);
  EXPECT_EQ(g.str(g.node(0).meta.device.type), "cpu");
}

TEST(GraphPt2, OldFlatLayoutIsRead) {
  gparity::testing::TempDir dir;
  const auto path = make_zip(dir, "old.pt2",
                             {{"serialized_exported_program.json", model_json()},
                              {"serialized_state_dict.pt", std::string(64, '\x80')},
                              {"version", "1"}});
  const auto programs = read_pt2(path);
  ASSERT_EQ(programs.size(), 1U);
  EXPECT_EQ(programs[0].member, "serialized_exported_program.json");
  EXPECT_EQ(programs[0].graph.nodes.size(), 80U);
}

void expect_pt2_error(const std::function<void()>& f, const std::string& source, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.source().find(source), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find(what), std::string::npos) << e.what();
  }
}

TEST(GraphPt2, HostileArchivesAreRejectedNamingTheMember) {
  gparity::testing::TempDir dir;
  for (const auto& bad : {std::string("../evil/models/m.json"), std::string("/abs/models/m.json"),
                          std::string("a\\b/models/m.json"), std::string("x/../../models/m.json")}) {
    const auto p = make_zip(dir, "trick.pt2", {{bad, "{}"}});
    expect_pt2_error([&] { read_pt2(p); }, "trick.pt2!" + bad, "member");
  }
  // A zip bomb: 64 MiB of zeros compress to ~64 KiB; the cap stops inflation.
  const auto bomb = make_zip(dir, "bomb.pt2", {{"a/models/m.json", std::string(64u << 20, ' ')}});
  ZipLimits small;
  small.max_member_bytes = 1u << 20;
  expect_pt2_error([&] { read_pt2(bomb, small); }, "bomb.pt2!a/models/m.json", "limit");
  ZipLimits few;
  few.max_members = 2;
  const auto many = make_zip(dir, "many.pt2", {{"a", ""}, {"b", ""}, {"c", ""}});
  expect_pt2_error([&] { read_pt2(many, few); }, "many.pt2", "more than the limit");
  // Not a zip at all, and a zip without a program.
  const auto junk = dir.write("junk.pt2", "PK\x03\x04 this is not a zip");
  expect_pt2_error([&] { read_pt2(junk); }, "junk.pt2", "not a readable zip");
  const auto empty = make_zip(dir, "none.pt2", {{"a/data/weights/w0", "x"}});
  expect_pt2_error([&] { read_pt2(empty); }, "none.pt2", "no exported program");
  // A program referring to a tensor nobody defines.
  std::string broken = model_json();
  broken.replace(broken.find("\"p_tok_weight\"}}, \"kind\""), 14, "\"p_nowhere__\"");
  const auto bad_ref = make_zip(dir, "ref.pt2", {{"r/models/model.json", broken}});
  expect_pt2_error([&] { read_pt2(bad_ref); }, "ref.pt2!r/models/model.json", "unknown tensor 'p_nowhere__'");
}

// Every member read is checked against its CRC-32 and its declared size, stored or deflated, on a
// file or on bytes in memory; encrypted members and unknown methods are refused by name.
TEST(GraphPt2, DamagedMembersAreReportedNotReturned) {
  gparity::testing::TempDir dir;
  const std::string text = "a member that is long enough to find again in the archive's bytes";
  const auto good = slurp(make_zip(dir, "good.zip", {{"m", text}}, /*stored=*/true));
  const std::size_t at = good.find(text);
  ASSERT_NE(at, std::string::npos);
  {
    const ZipArchive zip(std::as_bytes(std::span(good)), "good.zip");
    EXPECT_EQ(zip.read("m"), text);
    ASSERT_NE(zip.info("m"), nullptr);
    EXPECT_TRUE(zip.info("m")->stored());
    EXPECT_EQ(zip.info("m")->size, text.size());
  }
  // One flipped byte in the stored data: only the CRC can tell.
  std::string flipped = good;
  flipped[at + 3] ^= 0x20;
  const ZipArchive bad(std::as_bytes(std::span(flipped)), "flipped.zip");
  expect_pt2_error([&] { (void)bad.read("m"); }, "flipped.zip!m", "CRC-32 mismatch");
  // The encryption bit in the central directory (offset 8 of the entry).
  std::string locked = good;
  const std::size_t central = locked.rfind("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  locked[central + 8] |= 1;
  const ZipArchive enc(std::as_bytes(std::span(locked)), "locked.zip");
  expect_pt2_error([&] { (void)enc.read("m"); }, "locked.zip!m", "encrypted member");
  // A deflated member whose stream is cut short: the declared size is not reached.
  const std::string big(100000, 'x');
  auto deflated = slurp(make_zip(dir, "deflated.zip", {{"d", big + text}}));
  const std::size_t local_data = 30 + 1;  // the local header and the name "d"
  for (std::size_t i = local_data + 20; i < local_data + 60 && i < deflated.size(); ++i) deflated[i] = '\0';
  const ZipArchive cut(std::as_bytes(std::span(deflated)), "cut.zip");
  expect_pt2_error([&] { (void)cut.read("d"); }, "cut.zip!d", "deflate stream");
  // Bytes that hold no zip at all.
  const std::string junk = "PK\x05\x06 nothing";
  expect_pt2_error([&] { ZipArchive z(std::as_bytes(std::span(junk)), "junk"); }, "junk",
                   "not a readable zip");
}

}  // namespace
