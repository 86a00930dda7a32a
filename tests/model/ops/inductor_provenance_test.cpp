// Inductor's provenance in TORCH_TRACE (core/model/ops/inductor_provenance.hpp) on the logs of
// tests/data/ops/debugmode_inductor (PyTorch 2.11, 2 ranks; facts in its README.md), on the
// provenance logs of other releases in pytorch/tlparse's test inputs (../shared/external/tlparse,
// or $GPARITY_TLPARSE_CORPUS; skipped when absent), and on damaged text.

#include "core/model/ops/inductor_provenance.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "core/model/ops/kernel_launch.hpp"

namespace gparity::model::ops {
namespace {

namespace fs = std::filesystem;

const std::string kRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode_inductor";

fs::path tlparse_inputs() {
  if (const char* env = std::getenv("GPARITY_TLPARSE_CORPUS"); env && *env) return fs::path(env) / "inputs";
  return fs::path(GPARITY_SOURCE_DIR) / ".." / "shared" / "external" / "tlparse" / "inputs";
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const LaunchSite* site_at(const OutputCode& c, std::int64_t line) {
  for (const auto& s : c.launches)
    if (s.line == line) return &s;
  return nullptr;
}

const OutputCode* forward(const RankProvenance& r) {
  for (const auto& c : r.codes)
    if (c.graph == "0_forward") return &c;
  return nullptr;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(InductorProvenance, RunFolderHasItsTraceBesideTheLogs) {
  EXPECT_EQ(find_provenance_dir(kRuns + "/inductor"), kRuns + "/inductor/trace");
  EXPECT_EQ(find_provenance_dir(kRuns + "/inductor/rank0_step1.debug.txt"), kRuns + "/inductor/trace");
  EXPECT_EQ(find_provenance_dir(kRuns + "/inductor_repeat"), "");  // no trace kept
}

TEST(InductorProvenance, LaunchesOfTheForwardWithNodesAtenAndUserLines) {
  const RunProvenance p = read_provenance(kRuns + "/inductor/trace");
  ASSERT_EQ(p.ranks.size(), 2u);
  const RankProvenance* r1 = p.rank(1);
  ASSERT_NE(r1, nullptr);
  EXPECT_TRUE(r1->problems.empty());
  ASSERT_EQ(r1->codes.size(), 2u);  // the forward's and the backward's output code
  const OutputCode* fw = forward(*r1);
  ASSERT_NE(fw, nullptr);
  // The path DebugMode's `# File:` lines name (rank1_step1.debug.txt's first line).
  EXPECT_EQ(fw->path,
            "/tmp/inductor-inductor/tmptqd0zzqi/mt/cmtgfa2ijkrrciopzieoix5vvuo2dl5fs376lp45tfk5vplpnexf.py");
  // 33 [triton] launches a step: the forward's Triton kernels plus the backward's.
  std::size_t triton = 0;
  for (const auto& c : r1->codes)
    for (const auto& s : c.launches) triton += s.kernel.starts_with("triton_") ? 1 : 0;
  EXPECT_EQ(triton, 33u);

  const LaunchSite* k0 = site_at(*fw, 809);  // `# File: ...py:809` above the first [triton] line
  ASSERT_NE(k0, nullptr);
  EXPECT_EQ(k0->kernel, "triton_per_fused_embedding_native_layer_norm_0");
  EXPECT_EQ(k0->handle, "triton_per_fused_embedding_native_layer_norm_0:1");
  EXPECT_EQ(k0->source_nodes, (std::vector<std::string>{"x", "layer_norm"}));
  EXPECT_EQ(k0->aten, (std::vector<std::string>{"aten.embedding", "aten.native_layer_norm"}));
  const KernelOrigin* o0 = fw->origin_of(*k0);
  ASSERT_NE(o0, nullptr);
  EXPECT_TRUE(contains(o0->post_nodes, "embedding"));
  EXPECT_TRUE(contains(o0->post_nodes, "var_mean"));
  EXPECT_EQ(o0->pre_nodes, (std::vector<std::string>{"x", "layer_norm"}));
  ASSERT_FALSE(o0->frames.empty());
  EXPECT_EQ(o0->frames.front().text(), "gen_inductor.py:45");
  EXPECT_EQ(o0->frames.front().code, "x = s.tok(idx)");
  ASSERT_NE(fw->config_of(k0->kernel), nullptr);
  EXPECT_NE(fw->config_of(k0->kernel)->find("num_warps="), std::string::npos);

  // The extern kernel right after it, and the gelu kernel launched twice (two handles).
  const LaunchSite* mm = site_at(*fw, 815);
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->kernel, "extern_kernels.addmm");
  std::vector<const LaunchSite*> gelu;
  for (const auto& s : fw->launches)
    if (s.kernel == "triton_poi_fused_gelu_view_2") gelu.push_back(&s);
  ASSERT_EQ(gelu.size(), 2u);
  EXPECT_EQ(gelu[0]->line, 856);
  EXPECT_NE(gelu[0]->handle, gelu[1]->handle);
  const KernelOrigin* g = fw->origin_of(*gelu[0]);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(contains(g->post_nodes, "erf"));
  EXPECT_TRUE(contains(g->pre_nodes, "gelu"));
  EXPECT_EQ(g->frames.back().text(), "gen_inductor.py:36");
  EXPECT_TRUE(contains(fw->origin_of(*gelu[1])->pre_nodes, "gelu_1"));
}

TEST(InductorProvenance, TheRankOnePassChangesOneKernelsSourceAndNoOther) {
  const RunProvenance a = read_provenance(kRuns + "/inductor/trace");
  const RunProvenance b = read_provenance(kRuns + "/inductor_pass1/trace");
  const OutputCode* fa = forward(*a.rank(1));
  const OutputCode* fb = forward(*b.rank(1));
  ASSERT_TRUE(fa && fb);
  const KernelSource* ga = fa->source_of("triton_poi_fused_gelu_view_2");
  const KernelSource* gb = fb->source_of("triton_poi_fused_gelu_view_2");
  ASSERT_TRUE(ga && gb);
  EXPECT_NE(ga->hash, gb->hash);
  const auto differs = std::mismatch(ga->lines.begin(), ga->lines.end(), gb->lines.begin(), gb->lines.end());
  ASSERT_NE(differs.first, ga->lines.end());
  EXPECT_NE(differs.first->find("libdevice.erf("), std::string::npos);
  EXPECT_NE(differs.second->find("libdevice.tanh("), std::string::npos);
  // The other kernels' code is the same (their paths in the cache differ, their names do not count).
  EXPECT_EQ(fa->source_of("triton_per_fused_embedding_native_layer_norm_0")->hash,
            fb->source_of("triton_per_fused_embedding_native_layer_norm_0")->hash);
  // Rank 0 ran the program unchanged.
  EXPECT_EQ(forward(*a.rank(0))->source_of("triton_poi_fused_gelu_view_2")->hash,
            forward(*b.rank(0))->source_of("triton_poi_fused_gelu_view_2")->hash);
  // The second gelu no longer shares the first's kernel on rank 1: a new kernel, renumbered.
  EXPECT_NE(fb->source_of("triton_poi_fused_gelu_view_5"), nullptr);
  EXPECT_EQ(kernel_family("triton_poi_fused_gelu_view_5"), kernel_family("triton_poi_fused_gelu_view_2"));
}

TEST(InductorProvenance, KernelsCompiledWithDeterministicAlgorithmsOffAreMarked) {
  const RunProvenance p = read_provenance(kRuns + "/inductor_nondet/trace");
  const KernelSource* k =
      forward(*p.rank(0))
          ->source_of("triton_per_fused_add_addmm_native_layer_norm_native_layer_norm_backward_view_4");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->deterministic_off);
  const RunProvenance d = read_provenance(kRuns + "/inductor/trace");
  EXPECT_FALSE(forward(*d.rank(0))->source_of("triton_poi_fused_gelu_view_2")->deterministic_off);
}

TEST(InductorProvenance, InOutArgumentsAKernelOnlyStoresToAreNamed) {
  // A persistent layer norm writes its rstd over the variance buffer it computed: in_out_ptr0 is
  // only stored to (no input); a backward kernel that accumulates into in_out_ptr0 loads it.
  const RunProvenance p = read_provenance(kRuns + "/inductor/trace");
  const OutputCode* fw = forward(*p.rank(0));
  ASSERT_NE(fw, nullptr);
  const KernelSource* norm = fw->source_of("triton_per_fused_embedding_native_layer_norm_0");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->stored_only, (std::vector<std::string>{"in_out_ptr0"}));
  std::size_t loaded = 0;
  for (const auto& code : p.rank(0)->codes)
    for (const auto& [name, k] : code.kernels) {
      bool has_in_out = false, loads = false;
      for (const auto& l : k.lines) {
        has_in_out = has_in_out || l.find("in_out_ptr0") != std::string::npos;
        loads = loads || l.find("tl.load(in_out_ptr0") != std::string::npos;
      }
      if (has_in_out && loads) {
        ++loaded;
        EXPECT_TRUE(k.stored_only.empty()) << name;
      }
    }
  EXPECT_GT(loaded, 0u);
}

TEST(InductorProvenance, StackFramesOldAndNewEscaping) {
  const auto a = parse_stack_frames(
      "  File \"/w/gen.py\", line 47, in forward\n    x = l(x)\n  File \"/w/gen.py\", line 33, in forward\n"
      "    q = s.qkv(x)\n");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].line, 33);
  EXPECT_EQ(a[1].function, "forward");
  EXPECT_EQ(a[1].code, "q = s.qkv(x)");
  // 2.9's extended log escaped the newlines.
  const auto b = parse_stack_frames("  File \"/data/x.py\", line 2\\n  bar()\\n");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].text(), "x.py:2");
  EXPECT_EQ(b[0].code, "bar()");
}

