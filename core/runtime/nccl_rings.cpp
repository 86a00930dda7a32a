#include "core/runtime/nccl_rings.hpp"

#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/model/base/input_error.hpp"
#include "core/model/base/output_error.hpp"
#include "core/model/formats/nccl_graph.hpp"
#include "core/runtime/runner.hpp"

namespace gparity::runtime {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool is_ring_only(std::string algo) {
  for (auto& c : algo) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return algo == "ring";
}

}  // namespace

std::filesystem::path nccl_dump_path(const std::filesystem::path& out_dir) {
  return std::filesystem::absolute(out_dir) / "nccl-graph-dump.xml";
}
std::filesystem::path nccl_graph_path(const std::filesystem::path& out_dir) {
  return std::filesystem::absolute(out_dir) / "nccl-graph.xml";
}

void setup_ring_orders(const RunOptions& o, const RankEnv& env, Comm& comm) {
  if (o.ring_orders.empty()) return;
  const auto pattern = model::parse_ring_pattern(o.ring_orders);
  if (!pattern) throw std::invalid_argument("--ring-orders must be one of " + model::ring_pattern_names());
  if (const auto algo = env_or_empty("NCCL_ALGO"); !algo.empty() && !is_ring_only(algo))
    throw std::invalid_argument(
        "--ring-orders needs NCCL_ALGO=Ring (reduce-scatter must run on the rings it "
        "writes), but NCCL_ALGO=" +
        algo + " is set");
  if (!env_or_empty("NCCL_GRAPH_FILE").empty())
    throw std::invalid_argument("--ring-orders writes its own NCCL_GRAPH_FILE, but NCCL_GRAPH_FILE=" +
                                env_or_empty("NCCL_GRAPH_FILE") + " is set: unset it, or drop --ring-orders");
  setenv("NCCL_ALGO", "Ring", 1);
  std::filesystem::create_directories(o.out_dir);
  const auto dump = nccl_dump_path(o.out_dir);
  const auto graph = nccl_graph_path(o.out_dir);
  // NCCL dumps on rank NCCL_GRAPH_DUMP_FILE_RANK (0 unless the user says otherwise).
  setenv("NCCL_GRAPH_DUMP_FILE", dump.c_str(), 1);
  // Only the throwaway communicator may dump: the run's own would overwrite the file.
  struct UnsetDump {
    ~UnsetDump() { unsetenv("NCCL_GRAPH_DUMP_FILE"); }
  } unset_dump;
  std::string error;
  const bool ok = comm.nccl_side_round([&] {
    if (env.rank != 0) return true;
    try {
      const auto rw = model::write_ring_orders_file(dump, graph, *pattern, o.ring_seed, 0);
      return !rw.after.empty();
    } catch (const model::InputError& e) {
      error = e.what();
      return false;
    } catch (const model::OutputError& e) {  // the graph file not written: said by every rank
      error = e.what();
      return false;
    }
  });
  if (!ok) {
    throw RankFailure(
        "rank " + std::to_string(env.rank) + ": --ring-orders: " +
        (error.empty() ? "rank 0 could not rewrite NCCL's graph dump " + dump.string() : error));
  }
  setenv("NCCL_GRAPH_FILE", graph.c_str(), 1);
}

model::NcclGraphInfo nccl_graph_info(const RunOptions& o) {
  model::NcclGraphInfo n;
  n.algo = env_or_empty("NCCL_ALGO");
  n.graph_file = env_or_empty("NCCL_GRAPH_FILE");
  n.ring_pattern = o.ring_orders;
  if (!o.ring_orders.empty()) n.ring_seed = o.ring_seed;
  if (!n.graph_file.empty()) {
    try {
      const auto f = model::read_nccl_graph_file(n.graph_file);
      for (const auto& g : f.graphs()) {
        if (!g.is_ring() || g.channels.empty()) continue;
        for (const auto& ch : g.channels) n.rings.push_back(ch.gpus);
        break;
      }
    } catch (const model::InputError& e) {
      n.graph_error = e.what();
    }
  }
  return n;
}

}  // namespace gparity::runtime
