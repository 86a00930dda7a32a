// Device and process-group hoisting (core/model/graph/hoist.*, process_groups.*) on hand-written
// FX graphs: what is remapped (literals nested in lists and kwargs, 'cuda:k' strings,
// annotations, get_attr constants, group names through the group table), what is left alone
// (slice offsets, cpu devices) and what is reported unresolved (foreign devices, unknown or
// ambiguous groups). The real samples are checked in tests/diff/graphs/graph_hoist_samples_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/flight_recorder.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_load.hpp"
#include "core/model/graph/hoist.hpp"

namespace {

using namespace gparity::model;

const char* kGraph = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 64][64, 1]cuda:0", idx: "i64[4][1]cpu"):
        _tensor_constant0: "f32[4][1]cuda:0" = self._tensor_constant0
        full: "f32[4][1]cuda:0" = torch.ops.aten.full.default([4], 0.0, dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        slice_1: "f32[8, 32][64, 1]cuda:0" = torch.ops.aten.slice.Tensor(x, 1, 0, 32)
        copy: "f32[4][1]cuda:0" = torch.ops.aten._to_copy.default(full, device = 'cuda:0')
        cat: "f32[4][1]cuda:0" = torch.ops.aten.foo.default([full, [device(type='cuda', index=0), 'cuda:0']], devices = ['cuda:0', 'cpu'])
        odd: "f32[4][1]cuda:0" = torch.ops.aten._to_copy.default(full, device = 'cuda:3')
        cpu_copy: "f32[4][1]cpu" = torch.ops.aten._to_copy.default(full, device = device(type='cpu'))
        all_reduce: "f32[8, 32][64, 1]cuda:0" = torch.ops._c10d_functional.all_reduce.default(slice_1, 'sum', '3')
        gather: "f32[16, 32][32, 1]cuda:0" = torch.ops._c10d_functional.all_gather_into_tensor.default(slice_1, 2, '1')
        wait: "f32[8, 32][64, 1]cuda:0" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
        return (wait, copy, cat, odd, cpu_copy, gather, _tensor_constant0)
)FX";

// The 2x2 (dp, tp) mesh of the shared sample: rank = 2*dp + tp.
ProcessGroupTable mesh_groups() {
  ProcessGroupTable t;
  t.add({"0", "default_pg", {0, 1, 2, 3}, "test"});
  t.add({"1", "mesh_dp", {0, 2}, "test"});
  t.add({"2", "mesh_dp", {1, 3}, "test"});
  t.add({"3", "mesh_tp", {0, 1}, "test"});
  t.add({"4", "mesh_tp", {2, 3}, "test"});
  return t;
}

HoistOptions options(int from, int to, const ProcessGroupTable* groups) {
  HoistOptions o;
  o.source_rank = o.source_device = from;
  o.target_rank = o.target_device = to;
  o.groups = groups;
  return o;
}

const Node& node(const Graph& g, std::string_view name) {
  const auto id = g.find_node(name);
  EXPECT_NE(id, kNoNode) << name;
  return g.nodes.at(id);
}

std::string kwarg_text(const Graph& g, const Node& n, std::string_view name) {
  for (const auto& k : n.kwargs) {
    if (g.str(k.name) == name) return value_text(g, k.value);
  }
  return "(absent)";
}

std::vector<std::string> fields_of(const HoistResult& r, std::string_view node) {
  std::vector<std::string> out;
  for (const auto& c : r.changes) {
    if (c.node == node) out.push_back(c.field + " " + c.from + " -> " + c.to);
  }
  return out;
}

