#pragma once
// Findings and the consumers that report them, in the style of llvm-diff's DiffConsumer: an
// engine (run comparison today, graph diff and the GUI later) emits what it finds to a
// FindingConsumer and never formats anything itself; text, JSON, JUnit and Markdown are
// consumers. The protocol: begin() once, then any number of finding() and check() calls in a
// deterministic order, then end() once with the verdict.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::diff {

enum class Severity : std::uint8_t {
  Info,        // context: what was compared, how
  Warning,     // weakens the result (rounded values, truncated tail) but is not a divergence
  Incomplete,  // evidence is missing (a failure, a killed or missing rank, an unrecorded step): exit 1
               // unless the comparison allows incomplete evidence (named in every report)
  Divergence,  // the runs differ: exit 1
  Error,       // damaged or unusable input: exit 2
};
std::string_view severity_name(Severity s) noexcept;

/// Where a finding applies; every part is optional. Graph findings use graph/node.
struct Location {
  std::optional<int> rank;
  std::optional<std::int64_t> step;
  std::string parameter;
  std::string graph;
  std::string node;
  std::string source;     // an input file, for damage
  std::int64_t line = 0;  // 1-based line in source
  /// "rank 1, step 3, tok.weight" (empty parts left out).
  [[nodiscard]] std::string text() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

struct Finding {
  Severity severity = Severity::Info;
  std::string kind;  // stable identifier: "loss_mismatch", "param_hash_mismatch", "missing_rank", ...
  Location where;
  std::string message;                               // one human sentence
  nlohmann::json values = nlohmann::json::object();  // structured: both values, bits, ULP, ...
};

/// One pass/fail unit (a JUnit test case): a named check on one rank, or on all ranks together.
struct Check {
  enum class Outcome : std::uint8_t { Pass, Fail, Skipped, Error };
  std::string name;  // "loss", "grad_norm", "weights", "grads", "optimizer", "weights (full tensors)"
  std::optional<int> rank;
  Outcome outcome = Outcome::Pass;
  std::string message;
};
std::string_view outcome_name(Check::Outcome o) noexcept;

struct ReportHeader {
  std::string title;  // "gparity compare"
  std::string baseline;
  std::string candidate;
  std::string mode;  // "bitwise" or the named tolerance
  std::vector<std::string> notes;
};

struct Verdict {
  int exit_code = 0;  // 0 parity, 1 divergence, 2 bad input
  std::string headline;
  std::vector<std::string> summary;                // e.g. "ranks 0-3,5 identical; rank 4 diverges at step 3"
  nlohmann::json data = nlohmann::json::object();  // engine-specific structured summary
};

class FindingConsumer {
 public:
  virtual ~FindingConsumer() = default;
  virtual void begin(const ReportHeader& header) { (void)header; }
  virtual void finding(const Finding& f) = 0;
  virtual void check(const Check& c) { (void)c; }
  virtual void end(const Verdict& v) { (void)v; }
};

/// Sends everything to several consumers, in the order they were added.
class FanOutConsumer final : public FindingConsumer {
 public:
  void add(FindingConsumer& c) { targets_.push_back(&c); }
  void begin(const ReportHeader& h) override;
  void finding(const Finding& f) override;
  void check(const Check& c) override;
  void end(const Verdict& v) override;

 private:
  std::vector<FindingConsumer*> targets_;
};

/// Keeps everything in memory (tests, the GUI).
class CollectingConsumer final : public FindingConsumer {
 public:
  void begin(const ReportHeader& h) override { header = h; }
  void finding(const Finding& f) override { findings.push_back(f); }
  void check(const Check& c) override { checks.push_back(c); }
  void end(const Verdict& v) override { verdict = v; }

  ReportHeader header;
  std::vector<Finding> findings;
  std::vector<Check> checks;
  Verdict verdict;
};

/// Exit code implied by the worst severity seen: Error 2, Divergence and Incomplete 1, else 0.
int exit_code_for(Severity worst) noexcept;

}  // namespace gparity::diff
