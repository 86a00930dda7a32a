// The non-executing pickle reader: every protocol, the value tree, the allow-list, caps and
// byte offsets in errors.

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/dcp_metadata.hpp"
#include "core/model/formats/pickle/pickle_interpret.hpp"
#include "core/model/formats/pickle/pickle_machine.hpp"
#include "tests/support/file_text.hpp"

namespace {

namespace pk = gparity::model::pickle;
using gparity::model::InputError;

const std::string kPickleData = std::string(GPARITY_SOURCE_DIR) + "/tests/data";

using gparity::testing::slurp;

// A literal with embedded NULs, all of it.
template <std::size_t N>
std::string lit(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

pk::Document decode(const std::string& s, const pk::Limits& limits = {}) {
  return pk::decode(bytes_of(s), "test.pkl", limits);
}

std::string pickle_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Written by CPython's pickle at protocols 0..5 (tests/data/pickle): the same plain object.
TEST(Pickle, EveryProtocolDecodesToTheSameValue) {
  const auto expected = nlohmann::json::parse(
      R"({"a":[1,2.5,null,true,"x",[1,-2]],"b":{"k":-1099511627776,"u":"\u00e9\u4e2d"},"c":"\u0000\u00ff"})");
  for (int p = 0; p <= 5; ++p) {
    const auto text = slurp(kPickleData + "/pickle/plain_protocol" + std::to_string(p) + ".pkl");
    ASSERT_FALSE(text.empty());
    const auto doc = decode(text);
    EXPECT_EQ(pk::to_json(doc, *doc.root), expected) << "protocol " << p;
    if (p >= 2) {
      EXPECT_EQ(doc.protocol, p);
    }
  }
}

TEST(Pickle, GlobalsAndReduceAreSymbolicRecordsNeverCalls) {
  // os.system('true') as protocol 0: GLOBAL, MARK, STRING, TUPLE, REDUCE, STOP.
  const std::string evil = "cos\nsystem\n(S'true'\ntR.";
  const auto doc = decode(evil);
  ASSERT_EQ(doc.root->kind, pk::Kind::Object);
  EXPECT_TRUE(doc.root->is_call_of("os", "system"));
  ASSERT_EQ(doc.root->args->items.size(), 1U);
  EXPECT_EQ(doc.root->args->items[0]->text, "true");
  // Interpretation refuses it, naming the reference and where it is.
  const auto msg = pickle_error_of([&] { pk::require_allowed(doc, pk::dcp_metadata_allow_list()); });
  EXPECT_NE(msg.find("os.system"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("allow-list"), std::string::npos) << msg;
  // And a STACK_GLOBAL one hidden inside plain data (protocol 4): refused by every interpretation.
  const std::string hidden =
      lit("\x80\x04]\x8c\x08"
          "builtins\x8c\x04"
          "eval\x93\x8c\x01x\x85R"
          "a.");
  const auto d2 = decode(hidden);
  EXPECT_NE(
      pickle_error_of([&] { pk::require_allowed(d2, pk::torch_save_allow_list()); }).find("builtins.eval"),
      std::string::npos);
  EXPECT_NE(pickle_error_of([&] { (void)pk::to_json(d2, *d2.root); }).find("not plain data"),
            std::string::npos);
  EXPECT_NE(pickle_error_of([&] {
              (void)gparity::model::parse_dcp_metadata(bytes_of(evil), "evil/.metadata");
            }).find("os.system"),
            std::string::npos);
}

TEST(Pickle, PersistentIdsAndBuildAreKept) {
  // BINPERSID of ('storage', 'k'), then BUILD with a dict state on a NEWOBJ record.
  const std::string p = lit("\x80\x02(X\x07\x00\x00\x00storageX\x01\x00\x00\x00ktQ.");
  const auto doc = decode(p);
  ASSERT_EQ(doc.root->kind, pk::Kind::PersId);
  EXPECT_EQ(doc.root->items[0]->items[0]->text, "storage");
  const std::string b =
      "\x80\x04\x8c\x01m\x8c\x01"
      "C\x93)\x81}\x8c\x01"
      "f"
      "K\x05sb.";
  const auto d2 = decode(b);
  ASSERT_TRUE(d2.root->is_call_of("m", "C"));
  ASSERT_NE(pk::field(*d2.root, "f"), nullptr);
  EXPECT_EQ(pk::field(*d2.root, "f")->i, 5);
}

TEST(Pickle, MalformedInputNamesTheByteOffset) {
  EXPECT_NE(pickle_error_of([] { (void)decode(lit("\x80\x02]q\x00")); }).find("byte 5"), std::string::npos);
  EXPECT_NE(pickle_error_of([] {
              (void)decode(
                  lit("\x80\x02X\xff\x00\x00\x00"
                      "ab"));
            }).find("byte 2"),
            std::string::npos);
  EXPECT_NE(pickle_error_of([] { (void)decode("\x80\x02\xfe."); }).find("unknown opcode 0xfe"),
            std::string::npos);
  EXPECT_NE(pickle_error_of([] { (void)decode("h\x07."); }).find("memo entry 7"), std::string::npos);
  EXPECT_NE(pickle_error_of([] { (void)decode("a."); }).find("stack underflow"), std::string::npos);
  EXPECT_NE(pickle_error_of([] { (void)decode("\x80\x09N."); }).find("protocol 9"), std::string::npos);
  EXPECT_NE(pickle_error_of([] { (void)decode(""); }).find("without STOP"), std::string::npos);
}

// Memo indices far beyond the entries so far are kept apart from the dense ones (so one large
// index allocates nothing large), and still found once the dense ones grow past them.
TEST(Pickle, MemoFindsSparseIndicesAfterTheDenseOnesGrowPastThem) {
  const auto le4 = [](std::uint32_t v) {
    return std::string{static_cast<char>(v & 0xFF), static_cast<char>((v >> 8) & 0xFF),
                       static_cast<char>((v >> 16) & 0xFF), static_cast<char>(v >> 24)};
  };
  std::string p = "\x80\x04K\x2ar" + le4(5000) + "0";  // 42 at memo 5000, popped
  for (int i = 0; i < 2100; ++i) p += "N\x94";         // memo 1 .. 2100
  p += "Nr" + le4(5001);                               // the dense ones now cover 5000
  p += "j" + le4(5000) + ".";
  const auto doc = decode(p);
  ASSERT_EQ(doc.root->kind, pk::Kind::Int);
  EXPECT_EQ(doc.root->i, 42);
  EXPECT_NE(pickle_error_of([&] {
              (void)decode("\x80\x04Nr" + le4(5000) + "j" + le4(4999) + ".");
            }).find("memo entry 4999"),
            std::string::npos);
}

TEST(Pickle, CapsBoundMemoStackAndValues) {
  pk::Limits small;
  small.max_memo = 4;
  small.max_stack = 8;
  small.max_values = 16;
  std::string memo = "\x80\x04";
  for (int i = 0; i < 6; ++i) memo += "N\x94";
  memo += ".";
  EXPECT_NE(pickle_error_of([&] { (void)decode(memo, small); }).find("memo"), std::string::npos);
  EXPECT_NE(pickle_error_of([&] { (void)decode(std::string(20, '(') + "N.", small); }).find("limit"),
            std::string::npos);
  EXPECT_NE(pickle_error_of([&] { (void)decode(std::string(20, ']') + ".", small); }).find("limit"),
            std::string::npos);
}

TEST(Pickle, SelfReferenceAndDeepNestingStayBounded) {
  // A list that contains itself: decodes (no reference counting to leak), to_json stops at the cap.
  const auto doc =
      decode(lit("\x80\x04]\x94h\x00"
                 "a."));
  ASSERT_EQ(doc.root->items.size(), 1U);
  EXPECT_EQ(doc.root->items[0], doc.root);
  EXPECT_NE(pickle_error_of([&] { (void)pk::to_json(doc, *doc.root); }).find("nested deeper"),
            std::string::npos);
  // 40 levels of a tuple holding its child twice: 81 values, 2^40 leaves once expanded.
  std::string doubling = "\x80\x02N";
  for (int i = 0; i < 40; ++i) doubling += "2\x86";
  const auto wide = decode(doubling + ".");
  EXPECT_NE(pickle_error_of([&] { (void)pk::to_json(wide, *wide.root); }).find("expands past"),
            std::string::npos);
  // 100,000 nested one-tuples: decoding is iterative, interpretation capped.
  const auto deep = decode("\x80\x02N" + std::string(100000, '\x85') + ".");
  EXPECT_NE(pickle_error_of([&] { (void)pk::to_json(deep, *deep.root); }).find("nested deeper"),
            std::string::npos);
}

TEST(Pickle, DcpMetadataOfARealCheckpoint) {
  // fsdp4/step-0/.metadata of ../shared/samples/torch-2.11-dcp (PyTorch 2.11, FSDP2 over 4 ranks).
  const auto text = slurp(kPickleData + "/dcp/fsdp4_step0.metadata");
  const auto m = gparity::model::parse_dcp_metadata(bytes_of(text), "fsdp4_step0.metadata");
  EXPECT_EQ(m.version, "1.0.0");
  ASSERT_EQ(m.entries.size(), 8U);
  EXPECT_EQ(m.entries[0].fqn, "model.tok.weight");
  EXPECT_EQ(m.entries[7].fqn, "model.out.weight");
  const auto& tok = m.entries[0];
  EXPECT_EQ(tok.dtype, gparity::model::DType::F32);
  EXPECT_EQ(tok.size, (std::vector<std::int64_t>{256, 128}));
  ASSERT_EQ(tok.chunks.size(), 4U);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(tok.chunks[r].offsets, (std::vector<std::int64_t>{static_cast<std::int64_t>(64 * r), 0}));
    EXPECT_EQ(tok.chunks[r].sizes, (std::vector<std::int64_t>{64, 128}));
    ASSERT_TRUE(tok.chunks[r].where);
    EXPECT_EQ(tok.chunks[r].where->file, "__" + std::to_string(r) + "_0.distcp");
  }
  // A flipped byte in a storage length is caught where it lies, not later.
  auto bad = text;
  bad.resize(bad.size() / 2);
  const auto msg =
      pickle_error_of([&] { (void)gparity::model::parse_dcp_metadata(bytes_of(bad), "cut.metadata"); });
  EXPECT_NE(msg.find("cut.metadata: byte"), std::string::npos) << msg;
}

}  // namespace