TEST(Hoist, RemapsDeviceLiteralsStringsAnnotationsAndConstants) {
  const auto g = parse_fx_text(kGraph, "hoist.py");
  const auto table = mesh_groups();
  const auto r = hoist_graph(g, options(0, 2, &table));
  const auto& h = r.graph;

  // Literals: the torch.device value, the string form, both nested in lists, and list kwargs.
  EXPECT_EQ(kwarg_text(g, node(g, "full"), "device"), "device(type='cuda', index=0)");
  EXPECT_EQ(kwarg_text(h, node(h, "full"), "device"), "device(type='cuda', index=2)");
  EXPECT_EQ(fields_of(r, "copy"),
            (std::vector<std::string>{"kwargs.device 'cuda:0' -> 'cuda:2'", "meta.device cuda:0 -> cuda:2"}));
  EXPECT_EQ(
      fields_of(r, "cat"),
      (std::vector<std::string>{"args[0][1][0] cuda:0 -> cuda:2", "args[0][1][1] 'cuda:0' -> 'cuda:2'",
                                "kwargs.devices[0] 'cuda:0' -> 'cuda:2'", "meta.device cuda:0 -> cuda:2"}));
  EXPECT_EQ(value_text(h, node(h, "cat").args[0]), "[full, [device(type='cuda', index=2), 'cuda:2']]");
  // Placeholders and the device-placed constant move with their annotation.
  EXPECT_EQ(meta_text(h, node(h, "x").meta), "f32[8, 64][64, 1]cuda:2");
  EXPECT_EQ(meta_text(h, node(h, "_tensor_constant0").meta), "f32[4][1]cuda:2");
  // Left alone: slice offsets (rank-dependent values are not devices), cpu, and the source.
  EXPECT_EQ(value_text(h, node(h, "slice_1").args[2]), "0");
  EXPECT_EQ(meta_text(h, node(h, "idx").meta), "i64[4][1]cpu");
  EXPECT_EQ(kwarg_text(h, node(h, "cpu_copy"), "device"), "device(type='cpu')");
  EXPECT_EQ(meta_text(g, node(g, "x").meta), "f32[8, 64][64, 1]cuda:0") << "the input graph is not modified";
}

TEST(Hoist, ProcessGroupsBecomeTheTargetRanksGroupOfTheSameMeshDimension) {
  const auto g = parse_fx_text(kGraph, "hoist.py");
  const auto table = mesh_groups();
  const auto group_arg = [](const HoistResult& r, std::string_view n) {
    return value_text(r.graph, node(r.graph, n).args.back());
  };
  // Rank 0 uses tp group '3' and dp group '1'.
  const auto to1 = hoist_graph(g, options(0, 1, &table));  // same dp row: tp stays, dp -> '2'
  EXPECT_EQ(group_arg(to1, "all_reduce"), "'3'");
  EXPECT_EQ(group_arg(to1, "gather"), "'2'");
  const auto to2 = hoist_graph(g, options(0, 2, &table));  // same dp column: tp -> '4', dp stays
  EXPECT_EQ(group_arg(to2, "all_reduce"), "'4'");
  EXPECT_EQ(group_arg(to2, "gather"), "'1'");
  const auto to3 = hoist_graph(g, options(0, 3, &table));
  EXPECT_EQ(group_arg(to3, "all_reduce"), "'4'");
  EXPECT_EQ(group_arg(to3, "gather"), "'2'");
  EXPECT_EQ(to3.count(HoistChangeKind::ProcessGroup), 2U);
  EXPECT_EQ(fields_of(to3, "all_reduce").front(), "args[2] '3' -> '4'");

  // group_name= keyword form.
  const auto kw = parse_fx_text(R"FX(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4][1]cuda:0"):
        r: "f32[4][1]cuda:0" = torch.ops._c10d_functional.all_reduce.default(x, 'sum', group_name = '3')
        return (r,)
)FX",
                                "kw.py");
  const auto kw2 = hoist_graph(kw, options(0, 2, &table));
  EXPECT_EQ(kwarg_text(kw2.graph, node(kw2.graph, "r"), "group_name"), "'4'");
}

TEST(Hoist, UnresolvedDevicesAndGroupsAreReportedAndLeftAsTheyAre) {
  const auto g = parse_fx_text(kGraph, "hoist.py");
  // No group table: the graph's groups cannot be hoisted.
  const auto none = hoist_graph(g, options(0, 1, nullptr));
  std::vector<std::string> problems;
  for (const auto& p : none.unresolved)
    problems.push_back(std::string(hoist_problem_kind_name(p.kind)) + " " + p.node + " " + p.field + " " +
                       p.text);
  EXPECT_EQ(problems, (std::vector<std::string>{"foreign-device odd kwargs.device 'cuda:3'",
                                                "group all_reduce args[2] 3", "group gather args[2] 1"}));
  EXPECT_EQ(value_text(none.graph, node(none.graph, "odd").kwargs[0].value), "'cuda:3'");

  // A table without a counterpart for the target rank.
  ProcessGroupTable partial;
  partial.add({"3", "mesh_tp", {0, 1}, "rank0_flight_recorder.json"});
  partial.add({"1", "mesh_dp", {0, 2}, "rank0_flight_recorder.json"});
  const auto r = hoist_graph(g, options(0, 3, &partial));
  ASSERT_EQ(r.count(HoistChangeKind::ProcessGroup), 0U);
  const auto it = std::find_if(r.unresolved.begin(), r.unresolved.end(),
                               [](const HoistProblem& p) { return p.node == "all_reduce"; });
  ASSERT_NE(it, r.unresolved.end());
  EXPECT_NE(it->message.find("no counterpart of group '3' (mesh_tp) [0, 1] for rank 3"), std::string::npos)
      << it->message;

  // Same rank: nothing to change, and groups need no table.
  const auto same = hoist_graph(g, options(0, 0, nullptr));
  EXPECT_TRUE(same.changes.empty());
  EXPECT_EQ(same.unresolved.size(), 1U);  // the foreign cuda:3
  EXPECT_TRUE(graphs_equal(same.graph, g));
}

