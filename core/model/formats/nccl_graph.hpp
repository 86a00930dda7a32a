#pragma once
// NCCL's graph XML (what NCCL_GRAPH_DUMP_FILE writes and NCCL_GRAPH_FILE reads; NCCL's
// src/graph/search.cc, ncclTopoGetGraphFromXml): <graphs version> holding one <graph> per
// algorithm (id 0 ring, 1 tree, 2 collnet chain, 3 collnet direct, 4 NVLS) with its speeds and
// one <channel> per channel, each listing its GPUs in order (<gpu dev="0x1" [rank="1"]/>), with
// a <net> before and after them on multi-node graphs.
//
// The reader validates (expat; errors name the file and line) and keeps every element and
// attribute, known or not, in file order. The rewriter changes only the order of the <gpu>
// elements inside ring channels (pattern 4), so speeds, channel counts, nets, dev/rank pairs and
// the other graphs stay exactly as NCCL dumped them. The writer uses NCCL's own layout (two-space
// indent, double quotes, no declaration), which NCCL's hand-written reader requires.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gparity::model {

inline constexpr int kNcclPatternRing = 4;  // NCCL_TOPO_PATTERN_RING

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;  // in file order
  std::vector<XmlElement> children;
  std::int64_t line = 0;  // 1-based, where the start tag is

  [[nodiscard]] const std::string* attr(std::string_view key) const noexcept;
};

/// One channel of a graph: its GPUs in order, named by `rank` where the dump has it, else by
/// `dev` (the CUDA device; on one node with the default device mapping the same number).
struct NcclChannelView {
  std::vector<std::int64_t> gpus;
  std::int64_t line = 0;
};

struct NcclGraphView {
  int id = 0;
  int pattern = 0;
  int nchannels = 0;
  std::string speed_intra, speed_inter;  // as written ("30", "30.000000")
  std::vector<NcclChannelView> channels;
  std::int64_t line = 0;
  [[nodiscard]] bool is_ring() const noexcept { return pattern == kNcclPatternRing; }
};

struct NcclGraphFile {
  std::string source;  // for messages
  XmlElement root;     // <graphs>
  [[nodiscard]] std::vector<NcclGraphView> graphs() const;
  /// The ring graph (pattern 4) with channels, or nullptr.
  [[nodiscard]] const XmlElement* ring_graph() const noexcept;
};

/// Parses and validates; throws InputError (source, line, what is wrong).
NcclGraphFile parse_nccl_graph_xml(std::string_view text, const std::string& source);
NcclGraphFile read_nccl_graph_file(const std::filesystem::path& path);

/// NCCL's layout, readable by NCCL's own XML reader.
std::string write_nccl_graph_xml(const NcclGraphFile& f);

enum class RingPattern : std::uint8_t {
  ReverseOdd,  // odd channels run the ring backwards: 0 1 2 3 -> 0 3 2 1
  Rotate,      // channel c rotates the ring after its first GPU by c: 0 1 2 3, 0 2 3 1, 0 3 1 2, ...
  Random,      // every channel a seeded random ring (first GPU kept)
};
std::optional<RingPattern> parse_ring_pattern(std::string_view text) noexcept;
std::string_view ring_pattern_name(RingPattern p) noexcept;
/// The names, for --help and errors: "reverse-odd, rotate, random".
std::string ring_pattern_names();

/// GPU positions of channel `c` as a permutation of 0..n-1 (position i of the new order takes
/// the GPU at position result[i] of the dump's order). Deterministic for a seed on every machine.
std::vector<std::size_t> ring_permutation(RingPattern p, std::size_t channel, std::size_t n,
                                          std::uint64_t seed);

struct RingRewrite {
  int graph_id = 0;
  std::vector<std::vector<std::int64_t>> before, after;  // per channel, GPUs in ring order
  /// Distinct rings (as cycles) among the channels after the rewrite.
  std::size_t distinct_after = 0;
};

/// Rewrites the ring graph's channels of `f` in place. Throws InputError when the file has no
/// ring graph with channels, when a ring channel's GPUs are not one permutation of the first
/// channel's, or when `expected_gpus` (> 0) differs from the GPUs per channel.
RingRewrite rewrite_ring_orders(NcclGraphFile& f, RingPattern p, std::uint64_t seed, int expected_gpus = 0);

/// Reads `dump`, rewrites its ring orders and writes `out` (an AtomicFile: a reader never sees
/// half a file). Throws InputError on a bad dump, OutputError when `out` cannot be written.
RingRewrite write_ring_orders_file(const std::filesystem::path& dump, const std::filesystem::path& out,
                                   RingPattern p, std::uint64_t seed, int expected_gpus = 0);

/// Rings as cycles: two orders are the same ring when one is a rotation of the other.
std::vector<std::int64_t> canonical_ring(const std::vector<std::int64_t>& order);

}  // namespace gparity::model