TEST(InductorProvenance, DamageIsAProblemAndTheRestIsUsed) {
  const std::string code =
      "\t# AOT ID: ['0_forward']\n"
      "\ttriton_poi_fused_mul_0 = async_compile.triton('triton_poi_fused_mul_0', '''\n"
      "\t@triton.jit\n"
      "\tdef triton_poi_fused_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n"
      "\t    pass\n"
      "\t''', device_str='cuda')\n"
      "\tdef call(args):\n"
      "\t        # Topologically Sorted Source Nodes: [mul], Original ATen: [aten.mul]\n"
      "\t        # [Provenance debug handles] triton_poi_fused_mul_0:1\n"
      "\t        stream0 = get_raw_stream(0)\n"
      "\t        triton_poi_fused_mul_0.run(arg0_1, buf0, 8, stream=stream0)\n";
  std::string text =
      "V1128 03:50:01.210000 1 graph.py:1] {\"inductor_output_code\": {\"filename\": \"/tmp/c.py\"}, "
      "\"rank\": 3, "
      "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0, \"has_payload\": \"0\"}\n" +
      code +
      "V1128 03:50:02.910000 1 compile_fx.py:1] {\"artifact\": {\"name\": "
      "\"inductor_provenance_tracking_node_mappings\", \"encoding\": \"json\"}, \"rank\": 3, \"frame_id\": "
      "0, "
      "\"frame_compile_id\": 0, \"attempt\": 0, \"has_payload\": \"0\"}\n"
      "\t{\"cppCodeToPost\": {\"triton_poi_fused_mul_0:1\": [\"mul\"\n"
      "V1128 03:50:02.910000 1 compile_fx.py:1] {\"artifact\": {\"name\": "
      "\"inductor_provenance_tracking_kernel_stack_traces\", \"encoding\": \"json\"}, \"rank\": 3, "
      "\"frame_id\": 0, "
      "\"frame_compile_id\": 0, \"attempt\": 0, \"has_payload\": \"0\"}\n"
      "\t{\"triton_poi_fused_mul_0:1\": [\"  File \\\"/w/m.py\\\", line 7, in f\\n    y = x * 2\\n\"]}\n";
  const RankProvenance r = parse_provenance(text, "damaged.log");
  EXPECT_EQ(r.rank, 3);
  ASSERT_EQ(r.codes.size(), 1u);
  ASSERT_EQ(r.codes[0].launches.size(), 1u);
  EXPECT_EQ(r.codes[0].launches[0].line, 11);
  EXPECT_EQ(r.codes[0].launches[0].handle, "triton_poi_fused_mul_0:1");
  // The node mappings were cut: a problem naming the file; the stack traces still map the kernel.
  const bool named = std::any_of(r.problems.begin(), r.problems.end(), [](const std::string& p) {
    return p.find("damaged.log") != std::string::npos &&
           p.find("inductor_provenance_tracking_node_mappings") != std::string::npos;
  });
  EXPECT_TRUE(named);
  const KernelOrigin* o = r.codes[0].origin_of(r.codes[0].launches[0]);
  ASSERT_NE(o, nullptr);
  EXPECT_TRUE(o->post_nodes.empty());
  ASSERT_EQ(o->frames.size(), 1u);
  EXPECT_EQ(o->frames[0].text(), "m.py:7");
}

