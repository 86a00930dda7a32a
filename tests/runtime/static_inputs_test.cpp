// The CUDA-graph static-input bookkeeping and check logic on fake addresses: no GPU, no LibTorch.

#include "core/runtime/static_inputs.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gparity::runtime {
namespace {

GraphSignature captured() {
  GraphSignature s;
  s.tensors = {{"param.tok_embeddings.weight", 0x7f0000001000, {128, 64}, "BFloat16", 128 * 64 * 2},
               {"grad.tok_embeddings.weight", 0x7f0000101000, {128, 64}, "BFloat16", 128 * 64 * 2},
               {"optim.exp_avg.tok_embeddings.weight", 0x7f0000201000, {128, 64}, "BFloat16", 128 * 64 * 2},
               {"input.tokens", 0x7f0000301000, {4, 33}, "Long", 4 * 33 * 8}};
  s.args = {{"world_size", "2"}, {"dtype", "bf16"}, {"seq_len", "32"}};
  return s;
}

TEST(StaticInputs, AnUnchangedSignaturePasses) {
  EXPECT_TRUE(check_signature(captured(), captured()).empty());
  EXPECT_NO_THROW(require_unchanged(captured(), captured(), 3));
}

TEST(StaticInputs, OrderDoesNotMatterOnlyNames) {
  auto now = captured();
  std::swap(now.tensors[0], now.tensors[3]);
  std::swap(now.args[0], now.args[2]);
  EXPECT_TRUE(check_signature(captured(), now).empty());
}

TEST(StaticInputs, AMovedParameterIsNamedWithBothAddresses) {
  auto now = captured();
  now.tensors[0].address = 0x7f0000901000;  // reallocated: same shape and dtype, new storage
  const auto v = check_signature(captured(), now);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Violation::Kind::Moved);
  EXPECT_EQ(v[0].input, "param.tok_embeddings.weight");
  EXPECT_EQ(v[0].captured, "0x7f0000001000");
  EXPECT_EQ(v[0].now, "0x7f0000901000");
  try {
    require_unchanged(captured(), now, 5);
    FAIL() << "no exception";
  } catch (const CudaGraphCheckFailure& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("step 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("static input 'param.tok_embeddings.weight' moved"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0x7f0000001000"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("more"), std::string::npos) << msg;
  }
}

TEST(StaticInputs, ShapeAndDtypeChangesAreSeparateViolations) {
  auto now = captured();
  now.tensors[3].shape = {4, 65};
  now.tensors[3].bytes = 4 * 65 * 8;
  now.tensors[1].dtype = "Float";
  const auto v = check_signature(captured(), now);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, Violation::Kind::Retyped);  // captured order: grad before input
  EXPECT_EQ(v[0].input, "grad.tok_embeddings.weight");
  EXPECT_EQ(v[0].captured, "BFloat16");
  EXPECT_EQ(v[1].kind, Violation::Kind::Resized);
  EXPECT_EQ(v[1].input, "input.tokens");
  EXPECT_EQ(v[1].captured, "[4, 33]");
  EXPECT_EQ(v[1].now, "[4, 65]");
  // Same shape, other byte count (a view over a different dtype width) is a resize too.
  auto bytes_only = captured();
  bytes_only.tensors[2].bytes *= 2;
  ASSERT_EQ(check_signature(captured(), bytes_only).size(), 1u);
  EXPECT_EQ(check_signature(captured(), bytes_only)[0].kind, Violation::Kind::Resized);
}

TEST(StaticInputs, MissingAndNewInputsAreReported) {
  auto now = captured();
  now.tensors.erase(now.tensors.begin() + 2);
  now.tensors.push_back({"param.new", 0x1000, {1}, "Float", 4});
  const auto v = check_signature(captured(), now);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, Violation::Kind::Missing);
  EXPECT_EQ(v[0].input, "optim.exp_avg.tok_embeddings.weight");
  EXPECT_EQ(v[1].kind, Violation::Kind::Unexpected);
  EXPECT_EQ(v[1].input, "param.new");
  EXPECT_NE(v[1].text().find("not there at capture time"), std::string::npos);
}

TEST(StaticInputs, NonTensorArgumentsMustNotChange) {
  auto now = captured();
  now.args[2].value = "64";
  now.args.erase(now.args.begin());
  const auto v = check_signature(captured(), now);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, Violation::Kind::ArgMissing);
  EXPECT_EQ(v[0].input, "world_size");
  EXPECT_EQ(v[1].kind, Violation::Kind::ArgChanged);
  EXPECT_EQ(v[1].text(), "argument 'seq_len' changed: captured 32, now 64");
  try {
    require_unchanged(captured(), now, 7);
    FAIL() << "no exception";
  } catch (const CudaGraphCheckFailure& e) {
    EXPECT_NE(std::string(e.what()).find("(and 1 more)"), std::string::npos) << e.what();
  }
}

TEST(StaticInputs, CopyStatsCountPerReplay) {
  CopyStats c;
  EXPECT_EQ(c.copies_per_replay(), 0.0);
  c.copied(1056);
  c.replayed();
  c.copied(1056);
  c.copied(44);
  c.replayed();
  c.replayed();  // a replay that copied nothing
  EXPECT_EQ(c.replays, 3);
  EXPECT_EQ(c.copies, 3);
  EXPECT_EQ(c.bytes, 2156);
  EXPECT_EQ(c.last_replay_copies, 0);
  EXPECT_EQ(c.last_replay_bytes, 0);
  EXPECT_DOUBLE_EQ(c.copies_per_replay(), 1.0);
  EXPECT_DOUBLE_EQ(c.bytes_per_replay(), 2156.0 / 3.0);
}

TEST(StaticInputs, TextHelpers) {
  EXPECT_EQ(address_text(0), "0x0");
  EXPECT_EQ(address_text(0xdeadbeef), "0xdeadbeef");
  EXPECT_EQ(shape_text({}), "[]");
  EXPECT_EQ(shape_text({4, 33}), "[4, 33]");
}

}  // namespace
}  // namespace gparity::runtime
