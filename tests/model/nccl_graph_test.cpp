// NCCL graph XML: reading the dump NCCL wrote on 4 H200s, rewriting its ring orders, writing it
// back in NCCL's layout, and clear errors (file, line) on malformed files.

#include "core/model/formats/nccl_graph.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "tests/support/file_text.hpp"

namespace gparity::model {
namespace {

const std::string kDump = std::string(GPARITY_SOURCE_DIR) + "/tests/data/nccl/graph-dump-4xh200-ring.xml";

using gparity::testing::slurp;

/// The InputError's line for `text`, or -1 when it parses.
std::int64_t error_line(const std::string& text, std::string* what = nullptr) {
  try {
    (void)parse_nccl_graph_xml(text, "bad.xml");
  } catch (const InputError& e) {
    if (what) *what = e.what();
    EXPECT_EQ(e.source(), "bad.xml");
    return e.line();
  }
  return -1;
}

TEST(NcclGraph, ReadsTheDumpFromFourH200s) {
  const auto f = read_nccl_graph_file(kDump);
  const auto graphs = f.graphs();
  ASSERT_EQ(graphs.size(), 5U);
  EXPECT_EQ(graphs[0].id, 0);
  EXPECT_TRUE(graphs[0].is_ring());
  EXPECT_EQ(graphs[0].nchannels, 12);
  ASSERT_EQ(graphs[0].channels.size(), 12U);
  for (const auto& ch : graphs[0].channels) EXPECT_EQ(ch.gpus, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(graphs[0].speed_intra, "30");
  EXPECT_EQ(graphs[1].pattern, 1);  // balanced tree
  EXPECT_FALSE(graphs[1].is_ring());
  EXPECT_EQ(graphs[2].nchannels, 0);
  EXPECT_EQ(graphs[0].channels[1].line, 9);
  ASSERT_NE(f.ring_graph(), nullptr);
  EXPECT_EQ(*f.ring_graph()->attr("id"), "0");
}

TEST(NcclGraph, TwoGpuDumpHasOneRingWhateverThePattern) {
  // NCCL 2.28.9's own dump of 2 H200s (written during `gparity run --ring-orders` on the device),
  // with `dev="0x1"` in hex: it reads, writes back unchanged, and every pattern leaves one ring,
  // since 0 1 and 1 0 are the same cycle: two ranks cannot show a ring-order effect.
  const std::string dump = std::string(GPARITY_SOURCE_DIR) + "/tests/data/nccl/graph-dump-2xh200-ring.xml";
  const auto text = slurp(dump);
  EXPECT_EQ(write_nccl_graph_xml(parse_nccl_graph_xml(text, dump)), text);
  for (const auto p : {RingPattern::ReverseOdd, RingPattern::Rotate, RingPattern::Random}) {
    auto f = parse_nccl_graph_xml(text, dump);
    const auto rw = rewrite_ring_orders(f, p, 1, 2);
    EXPECT_EQ(rw.after.size(), 12U);
    EXPECT_EQ(rw.distinct_after, 1U) << ring_pattern_name(p);
  }
}

TEST(NcclGraph, WritesItBackByteForByte) {
  // NCCL's reader accepts only its own layout; an unchanged file must round-trip exactly.
  const auto text = slurp(kDump);
  EXPECT_EQ(write_nccl_graph_xml(parse_nccl_graph_xml(text, kDump)), text);
}

TEST(NcclGraph, ReverseOddReversesEveryOtherChannelOnly) {
  auto f = read_nccl_graph_file(kDump);
  const auto rw = rewrite_ring_orders(f, RingPattern::ReverseOdd, 0, 4);
  EXPECT_EQ(rw.graph_id, 0);
  ASSERT_EQ(rw.after.size(), 12U);
  for (std::size_t c = 0; c < 12; ++c) {
    EXPECT_EQ(rw.before[c], (std::vector<std::int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(rw.after[c],
              c % 2 ? (std::vector<std::int64_t>{0, 3, 2, 1}) : (std::vector<std::int64_t>{0, 1, 2, 3}));
  }
  EXPECT_EQ(rw.distinct_after, 2U);
  // Read back: the ring graph changed, speeds, channel count and the tree graph did not.
  const auto text = write_nccl_graph_xml(f);
  const auto again = parse_nccl_graph_xml(text, "rewritten.xml").graphs();
  const auto orig = read_nccl_graph_file(kDump).graphs();
  EXPECT_EQ(again[0].channels[1].gpus, (std::vector<std::int64_t>{0, 3, 2, 1}));
  EXPECT_EQ(again[0].nchannels, 12);
  EXPECT_EQ(again[0].speed_intra, orig[0].speed_intra);
  EXPECT_EQ(again[0].speed_inter, orig[0].speed_inter);
  for (std::size_t c = 0; c < 12; ++c) EXPECT_EQ(again[1].channels[c].gpus, orig[1].channels[c].gpus);
  EXPECT_NE(text.find("<gpu dev=\"0x3\"/>\n      <gpu dev=\"0x2\"/>"), std::string::npos);
  EXPECT_NE(text.find("samechannels=\"0\""), std::string::npos);
  EXPECT_EQ(text.find("<?xml"), std::string::npos);  // NCCL's reader would take it for an element
}

TEST(NcclGraph, RotateGivesEveryRingThroughTheFirstGpu) {
  auto f = read_nccl_graph_file(kDump);
  const auto rw = rewrite_ring_orders(f, RingPattern::Rotate, 0);
  EXPECT_EQ(rw.after[0], (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(rw.after[1], (std::vector<std::int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(rw.after[2], (std::vector<std::int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(rw.after[3], rw.after[0]);
  EXPECT_EQ(rw.distinct_after, 3U);
}

TEST(NcclGraph, RandomIsSeededAndKeepsEachChannelAPermutation) {
  auto a = read_nccl_graph_file(kDump);
  auto b = read_nccl_graph_file(kDump);
  auto c = read_nccl_graph_file(kDump);
  const auto ra = rewrite_ring_orders(a, RingPattern::Random, 7);
  const auto rb = rewrite_ring_orders(b, RingPattern::Random, 7);
  const auto rc = rewrite_ring_orders(c, RingPattern::Random, 8);
  EXPECT_EQ(ra.after, rb.after);
  EXPECT_NE(ra.after, rc.after);
  EXPECT_GT(ra.distinct_after, 1U);
  for (const auto& ring : ra.after) {
    EXPECT_EQ(ring.front(), 0);
    EXPECT_EQ(std::set<std::int64_t>(ring.begin(), ring.end()), (std::set<std::int64_t>{0, 1, 2, 3}));
  }
  // Pinned: the permutation must not change between machines or releases for one seed.
  EXPECT_EQ(ring_permutation(RingPattern::Random, 0, 4, 7), ring_permutation(RingPattern::Random, 0, 4, 7));
}

TEST(NcclGraph, TwoGpusHaveOnlyOneRing) {
  for (auto p : {RingPattern::ReverseOdd, RingPattern::Rotate, RingPattern::Random})
    for (std::size_t c = 0; c < 4; ++c)
      EXPECT_EQ(ring_permutation(p, c, 2, 1), (std::vector<std::size_t>{0, 1}));
}

TEST(NcclGraph, KeepsNetsAndRanksInPlace) {
  const std::string text =
      "<graphs version=\"1\">\n"
      "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"2\" speedintra=\"20.000000\" "
      "speedinter=\"20.000000\" latencyinter=\"0.000000\" typeintra=\"NVL\" typeinter=\"PIX\" "
      "samechannels=\"1\">\n"
      "    <channel>\n"
      "      <net dev=\"0x0\"/>\n"
      "      <gpu dev=\"0x10\" rank=\"8\"/>\n"
      "      <gpu dev=\"0x11\" rank=\"9\"/>\n"
      "      <gpu dev=\"0x12\" rank=\"10\"/>\n"
      "      <net dev=\"0x1\"/>\n"
      "    </channel>\n"
      "    <channel>\n"
      "      <net dev=\"0x0\"/>\n"
      "      <gpu dev=\"0x10\" rank=\"8\"/>\n"
      "      <gpu dev=\"0x11\" rank=\"9\"/>\n"
      "      <gpu dev=\"0x12\" rank=\"10\"/>\n"
      "      <net dev=\"0x1\"/>\n"
      "    </channel>\n"
      "  </graph>\n"
      "</graphs>\n";
  auto f = parse_nccl_graph_xml(text, "net.xml");
  const auto rw = rewrite_ring_orders(f, RingPattern::ReverseOdd, 0, 3);
  EXPECT_EQ(rw.after[1], (std::vector<std::int64_t>{8, 10, 9}));
  const auto out = write_nccl_graph_xml(f);
  EXPECT_NE(
      out.find("      <net dev=\"0x0\"/>\n      <gpu dev=\"0x10\" rank=\"8\"/>\n      <gpu dev=\"0x12\" "
               "rank=\"10\"/>\n      <gpu dev=\"0x11\" rank=\"9\"/>\n      <net dev=\"0x1\"/>"),
      std::string::npos);
}

TEST(NcclGraph, RanksMustMatchTheDump) {
  auto f = read_nccl_graph_file(kDump);
  try {
    (void)rewrite_ring_orders(f, RingPattern::ReverseOdd, 0, 2);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("4 GPUs but --ranks is 2"), std::string::npos);
  }
}

TEST(NcclGraph, NoRingGraphIsAnError) {
  auto text = slurp(kDump);
  text.replace(text.find("pattern=\"4\""), 11, "pattern=\"2\"");
  auto f = parse_nccl_graph_xml(text, "tree.xml");
  EXPECT_THROW((void)rewrite_ring_orders(f, RingPattern::Rotate, 0), InputError);
}

TEST(NcclGraph, MalformedFilesNameTheLine) {
  const std::string head = "<graphs version=\"1\">\n";
  const std::string graph_open =
      "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"1\" speedintra=\"30\" speedinter=\"30\" "
      "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"1\">\n";
  std::string what;
  // Not XML at all.
  EXPECT_EQ(error_line(head + "  <graph id=\"0\"\n", &what), 2);  // expat: where the unclosed tag starts
  EXPECT_NE(what.find("not well-formed XML"), std::string::npos) << what;
  // Truncated in the middle of a channel (a partial dump).
  EXPECT_EQ(error_line(head + graph_open + "    <channel>\n      <gpu dev=\"0\"/>\n", &what), 5);
  EXPECT_NE(what.find("ends inside <channel> (opened at line 3): truncated?"), std::string::npos) << what;
  // Wrong root.
  EXPECT_EQ(error_line("<system version=\"1\">\n</system>\n", &what), 1);
  EXPECT_NE(what.find("starts with <graphs"), std::string::npos) << what;
  // A graph without nchannels.
  EXPECT_EQ(
      error_line(head + "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" speedintra=\"30\" speedinter=\"30\" "
                        "typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"1\"/>\n</graphs>\n",
                 &what),
      2);
  EXPECT_NE(what.find("no nchannels"), std::string::npos) << what;
  // nchannels disagrees with the channels present.
  EXPECT_EQ(error_line(head + graph_open + "  </graph>\n</graphs>\n", &what), 2);
  EXPECT_NE(what.find("holds 0 <channel>"), std::string::npos) << what;
  // A gpu without dev, a dev that is not hex, a GPU twice, an unknown element, text.
  const auto channel = [&](const std::string& body) {
    return head + graph_open + "    <channel>\n" + body + "    </channel>\n  </graph>\n</graphs>\n";
  };
  EXPECT_EQ(error_line(channel("      <gpu rank=\"0\"/>\n"), &what), 4);
  EXPECT_NE(what.find("no dev="), std::string::npos) << what;
  EXPECT_EQ(error_line(channel("      <gpu dev=\"zz\"/>\n"), &what), 4);
  EXPECT_EQ(error_line(channel("      <gpu dev=\"0\"/>\n      <gpu dev=\"0x0\"/>\n"), &what), 5);
  EXPECT_NE(what.find("appears twice"), std::string::npos) << what;
  EXPECT_EQ(error_line(channel("      <nic dev=\"0\"/>\n"), &what), 4);
  EXPECT_EQ(error_line(channel("      0 1 2 3\n"), &what), 4);
  EXPECT_EQ(error_line(channel(""), &what), 3);
  EXPECT_NE(what.find("no <gpu>"), std::string::npos) << what;
  // A link type NCCL does not know; a value NCCL's reader cannot read back.
  std::string t =
      head + graph_open + "    <channel>\n      <gpu dev=\"0\"/>\n    </channel>\n  </graph>\n</graphs>\n";
  EXPECT_EQ(error_line(t), -1);
  auto u = t;
  u.replace(u.find("typeintra=\"NVL\""), 15, "typeintra=\"XYZ\"");
  EXPECT_EQ(error_line(u), 2);
  u = t;
  u.replace(u.find("<gpu dev=\"0\""), 12, "<gpu dev=\"0\" note=\"a&amp;b\"");
  EXPECT_EQ(error_line(u, &what), 4);
  EXPECT_NE(what.find("cannot read"), std::string::npos) << what;
  // Empty file.
  EXPECT_NE(error_line(""), -1);
}

TEST(NcclGraph, KeepsAttributesANewerNcclAdds) {
  auto text = slurp(kDump);
  text.replace(text.find("samechannels=\"1\""), 16, "samechannels=\"1\" future=\"x\"");
  const auto f = parse_nccl_graph_xml(text, "newer.xml");
  EXPECT_NE(write_nccl_graph_xml(f).find("future=\"x\""), std::string::npos);
}

TEST(NcclGraph, PatternNames) {
  for (auto p : {RingPattern::ReverseOdd, RingPattern::Rotate, RingPattern::Random})
    EXPECT_EQ(parse_ring_pattern(ring_pattern_name(p)), p);
  EXPECT_FALSE(parse_ring_pattern("reverse"));
  EXPECT_EQ(canonical_ring({2, 3, 0, 1}), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace gparity::model
