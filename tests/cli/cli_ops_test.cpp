// `gparity compare` on DebugMode op logs and `gparity ops show`, through the real binary: the
// torch 2.11 samples in tests/data/ops (text, --json, --html), exit codes (0 parity, 1
// divergence or incomplete, 2 bad input or nothing compared) and damaged input named by file
// and line.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/file_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
namespace fs = std::filesystem;

const std::string kOps = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/";

using gparity::testing::slurp;

/// A copy of a sample mode's logs in `dir`, for damaging.
void copy_logs(const std::string& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), to / e.path().filename());
}

TEST(CliOps, EagerRepeatAndCompileAreParity) {
  for (const char* mode : {"eager_repeat", "compile"}) {
    const auto r =
        run_command(GPARITY_EXE, {"compare", kOps + "debugmode/eager", kOps + "debugmode/" + mode});
    EXPECT_EQ(r.exit_code, 0) << mode << r.out << r.err;
    EXPECT_NE(r.out.find("op-level parity on 2 rank(s), 4 rank-step(s)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("decided by hash_tensor"), std::string::npos) << r.out;
  }
}

TEST(CliOps, CompileGeluNamesTheOpItsCauseAndStepTwoInJsonAndHtml) {
  TempDir dir;
  const auto html = (dir.path() / "ops.html").string();
  const auto r = run_command(GPARITY_EXE, {"compare", "--json", "--html", html, kOps + "debugmode/eager",
                                           kOps + "debugmode/compile_gelu"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exit_code"], 1);
  int first = 0, follows = 0;
  for (const auto& f : j["findings"]) {
    if (f["kind"] == "op_divergence") {
      ++first;
      EXPECT_EQ(f["values"]["eager"]["op"], "aten::gelu");
      EXPECT_EQ(f["values"]["eager"]["source"]["line"], 37);
      EXPECT_EQ(f["values"]["eager"]["phase"], "forward");
      EXPECT_EQ(f["values"]["step"], 1);
      EXPECT_EQ(f["values"]["cause"], "origin");
    } else if (f["kind"] == "op_divergence_follows") {
      ++follows;
      EXPECT_EQ(f["values"]["step"], 2);
      EXPECT_EQ(f["values"]["follows_step"], 1);
    }
  }
  EXPECT_EQ(first, 2);    // both ranks
  EXPECT_EQ(follows, 2);  // step 2 of both ranks
  const auto page = slurp(html);
  EXPECT_NE(page.find("aten::gelu"), std::string::npos);
  EXPECT_NE(page.find("train_debugmode.py:37"), std::string::npos);

  const auto text =
      run_command(GPARITY_EXE, {"compare", kOps + "debugmode/eager", kOps + "debugmode/compile_gelu"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("first divergent op aten::gelu (/workspace/train_debugmode.py:37), forward"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("follows from step 1"), std::string::npos) << text.out;
}

TEST(CliOps, ReceivedFromTheRankThatHadTheBug) {
  const auto r = run_command(
      GPARITY_EXE, {"compare", kOps + "debugmode_nnmod/eager", kOps + "debugmode_nnmod/compile_gelu_rank1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(
      r.out.find(
          "rank 1: first divergent op at step 1: aten::gelu (Net.layers.0, /workspace/gen_debugmode.py:41), "
          "origin"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("rank 0: first divergent op at step 1: c10d::allreduce_ (/workspace/gen_debugmode.py:89), "
                 "received from rank 1"),
      std::string::npos)
      << r.out;
}

TEST(CliOps, OpsShowPrintsOneLog) {
  const auto log = kOps + "debugmode/eager/rank0_step1.debug.txt";
  const auto t = run_command(GPARITY_EXE, {"ops", "show", log});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("271 records, hashes: hash_tensor"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("aten::gelu"), std::string::npos);
  const auto j = run_command(GPARITY_EXE, {"ops", "show", "--json", log});
  ASSERT_EQ(j.exit_code, 0);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["records"], 271);
  EXPECT_EQ(doc["ops"].size(), 271u);
  EXPECT_EQ(doc["ops"][0]["op"], "aten::embedding");
  EXPECT_EQ(doc["ops"][0]["outputs"][0]["hashes"]["hash_tensor"], 18390420925930536960ull);
  // A folder of several logs, and a file that is no log: exit 2, named.
  const auto folder = run_command(GPARITY_EXE, {"ops", "show", kOps + "debugmode/eager"});
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("name one of its files"), std::string::npos) << folder.err;
  const auto meta = run_command(GPARITY_EXE, {"ops", "show", kOps + "debugmode/eager/rank0_meta.json"});
  EXPECT_EQ(meta.exit_code, 2);
  EXPECT_NE(meta.err.find("rank0_meta.json"), std::string::npos) << meta.err;
}

TEST(CliOps, OpsShowNamesACollectivesGroup) {
  // A functional collective's group_name (its last argument), the legacy ops' rank list; a c10d
  // op's ProcessGroup is a ScriptObject without a name: no group.
  TempDir dir;
  const auto file = (dir.path() / "rank2_step1.debug.txt").string();
  std::ofstream(file, std::ios::trunc)
      << "_c10d_functional::all_reduce(t$0: f32[4], sum, 3)  ->  t$1: f32[4]  # {'hash': 1}\n"
         "c10d_functional::all_reduce(t$1: f32[4], sum, ptd, [2, 3], 2)  ->  t$2: f32[4]  # {'hash': 2}\n"
         "c10d::allreduce_([t$2: f32[4]], ScriptObject <__torch__.torch.classes.c10d.ProcessGroup>, None)  "
         "->  "
         "([t$2: f32[4]], 'ScriptObject <__torch__.torch.classes.c10d.Work>')  # {'hash': ([3], None)}\n";
  const auto j = run_command(GPARITY_EXE, {"ops", "show", "--json", file});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["ops"].size(), 3u);
  EXPECT_EQ(doc["ops"][0]["group"], "3");
  EXPECT_FALSE(doc["ops"][0].contains("group_ranks"));
  EXPECT_EQ(doc["ops"][1]["group"], "ranks:2,3");
  EXPECT_EQ(doc["ops"][1]["group_ranks"], (std::vector<int>{2, 3}));
  EXPECT_FALSE(doc["ops"][2].contains("group"));
}

TEST(CliOps, OpsShowReadsPyTorchsOwnDebugModeOutputs) {
  // The expected outputs of PyTorch's DebugMode tests (tests/data/ops/debugmode_pytorch_tests):
  // torch functions (record_torchfunction=True), modules, run_graph nodes; no line is damage.
  const std::string corpus = kOps + "debugmode_pytorch_tests/";
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(corpus)) {
    if (e.path().extension() != ".txt") continue;
    ++files;
    const auto j = run_command(GPARITY_EXE, {"ops", "show", "--json", e.path().string()});
    EXPECT_EQ(j.exit_code, 0) << e.path() << j.err;
    EXPECT_EQ(j.err, "") << e.path();
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_TRUE(doc["issues"].empty()) << e.path();
    EXPECT_GT(doc["records"].get<int>(), 0) << e.path();
  }
  EXPECT_EQ(files, 12u);
  const auto t = run_command(GPARITY_EXE, {"ops", "show", corpus + "mm.txt"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("10 records"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("<method 'sum' of 'torch._C.TensorBase' objects>"), std::string::npos) << t.out;
  const auto j = run_command(GPARITY_EXE, {"ops", "show", "--json", corpus + "backward.txt"});
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["ops"].size(), 24u);
  EXPECT_EQ(doc["ops"][9]["op"], "torch._tensor.backward");
  EXPECT_EQ(doc["ops"][9]["kind"], "torch_function");
  EXPECT_EQ(doc["ops"][9]["phase"], "backward");
  EXPECT_EQ(doc["ops"][8]["phase"], "forward");
}

TEST(CliOps, TorchFunctionLinesAreNotComparedAsOps) {
  // Eager recorded with record_torchfunction=True, the candidate without (as a compiled run
  // is): the torch functions hold no hashes and have their ops nested below them.
  TempDir dir;
  const std::string mm =
      "aten::mm(t$0: f32[2, 2], t$1: f32[2, 2])  ->  t$2: f32[2, 2]  # {'input_hash': ((11, 12), {}), "
      "'hash': 13}\n";
  const auto sum = [](int h) {
    return "aten::sum(t$2: f32[2, 2])  ->  t$3: f32[]  # {'input_hash': ((13,), {}), 'hash': " +
           std::to_string(h) + "}\n";
  };
  dir.write("eager/rank0_step1.debug.txt",
            "  torch.mm(t$0: f32[2, 2], t$1: f32[2, 2])  ->  t$2: f32[2, 2]\n      " + mm +
                "  <method 'sum' of 'torch._C.TensorBase' objects>(t$2: f32[2, 2])  ->  t$3: f32[]\n      " +
                sum(14));
  dir.write("same/rank0_step1.debug.txt", "    " + mm + "    " + sum(14));
  dir.write("other/rank0_step1.debug.txt", "    " + mm + "    " + sum(15));
  const auto eager = (dir.path() / "eager").string();
  const auto parity = run_command(GPARITY_EXE, {"compare", eager, (dir.path() / "same").string()});
  EXPECT_EQ(parity.exit_code, 0) << parity.out << parity.err;
  EXPECT_NE(parity.out.find("op-level parity"), std::string::npos) << parity.out;
  const auto r = run_command(GPARITY_EXE, {"compare", "--json", eager, (dir.path() / "other").string()});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  int first = 0;
  for (const auto& f : doc["findings"]) {
    if (f["kind"] != "op_divergence") continue;
    ++first;
    EXPECT_EQ(f["values"]["eager"]["op"], "aten::sum");  // not the torch function above it
    EXPECT_EQ(f["values"]["cause"], "origin");
  }
  EXPECT_EQ(first, 1);
}

TEST(CliOps, DamagedLogsAreNamedAndNeverParity) {
  TempDir dir;
  const fs::path cand = dir.path() / "eager_repeat";
  copy_logs(kOps + "debugmode/eager_repeat", cand);
  // rank 1, step 2: line 7 becomes garbage; the file ends mid-line.
  const auto file = (cand / "rank1_step2.debug.txt").string();
  std::string text = slurp(file);
  std::vector<std::string> lines;
  std::stringstream split(text);
  for (std::string l; std::getline(split, l);) lines.push_back(l);
  lines[6] = "    this line is not DebugMode's";
  std::string damaged;
  for (const auto& l : lines) damaged += l + "\n";
  damaged.resize(damaged.size() - 25);
  std::ofstream(file, std::ios::trunc) << damaged;
  const auto r = run_command(GPARITY_EXE, {"compare", kOps + "debugmode/eager", cand.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("rank1_step2.debug.txt:7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank1_step2.debug.txt:" + std::to_string(lines.size())), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("op-level parity"), std::string::npos);
  const auto allowed =
      run_command(GPARITY_EXE, {"compare", "--allow-incomplete", kOps + "debugmode/eager", cand.string()});
  EXPECT_NE(allowed.out.find("--allow-incomplete"), std::string::npos) << allowed.out;
}

TEST(CliOps, BadInputIsExitTwoWithTheFileNamed) {
  TempDir dir;
  // The two sides hashed with different functions.
  const auto e =
      dir.write("e/rank0_step1.debug.txt", "    aten::mm(t$0: f32[2])  ->  t$1: f32[2]  # {'hash': (5,)}\n");
  const auto c = dir.write("c/rank0_step1.debug.txt",
                           "    aten::mm(t$0: f32[2])  ->  t$1: f32[2]  # {'hash': (2.5,)}\n");
  const auto diff =
      run_command(GPARITY_EXE, {"compare", (dir.path() / "e").string(), (dir.path() / "c").string()});
  EXPECT_EQ(diff.exit_code, 2) << diff.out;
  EXPECT_NE(diff.out.find("hashed with different functions"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find(e), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find(c), std::string::npos) << diff.out;
  // No hashes at all.
  dir.write("n/rank0_step1.debug.txt", "    aten::mm(t$0: f32[2])  ->  t$1: f32[2]\n");
  const auto none =
      run_command(GPARITY_EXE, {"compare", (dir.path() / "n").string(), (dir.path() / "e").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.out.find("no tensor hashes"), std::string::npos) << none.out;
  // An op-log run against something else.
  const auto other = dir.write("trace.jsonl", "{}\n");
  const auto mixed = run_command(GPARITY_EXE, {"compare", kOps + "debugmode/eager", other});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find(other), std::string::npos) << mixed.err;
  // Two files for one rank and step.
  dir.write("dup/rank0_step1.debug.txt", "    aten::mm(t$0: f32[2])  ->  t$1: f32[2]  # {'hash': (5,)}\n");
  dir.write("dup/rank00_step1.debug.txt", "    aten::mm(t$0: f32[2])  ->  t$1: f32[2]  # {'hash': (5,)}\n");
  const auto dup =
      run_command(GPARITY_EXE, {"compare", (dir.path() / "dup").string(), (dir.path() / "e").string()});
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.err.find("also in"), std::string::npos) << dup.err;
}

}  // namespace
