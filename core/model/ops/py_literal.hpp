#pragma once
// A lenient reader of the Python reprs DebugMode writes: tuples, lists, dicts, quoted strings,
// numbers, None/True/False, and "atoms" (anything else up to the next top-level delimiter, such
// as `t$0: f32[256, 64]`, `ScriptObject <...>` or `device(type='cuda', index=0)`; brackets and
// quotes inside an atom are balanced over). Nodes go into a caller-owned arena in pre-order, so
// a line is parsed with no allocation once the arena has grown: the reader reuses one arena for
// every line of a file. Views point into the parsed text. Never throws; a malformed text gives
// ok() == false and what was parsed up to there.

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace gparity::model::ops {

/// The node index that names no node: what child() and parse_py_value() return for none.
inline constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

struct PyNode {
  enum class Kind : std::uint8_t { Tuple, List, Dict, Str, Int, Float, None, Bool, Atom };
  Kind kind = Kind::Atom;
  std::uint32_t end = 0;  // index one past this node's subtree (pre-order)
  std::string_view text;  // leaves: the token (Str: between the quotes, escapes left as written)
  std::string_view key;   // a keyword argument's name (`dim=1`), else empty
  [[nodiscard]] bool container() const noexcept {
    return kind == Kind::Tuple || kind == Kind::List || kind == Kind::Dict;
  }
  [[nodiscard]] bool scalar() const noexcept { return kind == Kind::Int || kind == Kind::Float; }
};

class PyArena {
 public:
  std::vector<PyNode> nodes;
  void clear() noexcept { nodes.clear(); }
  /// Children of node i: first = i + 1, next = nodes[c].end, stop at nodes[i].end.
  [[nodiscard]] std::uint32_t child_count(std::uint32_t i) const noexcept;
  /// The n-th child of i, or UINT32_MAX.
  [[nodiscard]] std::uint32_t child(std::uint32_t i, std::uint32_t n) const noexcept;
};

/// Parses one value; returns its node index (UINT32_MAX when nothing could be read). `ok` is
/// false when the text is malformed or has trailing characters.
std::uint32_t parse_py_value(std::string_view text, PyArena& arena, bool& ok);

/// Parses a comma-separated argument list as DebugMode writes it inside `op(...)`: values and
/// `name=value` keyword arguments (PyNode::key). Returns the index of a synthetic Tuple node
/// holding them.
std::uint32_t parse_py_args(std::string_view text, PyArena& arena, bool& ok);

/// Strictly parsed integer / float tokens (Python's int and float reprs, incl. inf and nan).
bool parse_py_uint64(std::string_view text, std::uint64_t& out) noexcept;
bool parse_py_int64(std::string_view text, std::int64_t& out) noexcept;
bool parse_py_double(std::string_view text, double& out) noexcept;

}  // namespace gparity::model::ops
