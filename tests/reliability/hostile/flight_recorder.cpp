// Hostile Flight Recorder dumps, pickled and JSON.

#include <nlohmann/json.hpp>
#include <span>

#include "core/model/formats/pickle/pickle_ops.hpp"
#include "tests/reliability/hostile/formats.hpp"

namespace gparity::testing::hostile {
namespace {

/// The head of a pickled Flight Recorder dump, up to an open "entries" list: is_flight_recorder_pickle
/// claims it ('}' after the protocol, "version" in the first 64 bytes).
std::string fr_pickle_head() {
  return std::string("\x80\x02}(", 4) + bin_unicode("version") + bin_unicode("2.4") + bin_unicode("entries") +
         "]";
}

}  // namespace

void add_flight_recorder_inputs(const InputAdder& add) {
  // -- Flight Recorder ----------------------------------------------------------------------
  const fs::path fr_eager = kData / "graph" / "eager";
  add("fr-pickle-globals", "pickle GLOBAL/REDUCE of os.system / builtins.eval / subprocess.Popen",
      [](const fs::path& d) {
        std::vector<Variant> out;
        int k = 0;
        for (const auto& c : kCallables) {
          const auto marker = (d / "PWNED").string();
          const auto file = d / ("c" + std::to_string(k++)) / "rank0_flight_recorder.pkl";
          const auto bytes = fr_pickle_head() + reduce_call(c.module, c.name, marker, c.stack_global) + "au.";
          out.push_back(one(
              {{"in", write_file(file, bytes)}, {"callable", c.module + "." + c.name}, {"marker", marker}},
              c.module + "." + c.name + (c.stack_global ? " (STACK_GLOBAL)" : " (GLOBAL)")));
        }
        return out;
      });
  add("fr-pickle-length-claim", "pickle 2^40 length claim", [](const fs::path& d) {
    return std::vector{
        one({{"in", write_file(d / "rank0_flight_recorder.pkl", fr_pickle_head() + length_claim())}})};
  });
  add("fr-pickle-deep", "10^6-deep nesting", [](const fs::path& d) {
    const auto bytes = fr_pickle_head() + std::string(kMillion, '(') + std::string(kMillion, 'l') + "au.";
    return std::vector{one({{"in", write_file(d / "rank0_flight_recorder.pkl", bytes)}})};
  });
  add("fr-pickle-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "flight_recorder_pickle" / "fr_rank0.pkl");
    std::vector<std::size_t> ops;
    model::pickle::OpReader reader(std::as_bytes(std::span(full.data(), full.size())), "fr_rank0.pkl");
    while (!reader.at_end()) {
      const auto op = reader.next();
      if (op.offset > 2) ops.push_back(op.offset);  // from the first opcode after the protocol
      if (op.code == '.') break;
    }
    return file_cuts(d, "rank0_flight_recorder.pkl", full, spread(ops, 16));
  });
  add("fr-json-truncated", "truncated at every record boundary", [fr_eager](const fs::path& d) {
    const auto full = read_file(fr_eager / "rank0_flight_recorder.json");
    std::vector<std::size_t> cuts;
    for (auto at = full.find("},{"); at != std::string::npos; at = full.find("},{", at + 1))
      cuts.push_back(at + 2);
    return file_cuts(d, "rank0_flight_recorder.json", full, spread(cuts, 8));
  });
  add("fr-json-deep", "10^6-deep nesting", [](const fs::path& d) {
    const auto text = R"({"version": "2.4", "entries": )" + deep_json(kMillion) + "}";
    // Also beside a graph: hoist and replay read the process groups of the dumps next to it.
    return std::vector{
        one({{"in", write_file(d / "rank0_flight_recorder.json", text)},
             {"graph", write_file(d / "graph.txt", read_file(kData / "replay" / "collectives.txt"))}})};
  });
  add("fr-json-nan", "NaN/Inf in JSON", [fr_eager](const fs::path& d) {
    auto text = read_file(fr_eager / "rank0_flight_recorder.json");
    const auto at = text.find("\"time_created_ns\":");
    text.replace(at, text.find(',', at) - at, "\"time_created_ns\":NaN");
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank1_flight_recorder.json", d / "in" / "rank1_flight_recorder.json");
    write_file(d / "in" / "rank0_flight_recorder.json", text);
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("fr-duplicate-ranks", "duplicate ranks", [fr_eager](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank0_flight_recorder.json");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank00_flight_recorder.json");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("fr-mixed-runs", "ranks mixed from two runs", [fr_eager](const fs::path& d) {
    // Rank 0 of the two-rank eager run beside rank 1 of a four-rank run.
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank0_flight_recorder.json");
    fs::copy_file(kData / "flight_recorder_pickle" / "json" / "rank1_flight_recorder.json",
                  d / "in" / "rank1_flight_recorder.json");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("fr-one-rank-empty", "one side empty", [fr_eager](const fs::path& d) {
    auto j = nlohmann::json::parse(read_file(fr_eager / "rank1_flight_recorder.json"));
    j["entries"] = nlohmann::json::array();
    fs::create_directories(d / "in");
    fs::copy_file(fr_eager / "rank0_flight_recorder.json", d / "in" / "rank0_flight_recorder.json");
    write_file(d / "in" / "rank1_flight_recorder.json", j.dump());
    return std::vector{
        one({{"in", (d / "in").string()}, {"file", (d / "in" / "rank1_flight_recorder.json").string()}})};
  });
}

}  // namespace gparity::testing::hostile
