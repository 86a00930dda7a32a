// The Python-repr reader under the DebugMode reader (core/model/ops/py_literal.hpp).

#include "core/model/ops/py_literal.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace gparity::model::ops {
namespace {

using Kind = PyNode::Kind;

TEST(PyLiteral, NestedContainersAndLeaves) {
  PyArena a;
  bool ok = false;
  const auto root = parse_py_value(
      "{'input_hash': (((1,), [None], 2.5e-05), {}), 'hash': [(18446744073709551615,)]}", a, ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(a.nodes[root].kind, Kind::Dict);
  EXPECT_EQ(a.child_count(root), 4u);
  const auto k0 = a.child(root, 0);
  EXPECT_EQ(a.nodes[k0].kind, Kind::Str);
  EXPECT_EQ(a.nodes[k0].text, "input_hash");
  const auto v0 = a.child(root, 1);
  EXPECT_EQ(a.nodes[v0].kind, Kind::Tuple);
  const auto args = a.child(v0, 0);
  EXPECT_EQ(a.child_count(args), 3u);
  EXPECT_EQ(a.nodes[a.child(a.child(args, 1), 0)].kind, Kind::None);
  EXPECT_EQ(a.nodes[a.child(args, 2)].kind, Kind::Float);
  const auto h = a.child(a.child(root, 3), 0);
  std::uint64_t u = 0;
  ASSERT_TRUE(parse_py_uint64(a.nodes[a.child(h, 0)].text, u));
  EXPECT_EQ(u, 18446744073709551615ull);
}

TEST(PyLiteral, AtomsKeepBalancedBracketsAndQuotes) {
  PyArena a;
  bool ok = false;
  const auto root = parse_py_args(
      "t$0: f32[256, 64], [64], ScriptObject <__torch__.torch.classes.c10d.ProcessGroup>, "
      "device(type='cuda', index=0), dim=-1, name='a, b'",
      a, ok);
  ASSERT_TRUE(ok);
  ASSERT_EQ(a.child_count(root), 6u);
  EXPECT_EQ(a.nodes[a.child(root, 0)].text, "t$0: f32[256, 64]");
  EXPECT_EQ(a.nodes[a.child(root, 1)].kind, Kind::List);
  EXPECT_EQ(a.nodes[a.child(root, 2)].text, "ScriptObject <__torch__.torch.classes.c10d.ProcessGroup>");
  EXPECT_EQ(a.nodes[a.child(root, 3)].text, "device(type='cuda', index=0)");
  EXPECT_EQ(a.nodes[a.child(root, 4)].key, "dim");
  EXPECT_EQ(a.nodes[a.child(root, 4)].kind, Kind::Int);
  EXPECT_EQ(a.nodes[a.child(root, 5)].key, "name");
  EXPECT_EQ(a.nodes[a.child(root, 5)].text, "a, b");
}

TEST(PyLiteral, UnquotedDictKeysOfKernelHashes) {
  PyArena a;
  bool ok = false;
  const auto root = parse_py_value("{in_ptr0: 1, out_ptr0: (2.5, 3)}", a, ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(a.nodes[a.child(root, 0)].text, "in_ptr0");
  EXPECT_EQ(a.nodes[a.child(root, 2)].text, "out_ptr0");
  EXPECT_EQ(a.child_count(a.child(root, 3)), 2u);
}

TEST(PyLiteral, MalformedTextIsNotOk) {
  PyArena a;
  bool ok = true;
  parse_py_value("((1, 2)", a, ok);
  EXPECT_FALSE(ok);
  parse_py_value("(1, 2))", a, ok);  // trailing characters
  EXPECT_FALSE(ok);
  parse_py_value("'open", a, ok);
  EXPECT_FALSE(ok);
  parse_py_value("", a, ok);
  EXPECT_FALSE(ok);
  parse_py_value(std::string(200, '(') + std::string(200, ')'), a, ok);  // deeper than any repr
  EXPECT_FALSE(ok);
}

TEST(PyLiteral, Numbers) {
  double d = 0;
  EXPECT_TRUE(parse_py_double("1e-05", d));
  EXPECT_EQ(d, 1e-05);
  EXPECT_TRUE(parse_py_double("-inf", d));
  EXPECT_TRUE(std::isinf(d));
  EXPECT_TRUE(parse_py_double("nan", d));
  EXPECT_TRUE(std::isnan(d));
  EXPECT_FALSE(parse_py_double("infinity", d));
  EXPECT_FALSE(parse_py_double("t$0", d));
  std::uint64_t u = 0;
  EXPECT_FALSE(parse_py_uint64("18446744073709551616", u));  // 2^64 does not fit
  EXPECT_FALSE(parse_py_uint64("-1", u));
}

}  // namespace
}  // namespace gparity::model::ops
