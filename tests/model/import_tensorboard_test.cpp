#include "core/model/formats/import_tensorboard.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/model/base/crc32c.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/run/run_source.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tensorboard_writer.hpp"

namespace {

using namespace gparity::model;
using gparity::testing::EventFileWriter;
using gparity::testing::TempDir;

std::uint32_t bits32(float v) {
  return std::bit_cast<std::uint32_t>(v);
}

/// Bit-at-a-time CRC-32C straight from the polynomial: the reference the tables must match.
std::uint32_t crc32c_bitwise(std::string_view s) {
  std::uint32_t c = ~0U;
  for (const char ch : s) {
    c ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, KnownAnswers) {
  EXPECT_EQ(crc32c(std::string_view("123456789")), 0xE3069283U);
  EXPECT_EQ(crc32c(std::string_view("")), 0U);
  // RFC 3720 (iSCSI) B.4 test vectors.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAU);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43U);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794EU);
}

TEST(Crc32c, MaskedLengthMatchesRealEventFileHeaders) {
  // Every torch.utils.tensorboard event file starts 18 00 00 00 00 00 00 00 a3 7f 4b 22: the
  // 24-byte file_version record's length and its masked CRC.
  const std::string le24("\x18\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(mask_crc32c(crc32c(le24)), 0x224B7FA3U);
  EXPECT_EQ(gparity::testing::tfrecord(std::string(24, 'x')).substr(0, 12),
            le24 + std::string("\xa3\x7f\x4b\x22", 4));
}

TEST(Crc32c, TablesMatchTheBitwiseDefinitionAtEveryLengthAndAlignment) {
  std::string data;
  for (int i = 0; i < 80; ++i) data += static_cast<char>((i * 37 + 11) & 0xFF);
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t n = 0; n + start <= data.size(); ++n) {
      const auto s = std::string_view(data).substr(start, n);
      ASSERT_EQ(crc32c(s), crc32c_bitwise(s)) << "start " << start << " length " << n;
    }
  }
}

/// A run as torchtitan logs it: per step loss, grad norm and a learning rate.
EventFileWriter titan_like(const std::vector<float>& losses) {
  EventFileWriter w;
  w.graph("not really a GraphDef");
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const auto step = static_cast<std::int64_t>(i + 1);
    w.scalar(step, "loss_metrics/global_avg_loss", losses[i]);
    w.scalar(step, "loss_metrics/global_max_loss", losses[i] + 1.0F);
    w.scalar(step, "grad_norm", 0.5F / static_cast<float>(step));
    w.histogram(step, "weights/histogram");
  }
  return w;
}

RankTrace load_rank0(const std::string& path) {
  const auto run = open_run(path);
  EXPECT_EQ(run.format, RunFormat::TensorBoard);
  EXPECT_FALSE(run.rounded) << "float32 simple_value bits are exact";
  EXPECT_EQ(run.ranks.size(), 1U);
  return run.load(run.ranks.at(0));
}

TEST(ImportTensorBoard, ScalarsRoundTripWithExactBits) {
  TempDir tmp;
  const float nan_payload = std::bit_cast<float>(0x7FC00123U);
  const std::vector<float> losses = {6.3787937F, -0.0F, 0.0F, nan_payload, 1e-45F};
  titan_like(losses).save((tmp.path() / "tb" / "events.out.tfevents.1700000000.host.1.0").string());

  const auto t = load_rank0((tmp.path() / "tb").string());
  ASSERT_EQ(t.steps.size(), losses.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const auto& s = t.steps[i];
    EXPECT_EQ(s.step, static_cast<std::int64_t>(i + 1));
    ASSERT_TRUE(s.loss.has_value());
    EXPECT_EQ(s.loss->dtype, DType::F32);
    EXPECT_EQ(s.loss->bits, bits32(losses[i])) << "step " << s.step;
    ASSERT_TRUE(s.grad_norm.has_value());
    EXPECT_EQ(s.grad_norm->bits, bits32(0.5F / static_cast<float>(i + 1)));
    EXPECT_EQ(s.extra.at("loss_tag"), "loss_metrics/global_avg_loss");
    ASSERT_EQ(s.scalars.size(), 1U);  // the max loss is kept as a named scalar
    EXPECT_EQ(s.scalars[0].name, "loss_metrics/global_max_loss");
    EXPECT_EQ(s.scalars[0].value.bits, bits32(losses[i] + 1.0F));
  }
  EXPECT_NE(t.steps[1].loss->bits, t.steps[2].loss->bits) << "-0.0 and +0.0 differ by bits";
  // Only the histograms are worth a note; file_version and graph_def are not data.
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_EQ(t.issues[0].kind, TraceIssue::Kind::Note);
  EXPECT_NE(t.issues[0].problem.find("5 summary values that are not scalars"), std::string::npos)
      << t.issues[0].problem;
}