TEST(InductorProvenance, AFolderWithoutLogsIsRefusedByName) {
  EXPECT_THROW(read_provenance(kRuns + "/eager"), InputError);
}

// Both artifact names PyTorch has used: 2.8's inductor_triton_kernel_to_post_grad_nodes with
// inductor_post_to_pre_grad_nodes (logged before the output code), and the node mappings with
// debug handles and stack traces of later releases.
TEST(InductorProvenanceCorpus, ReleasesOfTlparsesInputs) {
  const fs::path dir = tlparse_inputs();
  if (!fs::exists(dir / "inductor_provenance_jit_log.txt")) GTEST_SKIP() << "no tlparse corpus at " << dir;
  const RankProvenance old = parse_provenance(slurp(dir / "inductor_provenance_jit_log.txt"), "jit_log");
  ASSERT_EQ(old.codes.size(), 1u);
  const OutputCode& c = old.codes[0];
  ASSERT_FALSE(c.launches.empty());
  bool gelu = false;
  for (const auto& s : c.launches) {
    const KernelOrigin* o = c.origin_of(s);
    if (s.kernel != "cpp_fused_gelu_1" || o == nullptr) continue;
    gelu = contains(o->post_nodes, "erf") && contains(o->pre_nodes, "z");
  }
  EXPECT_TRUE(gelu);

  const RankProvenance handles =
      parse_provenance(slurp(dir / "inductor_provenance_jit_debug_handle_log.txt"), "debug_handle_log");
  ASSERT_EQ(handles.codes.size(), 1u);
  std::size_t with_handle = 0, with_frames = 0;
  for (const auto& s : handles.codes[0].launches) {
    with_handle += s.handle.empty() ? 0 : 1;
    const KernelOrigin* o = handles.codes[0].origin_of(s);
    with_frames += o && !o->frames.empty() ? 1 : 0;
  }
  EXPECT_GT(with_handle, 0u);
  EXPECT_EQ(with_frames, with_handle);
}

}  // namespace
}  // namespace gparity::model::ops
