#pragma once
// Ranks' graph payloads compared as text before any is parsed (issue 35: `graph ranks` over
// 1,024 TORCH_TRACE logs of one graph at the speed of reading them). A base graph's payload is
// kept with the statements the reader cut it into (core/model/graph/fx_delta.hpp); another rank's
// payload of the same graph is compared with it statement by statement:
//   - a statement byte-identical to the base's gives the base's nodes as they are; one identical
//     but for the base's local device written as the rank's own (the digits of `cuda:<local>` and
//     `index=<local>`) gives them with the device remapped: shared when add() would share them,
//     not parsed;
//   - a comment that sets no source location (`# graph id: 1404...`) may differ: the reader
//     takes nothing from it;
//   - any other statement is parsed alone, at its place (a node or setitem line: fx_delta.hpp's
//     FxStatement::alone), and compared with the base's node as RankGraphSet::add compares
//     nodes: shared or patched.
// What is skipped cannot change a verdict: a statement is taken as the base's only where parsing
// it would give exactly the base's nodes with the device remapped, and those are shared nodes
// (SharedTest, rank_shared.hpp) as add() would find them. Which statements may be taken so is
// proven once per base, not assumed: the base's text with every local-device span rewritten to
// another device is parsed whole, and a statement qualifies only when each of its nodes comes out
// as the base's node remapped and shared (the digits of a span reach the IR only where the
// remapping puts them). A `# File:` comment or a rename (which shape nodes of other statements)
// is taken only byte for byte. Anything else — a differing statement that cannot be read alone, a
// node renamed, a line added, the payload at another log line, more than a quarter of the nodes
// differing — returns nullopt, and the caller parses the whole payload (RankGraphSet::add):
// slower, never another answer. docs/scale.md describes it for users.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/fx_delta.hpp"
#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"

namespace gparity::diff {

class RankPayloadTemplate {
 public:
  /// A template of `text` (a payload whose first line is log line `first_line`), which parsed
  /// to `graph` without problems, on local device `local` (nullopt: devices are not mapped).
  /// `graph` must outlive the template. nullptr when the text does not cut into statements
  /// (fx_statements).
  static std::unique_ptr<RankPayloadTemplate> make(std::string text, std::int64_t first_line,
                                                   const model::Graph& graph,
                                                   std::optional<std::int32_t> local);

  /// A rank's payload as the base's graph plus patches: the positions whose node is not shared
  /// (ascending) and those nodes (references by position).
  struct Delta {
    std::vector<model::NodeId> patched;
    model::Graph patches;
  };
  /// `text` read against the base for a rank on local device `local`; nullopt: read it whole.
  [[nodiscard]] std::optional<Delta> delta(std::string_view text, std::int64_t first_line,
                                           std::optional<std::int32_t> local) const;

  /// How many statements may be taken with the device rewritten, and how many may be parsed
  /// alone (for tests and docs).
  [[nodiscard]] std::size_t rewritable() const noexcept;
  [[nodiscard]] std::size_t parsable() const noexcept;

 private:
  struct Statement {
    model::FxStatement at;
    bool spans = false;      // holds local-device spans
    bool rewrite = false;    // may be taken with its spans rewritten (proven on the base)
    bool identical = false;  // taken byte for byte, its nodes are shared under any remapping
  };

  RankPayloadTemplate() = default;
  [[nodiscard]] std::optional<std::size_t> match(const Statement& s, std::string_view text, std::size_t at,
                                                 std::string_view digits) const;

  std::string text_;
  std::int64_t first_line_ = 0;
  const model::Graph* graph_ = nullptr;
  std::optional<std::int32_t> local_;
  std::string local_digits_;
  std::vector<std::uint32_t> spans_;   // offsets of the local device's digits, ascending
  std::vector<std::int32_t> foreign_;  // other device indices the graph names, sorted
  std::vector<Statement> statements_;
  model::StringIndex names_;  // node name -> position
};

}  // namespace gparity::diff