TEST(ImportTensorBoard, TensorScalarsKeepTheirDtypeAndTagPriorityPicksTheLoss) {
  TempDir tmp;
  EventFileWriter w;
  w.scalar(3, "loss", 2.5F);
  w.tensor_scalar(3, "loss_metrics/global_avg_loss", 2.25F);
  w.tensor_content_f64(3, "grad_norm/total", 0.1);
  w.tensor_content_f64(3, "lr", 3e-4);
  const auto file = (tmp.path() / "events.out.tfevents.1.h.2.0").string();
  w.save(file);

  const auto t = load_rank0(file);
  ASSERT_EQ(t.steps.size(), 1U);
  const auto& s = t.steps[0];
  ASSERT_TRUE(s.loss && s.grad_norm);
  EXPECT_EQ(s.loss->bits, bits32(2.25F)) << "loss_metrics/global_avg_loss outranks loss";
  EXPECT_EQ(s.grad_norm->dtype, DType::F64);
  EXPECT_EQ(s.grad_norm->bits, std::bit_cast<std::uint64_t>(0.1));
  EXPECT_EQ(s.extra.at("grad_norm_tag"), "grad_norm/total");
  ASSERT_EQ(s.scalars.size(), 2U);
  EXPECT_EQ(s.scalars[0].name, "loss");
  EXPECT_EQ(s.scalars[1].name, "lr");
  EXPECT_TRUE(t.issues.empty());
}

void flip_byte(std::string& bytes, std::size_t at) {
  bytes[at] = static_cast<char>(bytes[at] ^ 0x40);
}

TEST(ImportTensorBoard, CorruptDataCrcInTheMiddleNamesTheByteOffsetAndKeepsEarlierRecords) {
  TempDir tmp;
  auto w = titan_like({1.0F, 2.0F, 3.0F, 4.0F});
  // Records: 0 file_version, 1 graph, then 4 per step. Damage step 3's loss payload.
  const std::size_t record = 2 + 2 * 4;
  const std::size_t offset = w.record_offsets().at(record);
  auto bytes = w.bytes();
  flip_byte(bytes, offset + 12 + 5);
  const auto file = tmp.write("events.out.tfevents.1.h.3.0", bytes);

  const auto t = load_rank0(file);
  ASSERT_EQ(t.steps.size(), 2U) << "steps 1 and 2 come before the damage";
  EXPECT_EQ(t.steps[1].loss->bits, bits32(2.0F));
  const TraceIssue* damage = nullptr;
  for (const auto& i : t.issues) {
    if (i.kind == TraceIssue::Kind::CorruptLine) damage = &i;
  }
  ASSERT_NE(damage, nullptr);
  EXPECT_EQ(damage->source, file);
  EXPECT_NE(damage->problem.find("at byte offset " + std::to_string(offset) + ": data CRC mismatch"),
            std::string::npos)
      << damage->problem;
  EXPECT_NE(damage->problem.find("the " + std::to_string(record) + " records before it are used"),
            std::string::npos)
      << damage->problem;
  EXPECT_NE(damage->text().find(file + ": record "), std::string::npos);
}

TEST(ImportTensorBoard, CorruptLengthCrcIsReportedAtItsOffset) {
  const auto w = titan_like({1.0F, 2.0F});
  auto bytes = w.bytes();
  const std::size_t offset = w.record_offsets().at(3);
  flip_byte(bytes, offset + 9);  // inside the length's CRC
  std::size_t records = 0;
  const auto issue = scan_tfrecords(std::as_bytes(std::span(bytes.data(), bytes.size())), "f",
                                    [&records](std::span<const std::byte>, std::uint64_t) {
                                      ++records;
                                      return true;
                                    });
  ASSERT_TRUE(issue.has_value());
  EXPECT_EQ(records, 3U);
  EXPECT_EQ(issue->kind, TraceIssue::Kind::CorruptLine);
  EXPECT_NE(
      issue->problem.find("record 4 at byte offset " + std::to_string(offset) + ": length CRC mismatch"),
      std::string::npos)
      << issue->problem;
}

TEST(ImportTensorBoard, PayloadThatIsNotAnEventIsCorruptEvenWithGoodCrcs) {
  TempDir tmp;
  auto bytes = titan_like({1.0F}).bytes();
  const auto offset = bytes.size();
  bytes += gparity::testing::tfrecord("\xff\xff\xff");  // an unterminated varint
  bytes += titan_like({9.0F}).bytes();
  const auto t = load_rank0(tmp.write("events.out.tfevents.x", bytes));
  ASSERT_EQ(t.steps.size(), 1U);
  ASSERT_FALSE(t.issues.empty());
  const auto& last = t.issues.front();
  EXPECT_EQ(last.kind, TraceIssue::Kind::CorruptLine);
  EXPECT_NE(last.problem.find("byte offset " + std::to_string(offset) + ": CRCs match but the payload"),
            std::string::npos)
      << last.problem;
}