TEST(Hoist, VerbatimAnnotationsAndRanksPerNode) {
  const auto g = parse_fx_text(R"FX(class GraphModule(torch.nn.Module):
    def forward(self, x: "DTensor(f32[4], cuda:1, mesh cuda:10)"):
        y: "f32[4][1]cuda:1" = torch.ops.aten.mul.Tensor(x, 2)
        return (y,)
)FX",
                               "dt.py");
  // Rank 5 with 4 ranks per node is local device 1; target rank 6 is local device 2.
  HoistOptions o;
  o.source_rank = 5;
  o.source_device = 1;
  o.target_rank = 6;
  o.target_device = 2;
  const auto r = hoist_graph(g, o);
  EXPECT_EQ(meta_text(r.graph, node(r.graph, "x").meta), "DTensor(f32[4], cuda:2, mesh cuda:10)");
  EXPECT_EQ(meta_text(r.graph, node(r.graph, "y").meta), "f32[4][1]cuda:2");
  ASSERT_EQ(r.unresolved.size(), 1U);
  EXPECT_EQ(r.unresolved[0].text, "cuda:10");
}

TEST(ProcessGroups, CounterpartByShapeAndDescription) {
  ProcessGroupTable t;
  t.add(parse_group_spec("a=0,1"));
  t.add(parse_group_spec("b=2-3"));
  t.add(parse_group_spec("c=0,2"));
  t.add(parse_group_spec("d=1,3"));
  EXPECT_EQ(t.counterpart("a", 3).group->name, "b");
  EXPECT_EQ(t.counterpart("c", 3).group->name, "d");
  EXPECT_EQ(t.counterpart("a", 1).group->name, "a");
  EXPECT_EQ(t.counterpart("zz", 1).group, nullptr);
  EXPECT_NE(t.counterpart("zz", 1).problem.find("not in the group table"), std::string::npos);
  // Two groups of rank 3 with a's shape and no descriptions: ambiguous.
  t.add(parse_group_spec("e=3,4"));
  const auto amb = t.counterpart("a", 3);
  EXPECT_EQ(amb.group, nullptr);
  EXPECT_NE(amb.problem.find("ambiguous"), std::string::npos) << amb.problem;
  // Descriptions tell them apart.
  ProcessGroupTable d;
  d.add({"a", "mesh_tp", {0, 1}, "x"});
  d.add({"b", "mesh_tp", {2, 3}, "x"});
  d.add({"e", "mesh_cp", {3, 4}, "x"});
  EXPECT_EQ(d.counterpart("a", 3).group->name, "b");
}

TEST(ProcessGroups, SpecsAndConflictsAreCheckedInput) {
  EXPECT_EQ(parse_group_spec("tp=3,1,2").ranks, (std::vector<std::int64_t>{1, 2, 3}));
  for (const char* bad : {"3", "=0,1", "3=", "3=0,,1", "3=a", "3=0,", "3=-1", "3=4-2"})
    EXPECT_THROW(parse_group_spec(bad), InputError) << bad;
  ProcessGroupTable t;
  t.add(parse_group_spec("3=0,1"));
  t.add({"3", "mesh_tp", {1, 0}, "dump"});  // same set: fills in the description
  EXPECT_EQ(t.find("3")->desc, "mesh_tp");
  EXPECT_THROW(t.add({"3", "", {0, 2}, "dump"}), InputError);
}

TEST(ProcessGroups, FromFlightRecorderPgConfig) {
  const auto dump = parse_flight_recorder(
      R"({"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
          "4": {"name": "4", "desc": "mesh_tp", "ranks": "[2, 3]"}}, "entries": []})",
      "rank2_flight_recorder.json");
  ProcessGroupTable t;
  add_flight_recorder_groups(t, dump);
  ASSERT_NE(t.find("4"), nullptr);
  EXPECT_EQ(t.find("4")->desc, "mesh_tp");
  EXPECT_EQ(t.find("4")->ranks, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.find("4")->origin, "rank2_flight_recorder.json");
}

}  // namespace
