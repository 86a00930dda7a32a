// Interpreter dispatch cost per node: `gparity replay`'s interpreter (prepared once, boxed calls,
// no hashing) against torch.fx.Interpreter in Python (Debian's /usr/bin/python3, torch 1.13) on
// the same sample graphs (samples/replay), CPU, small tensors, side by side in one run. Both
// sides run each graph `iters` times on fixed inputs after a warm-up; per node = median run time
// divided by the graph's op nodes. Python's compiled GraphModule (gm(*inputs), no interpreter)
// is printed as the floor both pay for the kernels. Goal: interpreter >= 5x cheaper than fx.
//
//   bench_replay [iters]          (default 2000)

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/formats/safetensors.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/runtime/interpreter/inputs.hpp"
#include "core/runtime/interpreter/interpreter.hpp"

namespace {

const std::array<const char*, 6> kGraphs = {"mlp_make_fx",           "mlp_aot_forward",
                                            "mlp_aot_backward",      "attention_make_fx",
                                            "attention_aot_forward", "attention_aot_backward"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Median seconds per run of the C++ interpreter.
double cpp_run(const std::filesystem::path& dir, const char* name, int iters, std::size_t& ops) {
  const auto text = slurp(dir / (std::string(name) + ".txt"));
  const auto g = gparity::model::parse_fx_text(text, name);
  gparity::runtime::InterpretOptions o;
  o.label = name;
  o.hash = false;
  gparity::runtime::Interpreter interp(g, o);
  ops = interp.op_nodes();
  // Inputs from the sample's safetensors file, in placeholder order.
  gparity::runtime::InputSource src({(dir / (std::string(name) + ".inputs.safetensors")).string()});
  std::vector<at::Tensor> inputs;
  for (const auto& n : g.nodes)
    if (n.kind == gparity::model::NodeKind::Placeholder)
      inputs.push_back(*src.from_file(g.str(n.name), "cpu"));
  for (int i = 0; i < 50; ++i) interp.run_tensors(inputs);
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    interp.run_tensors(inputs);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

/// {name: (fx interpreter s/run, compiled gm s/run)} from one Python process.
std::vector<std::pair<double, double>> python_runs(const std::filesystem::path& dir, int iters) {
  const std::string script = R"PY(
import statistics, sys, time, torch
sys.path.insert(0, sys.argv[1])
import make_graphs
torch.set_num_threads(1)
graphs = make_graphs.build()
iters = int(sys.argv[2])
for name in sys.argv[3:]:
    gm, _, inputs = graphs[name]
    args = [t for _, t in inputs]
    def timed(f):
        for _ in range(50): f()
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        return statistics.median(ts)
    interp = torch.fx.Interpreter(gm)
    with torch.no_grad():
        a = timed(lambda: interp.run(*args))
        b = timed(lambda: gm(*args))
    print(name, a, b, flush=True)
)PY";
  const auto path = std::filesystem::temp_directory_path() / "gparity_replay_bench.py";
  std::ofstream(path) << script;
  // GPARITY_PYTHON: the interpreter with torch (the GPU machine's is `python3`, not /usr/bin's).
  const char* py = std::getenv("GPARITY_PYTHON");
  std::string cmd = std::string(py != nullptr && *py != '\0' ? py : "/usr/bin/python3") + " " +
                    path.string() + " " + dir.string() + " " + std::to_string(iters);
  for (const char* n : kGraphs) cmd += std::string(" ") + n;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::vector<std::pair<double, double>> out;
  char line[512];
  while (p && std::fgets(line, sizeof line, p.get())) {
    char name[128];
    double a = 0, b = 0;
    if (std::sscanf(line, "%127s %lf %lf", name, &a, &b) == 3) out.emplace_back(a, b);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  const std::filesystem::path dir = std::filesystem::path(GPARITY_SOURCE_DIR) / "samples" / "replay";
  at::set_num_threads(1);
  const auto py = python_runs(dir, iters);
  if (py.size() != kGraphs.size()) {
    std::fprintf(
        stderr,
        "bench_replay: the Python side failed (needs torch in /usr/bin/python3 or $GPARITY_PYTHON)\n");
    return 2;
  }
  std::printf("%-24s %5s %14s %14s %14s %8s\n", "graph", "ops", "replay us/node", "fx us/node", "gm us/node",
              "fx/replay");
  double sum_ratio = 0;
  for (std::size_t i = 0; i < kGraphs.size(); ++i) {
    std::size_t ops = 0;
    const double c = cpp_run(dir, kGraphs[i], iters, ops);
    const double per = 1e6 / static_cast<double>(ops);
    const double ratio = py[i].first / c;
    sum_ratio += ratio;
    std::printf("%-24s %5zu %14.2f %14.2f %14.2f %7.1fx\n", kGraphs[i], ops, c * per, py[i].first * per,
                py[i].second * per, ratio);
  }
  std::printf("mean fx/replay: %.1fx (goal >= 5x)\n", sum_ratio / static_cast<double>(kGraphs.size()));
  return 0;
}