TEST(ImportTensorBoard, TruncatedLastRecordIsATruncatedTailAndEarlierStepsAreUsed) {
  TempDir tmp;
  const auto w = titan_like({1.0F, 2.0F, 3.0F});
  const std::size_t last = w.record_offsets().back();
  for (const std::size_t keep : {last + 5, last + 12, w.bytes().size() - 1}) {
    const auto file = tmp.write("cut/events.out.tfevents.1", std::string_view(w.bytes()).substr(0, keep));
    const auto t = load_rank0(file);
    ASSERT_EQ(t.steps.size(), 3U) << "the last record is step 3's histogram";
    EXPECT_EQ(t.steps[2].loss->bits, bits32(3.0F));
    ASSERT_FALSE(t.issues.empty());
    const auto& cut = t.issues.front();
    EXPECT_EQ(cut.kind, TraceIssue::Kind::TruncatedTail) << cut.problem;
    EXPECT_NE(cut.problem.find("at byte offset " + std::to_string(last) + ": truncated"), std::string::npos)
        << cut.problem;
    EXPECT_NE(cut.problem.find("the last " + std::to_string(keep - last) + " bytes are not"),
              std::string::npos)
        << cut.problem;
  }
}

TEST(ImportTensorBoard, PerRankFoldersAndRestartFiles) {
  TempDir tmp;
  const auto dir = tmp.path() / "tb";
  titan_like({1.0F, 2.0F}).save((dir / "rank_0" / "events.out.tfevents.100.h.1.0").string());
  // Rank 2 restarted: its second file logs step 2 again (with another value) and step 3.
  titan_like({1.5F, 2.5F}).save((dir / "rank_2" / "events.out.tfevents.100.h.1.0").string());
  EventFileWriter again;
  again.scalar(2, "loss", 7.0F);
  again.scalar(3, "loss", 3.5F);
  again.save((dir / "rank_2" / "events.out.tfevents.200.h.1.0").string());

  const auto run = open_run(dir.string());
  EXPECT_EQ(run.format, RunFormat::TensorBoard);
  ASSERT_EQ(run.ranks.size(), 3U);
  EXPECT_TRUE(run.ranks[0].present);
  EXPECT_FALSE(run.ranks[1].present);
  ASSERT_EQ(run.issues.size(), 1U);
  EXPECT_EQ(run.issues[0].kind, TraceIssue::Kind::MissingFile);
  EXPECT_NE(run.issues[0].problem.find("rank 1 has no event files"), std::string::npos);

  const auto r2 = run.load(run.ranks[2]);
  EXPECT_EQ(r2.rank, 2);
  ASSERT_EQ(r2.steps.size(), 3U);
  EXPECT_EQ(r2.steps[1].loss->bits, bits32(2.5F)) << "the first file's value of step 2 is used";
  EXPECT_EQ(r2.steps[1].extra.at("loss_tag"), "loss_metrics/global_avg_loss");
  ASSERT_EQ(r2.steps[1].scalars.size(), 2U) << "max loss and the restart's \"loss\"";
  EXPECT_EQ(r2.steps[2].loss->bits, bits32(3.5F));
  EXPECT_EQ(r2.steps[2].extra.at("loss_tag"), "loss");
  bool noted = false;
  for (const auto& i : r2.issues) noted = noted || i.problem.find("already seen") != std::string::npos;
  EXPECT_FALSE(noted) << "different tags at step 2 are not repeats";
}

TEST(ImportTensorBoard, RepeatedStepAndTagKeepsTheFirstValueAndSaysSo) {
  TempDir tmp;
  EventFileWriter w;
  w.scalar(1, "loss", 1.0F);
  w.scalar(1, "loss", 9.0F);
  const auto t = load_rank0(tmp.write("events.out.tfevents.1", w.bytes()));
  ASSERT_EQ(t.steps.size(), 1U);
  EXPECT_EQ(t.steps[0].loss->bits, bits32(1.0F));
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_NE(t.issues[0].problem.find("1 value for a step and tag already seen (first: step 1 tag loss)"),
            std::string::npos)
      << t.issues[0].problem;
}

TEST(ImportTensorBoard, TagsThatAreNotUtf8AreReadAsBytesWithNothingPrinted) {
  // TensorBoard writers do not check tags; proto3 `string` fields would make protobuf refuse
  // the whole event and print its own error line on stderr. Tags are read as bytes instead:
  // the value is used and the reports escape the name (display_text).
  TempDir tmp;
  EventFileWriter w;
  w.scalar(1, "loss", 1.0F);
  w.scalar(1, "bad\xff\xfe\x1b[2Jtag", 2.0F);
  w.scalar(2, "loss", 3.0F);
  ::testing::internal::CaptureStderr();
  const auto t = load_rank0(tmp.write("events.out.tfevents.1", w.bytes()));
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  ASSERT_EQ(t.steps.size(), 2U);
  EXPECT_EQ(t.steps[1].loss->bits, bits32(3.0F));
  ASSERT_EQ(t.steps[0].scalars.size(), 1U);
  EXPECT_EQ(t.steps[0].scalars[0].name, "bad\xff\xfe\x1b[2Jtag");
  for (const auto& issue : t.issues) EXPECT_NE(issue.kind, TraceIssue::Kind::CorruptLine) << issue.problem;
}

TEST(ImportTensorBoard, FolderWithoutEventFilesIsNotARun) {
  TempDir tmp;
  tmp.write("rank_0/notes.txt", "hello");
  try {
    (void)open_run(tmp.path().string());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no TensorBoard event files"), std::string::npos) << e.what();
  }
}

}  // namespace
