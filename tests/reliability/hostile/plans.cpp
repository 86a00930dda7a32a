// Hostile bucket plans (rank<r>_meta.json), gate policies and NCCL graph files.

#include "tests/reliability/hostile/formats.hpp"

namespace gparity::testing::hostile {

void add_plan_inputs(const InputAdder& add) {
  // -- bucket plans, gate policies, NCCL graphs -------------------------------------------------
  add("meta-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    return std::vector{one({{"in", write_file(d / "in" / "rank0_meta.json",
                                              R"({"registration_order": )" + deep_json(kMillion) + "}")}})};
  });
  add("meta-duplicate-ranks", "duplicate ranks", [](const fs::path& d) {
    fs::create_directories(d / "in");
    fs::copy_file(kData / "graph" / "eager" / "rank0_meta.json", d / "in" / "rank0_meta.json");
    fs::copy_file(kData / "graph" / "eager" / "rank0_meta.json", d / "in" / "rank00_meta.json");
    return std::vector{one({{"in", (d / "in").string()}})};
  });
  add("meta-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "graph" / "eager" / "rank0_meta.json");
    return file_cuts(d, "rank0_meta.json", full, spread(line_boundaries(full), 8));
  });
  add("policy-deep-json", "10^6-deep nesting", [](const fs::path& d) {
    return std::vector{
        one({{"in", write_file(d / "policy.json", R"({"baseline": )" + deep_json(kMillion) + "}")}})};
  });
  add("policy-nan", "NaN/Inf in JSON", [](const fs::path& d) {
    const std::string policy = R"({"baseline": ")" + (kRuns / "eager").string() + R"(", "candidate": ")" +
                               (kRuns / "eager_repeat").string() + R"(", "tolerance": {"rtol": NaN}})";
    return std::vector{one({{"in", write_file(d / "policy.json", policy)}})};
  });
  add("nccl-truncated", "truncated at every record boundary", [](const fs::path& d) {
    const auto full = read_file(kData / "nccl" / "graph-dump-2xh200-ring.xml");
    std::vector<std::size_t> cuts;
    for (std::size_t at = full.find('<', 1); at != std::string::npos; at = full.find('<', at + 1))
      cuts.push_back(at);
    return file_cuts(d, "dump.xml", full, spread(cuts, 10));
  });
  add("nccl-deep", "10^6-deep nesting", [](const fs::path& d) {
    std::string xml = "<graphs version=\"1\">";
    for (std::size_t i = 0; i < kMillion; ++i) xml += "<a>";
    for (std::size_t i = 0; i < kMillion; ++i) xml += "</a>";
    xml += "</graphs>\n";
    return std::vector{one({{"in", write_file(d / "dump.xml", xml)}})};
  });
  add("nccl-entity-expansion", "10^6-deep nesting", [](const fs::path& d) {
    // "Billion laughs": ten levels of ten references each, 10^10 bytes once expanded.
    std::string xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE graphs [\n<!ENTITY e0 \"lol\">\n";
    for (int i = 1; i <= 10; ++i) {
      xml += "<!ENTITY e" + std::to_string(i) + " \"";
      for (int k = 0; k < 10; ++k) xml += "&e" + std::to_string(i - 1) + ";";
      xml += "\">\n";
    }
    xml += "]>\n<graphs version=\"1\">&e10;</graphs>\n";
    return std::vector{one({{"in", write_file(d / "dump.xml", xml)}})};
  });
}

}  // namespace gparity::testing::hostile
