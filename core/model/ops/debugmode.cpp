#include "core/model/ops/debugmode.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "core/model/base/mapped_file.hpp"
#include "core/model/ops/py_literal.hpp"

namespace gparity::model::ops {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::string_view kDumpHeader = "Total captured tensor hash ops:";

bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.substr(0, p.size()) == p;
}
bool contains(std::string_view s, std::string_view p) noexcept {
  return s.find(p) != std::string_view::npos;
}

bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == ':' || c == '<' || c == '>';
}

/// An op name as DebugMode writes it: "aten::add.Tensor", "torch.mm", "redistribute_input".
bool valid_op_name(std::string_view n) noexcept {
  if (n.empty()) return false;
  const char c = n[0];
  if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return false;
  return std::all_of(n.begin(), n.end(), is_name_char);
}

/// A collective whose output DebugMode hashes at dispatch, before it completed: functional
/// collectives (the wait_tensor holds the value) and c10d's Work-returning ones.
bool unreliable_collective(std::string_view op) noexcept {
  if (!starts_with(op, "_c10d_functional::") && !starts_with(op, "c10d_functional::") &&
      !starts_with(op, "c10d::"))
    return false;
  return !contains(op, "wait_tensor");
}

struct TensorText {
  TensorKind kind = TensorKind::Plain;
  std::int64_t id = -1;
  std::string_view dtype, shape, placement;
  std::int64_t numel = -1;
};

std::int64_t numel_of(std::string_view shape) noexcept {
  std::int64_t n = 1;
  while (!shape.empty()) {
    const auto comma = shape.find(',');
    std::string_view d = shape.substr(0, comma);
    while (!d.empty() && d.front() == ' ') d.remove_prefix(1);
    while (!d.empty() && d.back() == ' ') d.remove_suffix(1);
    std::int64_t v = 0;
    if (!parse_py_int64(d, v) || v < 0) return -1;
    if (v != 0 && n > std::numeric_limits<std::int64_t>::max() / v) return -1;
    n *= v;
    if (comma == std::string_view::npos) break;
    shape.remove_prefix(comma + 1);
  }
  return n;
}

/// `t$3: f32[2, 32]`, `dt$0: f32[8, 8]| S(0)`, `ft: bf16[4]{requires_grad=True}`, `t: i64[]`.
bool parse_tensor_text(std::string_view s, TensorText& out) noexcept {
  std::size_t i = 0;
  if (starts_with(s, "dt")) {
    out.kind = TensorKind::DTensor;
    i = 2;
  } else if (starts_with(s, "ft")) {
    out.kind = TensorKind::Fake;
    i = 2;
  } else if (starts_with(s, "t")) {
    out.kind = TensorKind::Plain;
    i = 1;
  } else {
    return false;
  }
  out.id = -1;
  if (i < s.size() && s[i] == '$') {
    const std::size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (!parse_py_int64(s.substr(start, i - start), out.id)) return false;
  }
  if (s.substr(i, 2) != ": ") return false;
  i += 2;
  const std::size_t dt = i;
  while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9'))) ++i;
  if (i == dt || i >= s.size() || s[i] != '[') return false;
  out.dtype = s.substr(dt, i - dt);
  const auto close = s.find(']', i);
  if (close == std::string_view::npos) return false;
  out.shape = s.substr(i + 1, close - i - 1);
  i = close + 1;
  if (i < s.size() && s[i] == '{') {  // record_tensor_attributes
    const auto end = s.find('}', i);
    if (end == std::string_view::npos) return false;
    i = end + 1;
  }
  out.placement = {};
  if (i < s.size()) {
    if (s.substr(i, 2) != "| ") return false;
    out.placement = s.substr(i + 2);
    if (out.placement.empty()) return false;
  }
  out.numel = numel_of(out.shape);
  return true;
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& source, int rank, std::int64_t step)
      : text_(text), step_given_(step), step_(step > 0 ? step : 1) {
    log_.path = source;
    log_.rank = rank;
    log_.bytes = text.size();
    log_.sources.emplace_back();
    // DebugMode lines run 150 to 400 bytes with three or four tensors each: growing the arrays
    // once, not by doubling, saves copies and page faults on large logs.
    log_.records.reserve(text.size() / 256);
    log_.tensors.reserve(text.size() / 96);
    log_.hashes.reserve(text.size() / 96);
  }

  OpLog run() {
    std::size_t pos = 0;
    std::int64_t ln = 0;
    // The first non-blank line tells the dump_tensor_hashes format from debug_string text.
    const std::string_view head = first_line(text_);
    const bool dump = starts_with(trim(head), kDumpHeader);
    log_.format = dump ? "dump_tensor_hashes" : "debug_string";
    while (pos < text_.size()) {
      const char* nl = static_cast<const char*>(std::memchr(text_.data() + pos, '\n', text_.size() - pos));
      const std::size_t end = nl ? static_cast<std::size_t>(nl - text_.data()) : text_.size();
      std::string_view line = text_.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++ln;
      const bool last = nl == nullptr || end + 1 >= text_.size();
      const std::size_t issues_before = log_.issues.size();
      if (dump) {
        dump_line(line, ln);
      } else {
        text_line(line, ln);
      }
      // A last line that does not parse was most likely cut short.
      if (last && log_.issues.size() > issues_before) log_.truncated = true;
      pos = end + 1;
    }
    if (dump) {
      finish_dump(ln);
    } else {
      mark_hash_noise();
    }
    if (!hash_order_.empty()) log_.format += " (" + hash_order_ + ")";
    std::sort(log_.steps.begin(), log_.steps.end());
    log_.steps.erase(std::unique(log_.steps.begin(), log_.steps.end()), log_.steps.end());
    return std::move(log_);
  }

 private:
  static std::string_view first_line(std::string_view t) {
    while (!t.empty()) {
      const auto nl = t.find('\n');
      const std::string_view l = t.substr(0, nl);
      if (!trim(l).empty()) return l;
      if (nl == std::string_view::npos) break;
      t.remove_prefix(nl + 1);
    }
    return {};
  }

  void issue(std::int64_t ln, std::string problem) { log_.issues.push_back({ln, std::move(problem)}); }

  // ---- debug_string text ------------------------------------------------------------------------

  void text_line(std::string_view line, std::int64_t ln) {
    std::size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    const std::string_view body = trim(line.substr(indent));
    if (body.empty()) return;
    const auto depth = static_cast<std::uint32_t>(indent >= 2 ? (indent - 2) / 2 : 0);
    if (body[0] == '#') {
      comment_line(body, ln);
    } else if (starts_with(body, "[triton] ")) {
      triton_line(body.substr(9), depth, ln);
    } else if (body[0] == '[') {
      annotation_line(body, depth, ln);
    } else if (starts_with(body, "-> output:")) {
      // nightly's DTensor output placements: a line of its own, nothing to compare
    } else {
      call_line(body, depth, ln);
    }
  }

  void comment_line(std::string_view body, std::int64_t ln) {
    if (starts_with(body, "# File: ")) {
      source_line(body.substr(8), ln);
    } else if (starts_with(body, "# pre-kernel hashes: ")) {
      kernel_hashes(body.substr(21), ln, true);
    } else if (starts_with(body, "# post-kernel hashes: ")) {
      kernel_hashes(body.substr(22), ln, false);
    } else {
      issue(ln, "not a DebugMode line (a comment other than # File: or kernel hashes)");
    }
  }

  /// `path:line in fn, code: text`.
  void source_line(std::string_view s, std::int64_t ln) {
    const auto code_pos = s.find(", code: ");
    const std::string_view head = code_pos == std::string_view::npos ? s : s.substr(0, code_pos);
    const std::string_view code =
        code_pos == std::string_view::npos ? std::string_view() : s.substr(code_pos + 8);
    const auto in_pos = head.rfind(" in ");
    const std::string_view loc = in_pos == std::string_view::npos ? head : head.substr(0, in_pos);
    const std::string_view fn =
        in_pos == std::string_view::npos ? std::string_view() : head.substr(in_pos + 4);
    const auto colon = loc.rfind(':');
    std::int64_t line_no = 0;
    if (colon == std::string_view::npos || !parse_py_int64(loc.substr(colon + 1), line_no) || line_no < 0) {
      issue(ln, "a # File: line without path:line");
      source_ = 0;
      return;
    }
    const std::uint32_t key = log_.strings.intern(s);
    auto [it, fresh] = source_index_.try_emplace(key, 0);
    if (fresh) {
      it->second = static_cast<std::uint32_t>(log_.sources.size());
      log_.sources.push_back({log_.strings.intern(loc.substr(0, colon)), line_no, log_.strings.intern(fn),
                              log_.strings.intern(code)});
    }
    source_ = it->second;
    phase_on_source(log_.sources[source_]);
  }

  static bool calls_backward(std::string_view code) noexcept {
    return contains(code, ".backward(") || starts_with(code, "backward(") || contains(code, "autograd.grad(");
  }

  void phase_on_source(const SourceLoc& s) {
    sources_seen_ = true;
    const std::pair<std::uint32_t, std::uint32_t> where{s.file, s.function};
    if (calls_backward(log_.str(s.code))) {
      if (phase_ == Phase::Optimizer) next_step();
      phase_ = Phase::Backward;
      loop_ = where;
      return;
    }
    if (phase_ == Phase::Backward && where == loop_) {
      phase_ = Phase::Optimizer;
    } else if (phase_ == Phase::Optimizer && where != loop_) {
      next_step();
    }
  }

  void next_step() {
    phase_ = Phase::Forward;
    if (step_given_ > 0) return;  // one step per file: a later forward stays in it
    ++step_;
  }

  void annotation_line(std::string_view body, std::uint32_t depth, std::int64_t ln) {
    const auto close = body.find("] ");
    if (close == std::string_view::npos) {
      issue(ln, "an annotation line without \"] \"");
      return;
    }
    const std::string_view header = body.substr(1, close - 1);
    const std::string_view tag = body.substr(close + 2);
    pop_modules(depth);
    if (starts_with(header, "nn.Mod")) modules_.push_back({depth, log_.strings.intern(tag)});
    // "[annotate] tag", "[record function] tag", "[aot_eager region (compile)] enter": context only
  }

  void pop_modules(std::uint32_t depth) {
    while (!modules_.empty() && modules_.back().first >= depth) modules_.pop_back();
    while (!calls_.empty() && calls_.back().first >= depth) calls_.pop_back();
  }

  /// `name(args)  ->  outputs  # {log}`; `redistribute_input [implicit] (args)  ->  out`.
  void call_line(std::string_view body, std::uint32_t depth, std::int64_t ln) {
    const auto paren = body.find('(');
    if (paren == std::string_view::npos) {
      issue(ln, "not a DebugMode call line (no '(')");
      return;
    }
    std::string_view name = trim(body.substr(0, paren));
    RecordKind kind = RecordKind::Op;
    if (starts_with(name, "redistribute_input")) {
      name = "redistribute_input";
      kind = RecordKind::Redistribute;
    } else if (!valid_op_name(name)) {
      issue(ln, "not a DebugMode call line (bad op name)");
      return;
    } else if (!contains(name, "::")) {
      kind = RecordKind::TorchFunction;
    }
    std::string_view rest = body.substr(paren + 1);
    std::string_view log_text;
    if (!rest.empty() && rest.back() == '}') {
      if (const auto at = rest.rfind("  # {"); at != std::string_view::npos) {
        log_text = rest.substr(at + 4);
        rest = rest.substr(0, at);
      }
    }
    std::string_view out_text;
    if (const auto arrow = rest.find("  ->  "); arrow != std::string_view::npos) {
      out_text = rest.substr(arrow + 6);
      rest = rest.substr(0, arrow);
    }
    rest = trim(rest);
    if (rest.empty() || rest.back() != ')') {
      issue(ln, "call line cut short (no closing ')')");
      return;
    }
    const std::string_view args_text = rest.substr(0, rest.size() - 1);

    arena_.clear();
    bool ok = true;
    std::uint32_t log_node = kNone, hash_node = kNone, input_hash_node = kNone;
    if (!log_text.empty()) {
      log_node = parse_py_value(log_text, arena_, ok);
      if (!ok || arena_.nodes[log_node].kind != PyNode::Kind::Dict) {
        issue(ln, "unreadable annotation dict after '# '");
        return;
      }
      find_hash_keys(log_node, hash_node, input_hash_node);
    }
    std::uint32_t out_node = kNone;
    if (!out_text.empty()) {
      out_node = parse_py_value(out_text, arena_, ok);
      if (!ok) {
        issue(ln, "unreadable outputs after '->'");
        return;
      }
    }
    const std::uint32_t args_node = parse_py_args(args_text, arena_, ok);
    const bool args_ok = ok;

    OpRecord r = begin_record(kind, name, depth, ln);
    r.first_arg = static_cast<std::uint32_t>(log_.tensors.size());
    bool mismatch = false;
    if (args_ok) {
      zip_args(args_node, input_hash_node, mismatch);
      r.has_input_hashes = input_hash_node != kNone;
      if (kind == RecordKind::Op) r.group = collective_group(name, args_node);
    } else if (kind == RecordKind::Op) {
      // Unquoted string arguments can hold anything; the outputs still count.
      issue(ln, "arguments not fully readable; input hashes not used");
    }
    r.arg_count = static_cast<std::uint32_t>(log_.tensors.size()) - r.first_arg;
    r.first_out = static_cast<std::uint32_t>(log_.tensors.size());
    if (out_node != kNone) zip(out_node, hash_node, 0, mismatch);
    r.out_count = static_cast<std::uint32_t>(log_.tensors.size()) - r.first_out;
    r.output_hash_unreliable = unreliable_collective(name);
    if (mismatch) issue(ln, "hashes do not match the tensors' structure; unmatched hashes not used");
    flush_spec_issue(ln);
    commit(r);
  }

  /// The process group a collective names in its arguments (string id; 0: none named, all
  /// ranks). DebugMode prints arguments with str(): a functional collective's group_name is its
  /// last positional argument, unquoted (`_c10d_functional::all_reduce(t$1: f32[8], sum, 3)`);
  /// the legacy `c10d_functional::` ops list their ranks (`..., [2, 3], 2)`), named "ranks:2,3"
  /// with those members. c10d:: ops take a ProcessGroup printed as `ScriptObject <...>`: no name.
  std::uint32_t collective_group(std::string_view op, std::uint32_t args) {
    const bool functional = starts_with(op, "_c10d_functional::");
    const bool legacy = starts_with(op, "c10d_functional::");
    if ((!functional && !legacy) || contains(op, "wait_tensor")) return 0;
    const auto& n = arena_.nodes;
    std::uint32_t last = kNone;
    for (std::uint32_t c = args + 1; c < n[args].end; c = n[c].end) {
      if (n[c].key == "group_name") {
        last = c;
        break;
      }
      if (!n[c].key.empty()) continue;
      if (legacy && n[c].kind == PyNode::Kind::List && n[c].end > c + 1) {
        std::vector<int> ranks;
        for (std::uint32_t x = c + 1; x < n[c].end; x = n[x].end) {
          std::int64_t v = 0;
          if (n[x].kind != PyNode::Kind::Int || !parse_py_int64(n[x].text, v) || v < 0 || v > (1 << 24) ||
              (!ranks.empty() && v <= ranks.back()))
            return 0;
          ranks.push_back(static_cast<int>(v));
        }
        std::string name = "ranks:";
        for (std::size_t i = 0; i < ranks.size(); ++i) name += (i ? "," : "") + std::to_string(ranks[i]);
        const std::uint32_t id = log_.strings.intern(name);
        log_.group_ranks.emplace(id, std::move(ranks));
        return id;
      }
      last = c;
    }
    // The first argument is the tensor, never the group.
    if (!functional || last == kNone || (last == args + 1 && n[last].key.empty())) return 0;
    const PyNode& g = n[last];
    if (g.kind != PyNode::Kind::Int && g.kind != PyNode::Kind::Str && g.kind != PyNode::Kind::Atom) return 0;
    if (g.text.empty() || g.text.size() > 256) return 0;
    return log_.strings.intern(g.text);
  }

  void find_hash_keys(std::uint32_t dict, std::uint32_t& hash, std::uint32_t& input_hash) {
    const auto& n = arena_.nodes;
    for (std::uint32_t k = dict + 1; k < n[dict].end;) {
      const std::uint32_t v = n[k].end;
      if (v >= n[dict].end) break;
      if (n[k].kind == PyNode::Kind::Str) {
        if (n[k].text == "hash") hash = v;
        if (n[k].text == "input_hash") input_hash = v;
      }
      k = n[v].end;
    }
    // 2.10 adds both keys in one post-hook, hash first; 2.11 takes input hashes in a pre-hook.
    if (hash != kNone && input_hash != kNone && hash_order_.empty())
      hash_order_ = hash < input_hash ? "hash first" : "input_hash first";
  }

  OpRecord begin_record(RecordKind kind, std::string_view name, std::uint32_t depth, std::int64_t ln) {
    pop_modules(depth);
    OpRecord r;
    r.kind = kind;
    r.line = ln;
    r.depth = depth;
    r.op = log_.strings.intern(name);
    r.module = modules_.empty() ? 0 : modules_.back().second;
    r.source = source_;
    // With no source lines, the first backward op starts the backward.
    if (!sources_seen_ && phase_ == Phase::Forward && contains(name, "_backward")) phase_ = Phase::Backward;
    r.phase = phase_;
    r.step = step_;
    return r;
  }

  void commit(OpRecord& r) {
    if (r.step != last_step_) {
      last_step_ = r.step;
      index_ = 0;
      log_.steps.push_back(r.step);
    }
    r.index = index_++;
    // The enclosing call, if this one is nested in it (pop_modules ran in begin_record).
    if (!calls_.empty()) log_.records[calls_.back().second].has_children = true;
    calls_.emplace_back(r.depth, static_cast<std::uint32_t>(log_.records.size()));
    log_.records.push_back(r);
  }

  /// Positional arguments zip with input_hash[0], keyword arguments with input_hash[1]'s values.
  void zip_args(std::uint32_t args, std::uint32_t input_hash, bool& mismatch) {
    const auto& n = arena_.nodes;
    std::uint32_t pos_h = kNone, kw_h = kNone;
    if (input_hash != kNone) {
      if (n[input_hash].kind == PyNode::Kind::Tuple && arena_.child_count(input_hash) == 2) {
        pos_h = input_hash + 1;
        kw_h = n[pos_h].end;
        if (!n[pos_h].container() || n[kw_h].kind != PyNode::Kind::Dict) mismatch = true;
      } else {
        mismatch = true;
      }
    }
    std::uint32_t pos_i = 0, kw_i = 0;
    for (std::uint32_t c = args + 1; c < n[args].end; c = n[c].end) {
      std::uint32_t h = kNone;
      if (n[c].key.empty()) {
        if (pos_h != kNone && !mismatch) h = arena_.child(pos_h, pos_i);
        ++pos_i;
      } else {
        if (kw_h != kNone && !mismatch) h = arena_.child(kw_h, 2 * kw_i + 1);
        ++kw_i;
      }
      zip(c, h, n[c].key.empty() ? 0 : log_.strings.intern(n[c].key), mismatch);
    }
  }

  /// Walks a value and its hash tree together, adding a TensorRef for every tensor.
  void zip(std::uint32_t v, std::uint32_t h, std::uint32_t name, bool& mismatch) {
    const auto& n = arena_.nodes;
    const PyNode& node = n[v];
    if (node.kind == PyNode::Kind::Atom || node.kind == PyNode::Kind::Str) {
      TensorText t;
      if (!parse_tensor_text(node.text, t)) return;  // a non-tensor argument: hashed as None
      TensorRef ref;
      ref.kind = t.kind;
      ref.id = t.id;
      ref.numel = t.numel;
      ref.dtype = log_.strings.intern(t.dtype);
      ref.shape = log_.strings.intern(t.shape);
      ref.placement = t.placement.empty() ? 0 : log_.strings.intern(t.placement);
      ref.name = name;
      if (h != kNone) add_hash_group(h, ref, mismatch);
      log_.tensors.push_back(ref);
      return;
    }
    if (!node.container()) return;
    bool pair = h != kNone && n[h].container() && arena_.child_count(h) == arena_.child_count(v);
    if (h != kNone && !pair && n[h].kind != PyNode::Kind::None) mismatch = true;
    std::uint32_t hc = pair ? h + 1 : kNone;
    for (std::uint32_t c = v + 1; c < node.end; c = n[c].end) {
      zip(c, hc, name, mismatch);
      if (hc != kNone) hc = n[hc].end;
    }
  }

  /// One tensor's hashes: a number, or a tuple of numbers (several hash functions).
  void add_hash_group(std::uint32_t h, TensorRef& ref, bool& mismatch) {
    const auto& n = arena_.nodes;
    if (n[h].kind == PyNode::Kind::None) return;
    std::uint32_t first = h, end = h + 1;
    if (n[h].container()) {
      first = h + 1;
      end = n[h].end;
      for (std::uint32_t c = first; c < end; c = n[c].end) {
        if (n[c].container() || n[c].kind == PyNode::Kind::None || n[c].kind == PyNode::Kind::Bool) {
          mismatch = true;
          return;
        }
      }
      if (first == end) return;
    } else if (n[h].kind == PyNode::Kind::Bool) {
      mismatch = true;
      return;
    }
    names_.clear();
    const auto start = static_cast<std::uint32_t>(log_.hashes.size());
    for (std::uint32_t c = first; c < end; c = n[c].end) {
      HashValue hv;
      names_.push_back(hash_value(n[c], hv));
      log_.hashes.push_back(hv);
    }
    if (!check_spec()) {
      log_.hashes.resize(start);
      return;
    }
    ref.first_hash = start;
    ref.hash_count = static_cast<std::uint8_t>(std::min<std::size_t>(names_.size(), 255));
  }

  std::string_view hash_value(const PyNode& node, HashValue& hv) {
    if (node.kind == PyNode::Kind::Int) {
      std::uint64_t u = 0;
      if (parse_py_uint64(node.text, u)) {
        hv = {HashValue::Kind::Int, u};
        return "hash_tensor";
      }
    } else if (node.kind == PyNode::Kind::Float) {
      double d = 0;
      if (parse_py_double(node.text, d)) {
        hv = {HashValue::Kind::Float, std::bit_cast<std::uint64_t>(d)};
        return "norm";
      }
    } else if (node.kind == PyNode::Kind::Str &&
               (node.text == "NaN" || node.text == "Infinity" || node.text == "-Infinity")) {
      // dump_tensor_hashes writes non-finite norms as JSON strings
      const double d = node.text == "NaN"        ? std::numeric_limits<double>::quiet_NaN()
                       : node.text == "Infinity" ? std::numeric_limits<double>::infinity()
                                                 : -std::numeric_limits<double>::infinity();
      hv = {HashValue::Kind::Float, std::bit_cast<std::uint64_t>(d)};
      return "norm";
    }
    hv = {HashValue::Kind::Text, log_.strings.intern(node.text)};
    return "custom";
  }

  /// Every tensor of a log must be hashed by the same functions; the first group decides.
  bool check_spec() {
    auto& spec = log_.hash_spec.functions;
    if (spec.empty()) {
      spec.assign(names_.begin(), names_.end());
      return true;
    }
    if (std::equal(spec.begin(), spec.end(), names_.begin(), names_.end())) return true;
    if (!spec_conflict_) {
      spec_conflict_ = true;
      std::string got;
      for (const auto& s : names_) got += (got.empty() ? "" : "+") + std::string(s);
      spec_conflict_problem_ = "hashes of another kind (" + got + ") than the log's first (" +
                               log_.hash_spec.text() + "); such hashes are not used";
    }
    pending_spec_issue_ = true;
    return false;
  }

  /// Runs of DebugMode's hashing ops next to a Triton launch (its pre- and post-kernel hashes
  /// dispatch them while the mode is active).
  void mark_hash_noise() {
    auto& recs = log_.records;
    auto noise_op = [&](const OpRecord& r) {
      const std::string_view op = log_.op_name(r);
      return op == "aten::_to_copy" || op == "aten::linalg_vector_norm" ||
             op == "aten::_local_scalar_dense" || op == "aten::hash_tensor";
    };
    std::size_t i = 0;
    while (i < recs.size()) {
      if (!noise_op(recs[i])) {
        ++i;
        continue;
      }
      std::size_t j = i;
      bool hashing = false;
      while (j < recs.size() && noise_op(recs[j]) && recs[j].step == recs[i].step) {
        const std::string_view op = log_.op_name(recs[j]);
        hashing = hashing || op == "aten::hash_tensor" || op == "aten::linalg_vector_norm";
        ++j;
      }
      const bool next_to_kernel = (i > 0 && recs[i - 1].kind == RecordKind::Triton) ||
                                  (j < recs.size() && recs[j].kind == RecordKind::Triton);
      if (hashing && next_to_kernel) {
        for (std::size_t k = i; k < j; ++k) recs[k].hash_noise = true;
      }
      i = j;
    }
  }

  // ---- Triton launches --------------------------------------------------------------------------

  void triton_line(std::string_view body, std::uint32_t depth, std::int64_t ln) {
    const auto paren = body.find('(');
    if (paren == std::string_view::npos || body.back() != ')') {
      issue(ln, "a [triton] line cut short");
      return;
    }
    const std::string_view name = trim(body.substr(0, paren));
    arena_.clear();
    bool ok = true;
    const std::uint32_t args = parse_py_args(body.substr(paren + 1, body.size() - paren - 2), arena_, ok);
    if (!ok) {
      issue(ln, "unreadable [triton] arguments");
      return;
    }
    OpRecord r = begin_record(RecordKind::Triton, name, depth, ln);
    r.first_arg = static_cast<std::uint32_t>(log_.tensors.size());
    bool mismatch = false;
    const auto& n = arena_.nodes;
    for (std::uint32_t c = args + 1; c < n[args].end; c = n[c].end)
      zip(c, kNone, n[c].key.empty() ? 0 : log_.strings.intern(n[c].key), mismatch);
    r.arg_count = static_cast<std::uint32_t>(log_.tensors.size()) - r.first_arg;
    r.first_out = static_cast<std::uint32_t>(log_.tensors.size());
    commit(r);
    triton_open_ = true;
  }

  /// `{in_ptr0: 123, out_ptr0: 456}` after a [triton] line: pre-kernel hashes go to the
  /// arguments; post-kernel hashes make the outputs (the arguments the kernel writes:
  /// out_ptr*, in_out_ptr*; all of them when none is so named).
  void kernel_hashes(std::string_view dict_text, std::int64_t ln, bool pre) {
    if (!triton_open_ || log_.records.empty() || log_.records.back().kind != RecordKind::Triton) {
      issue(ln, "kernel hashes with no [triton] line before them");
      return;
    }
    arena_.clear();
    bool ok = true;
    const std::uint32_t d = parse_py_value(dict_text, arena_, ok);
    if (!ok || arena_.nodes[d].kind != PyNode::Kind::Dict) {
      issue(ln, "unreadable kernel hashes");
      return;
    }
    OpRecord& r = log_.records.back();
    const auto& n = arena_.nodes;
    bool mismatch = false;
    auto hash_of = [&](std::string_view arg) -> std::uint32_t {
      for (std::uint32_t k = d + 1; k < n[d].end;) {
        const std::uint32_t v = n[k].end;
        if (n[k].text == arg) return v;
        k = n[v].end;
      }
      return kNone;
    };
    if (pre) {
      for (std::uint32_t i = 0; i < r.arg_count; ++i) {
        TensorRef& t = log_.tensors[r.first_arg + i];
        if (const auto h = hash_of(log_.str(t.name)); h != kNone) add_hash_group(h, t, mismatch);
      }
      r.has_input_hashes = true;
    } else {
      if (r.out_count != 0 || r.first_out != log_.tensors.size()) {
        issue(ln, "a second post-kernel hashes line");
        return;
      }
      bool any_out = false;
      for (std::uint32_t i = 0; i < r.arg_count; ++i)
        any_out = any_out || contains(log_.str(log_.tensors[r.first_arg + i].name), "out");
      for (std::uint32_t i = 0; i < r.arg_count; ++i) {
        TensorRef t = log_.tensors[r.first_arg + i];
        if (any_out && !contains(log_.str(t.name), "out")) continue;
        t.hash_count = 0;
        if (const auto h = hash_of(log_.str(t.name)); h != kNone) add_hash_group(h, t, mismatch);
        log_.tensors.push_back(t);
      }
      r.out_count = static_cast<std::uint32_t>(log_.tensors.size()) - r.first_out;
      triton_open_ = false;
    }
    if (mismatch) issue(ln, "kernel hashes of an unexpected shape; not used");
    flush_spec_issue(ln);
  }

  void flush_spec_issue(std::int64_t ln) {
    if (pending_spec_issue_ && !spec_issue_reported_) {
      issue(ln, spec_conflict_problem_);
      spec_issue_reported_ = true;
    }
    pending_spec_issue_ = false;
  }

  // ---- dump_tensor_hashes -------------------------------------------------------------------------

  void dump_line(std::string_view line, std::int64_t ln) {
    const std::string_view body = trim(line);
    if (body.empty()) return;
    if (starts_with(body, kDumpHeader)) {
      std::int64_t n = 0;
      if (parse_py_int64(trim(body.substr(kDumpHeader.size())), n)) dump_declared_ = n;
      return;
    }
    if (body.find_first_not_of('=') == std::string_view::npos) return;
    if (body[0] == '[' && body.back() == ']') {
      dump_block(body.substr(1, body.size() - 2), ln);
      return;
    }
    if (!dump_open_) {
      issue(ln, "a dump_tensor_hashes line outside a [module/op] block");
      return;
    }
    OpRecord& r = log_.records.back();
    if (starts_with(body, "Call type:")) {
      if (trim(body.substr(10)) == "triton kernel") r.kind = RecordKind::Triton;
    } else if (starts_with(body, "Call index:")) {
      // the index in DebugMode's call list (annotations included): ours counts records
    } else if (starts_with(body, "Call depth:")) {
      std::int64_t d = 0;
      if (parse_py_int64(trim(body.substr(11)), d) && d >= 0) r.depth = static_cast<std::uint32_t>(d);
    } else if (starts_with(body, "Input hashes:")) {
      dump_hashes(body.substr(13), ln, true);
    } else if (starts_with(body, "Output hashes:")) {
      dump_hashes(body.substr(14), ln, false);
    } else {
      issue(ln, "not a dump_tensor_hashes line");
    }
  }

  /// `[module/op_K_name]`: the module context, the op's count in it, the call's name.
  void dump_block(std::string_view title, std::int64_t ln) {
    const auto slash = title.rfind("/op_");
    if (slash == std::string_view::npos) {
      issue(ln, "a [block] title without /op_");
      dump_open_ = false;
      return;
    }
    const std::string_view module = title.substr(0, slash);
    std::string_view rest = title.substr(slash + 4);
    const auto us = rest.find('_');
    std::int64_t k = 0;
    if (us == std::string_view::npos || !parse_py_int64(rest.substr(0, us), k)) {
      issue(ln, "a [block] title without op_<n>_<name>");
      dump_open_ = false;
      return;
    }
    const std::string_view name = rest.substr(us + 1);
    modules_.clear();
    if (module != "<none>") modules_.push_back({0, log_.strings.intern(module)});
    OpRecord r = begin_record(contains(name, "::") ? RecordKind::Op : RecordKind::TorchFunction, name, 1, ln);
    r.first_arg = r.first_out = static_cast<std::uint32_t>(log_.tensors.size());
    r.output_hash_unreliable = unreliable_collective(name);
    commit(r);
    dump_open_ = true;
    dump_section_ = 0;
  }

  /// `path=json, path=json`: one tensor per entry, appended as the block's inputs, then outputs.
  void dump_hashes(std::string_view list, std::int64_t ln, bool input) {
    OpRecord& r = log_.records.back();
    if (input ? dump_section_ > 0 : dump_section_ > 1) {
      issue(ln, "hash lines out of order in a block");
      return;
    }
    dump_section_ = input ? 1 : 2;
    bool mismatch = false;
    std::string_view s = trim(list);
    while (!s.empty()) {
      const auto eq = s.find('=');
      if (eq == std::string_view::npos) {
        mismatch = true;
        break;
      }
      const std::string_view path = trim(s.substr(0, eq));
      s.remove_prefix(eq + 1);
      // the JSON value runs to the next top-level ", "
      std::size_t i = 0;
      int depth = 0;
      bool quoted = false;
      for (; i < s.size(); ++i) {
        const char c = s[i];
        if (quoted) {
          if (c == '\\')
            ++i;
          else if (c == '"')
            quoted = false;
        } else if (c == '"') {
          quoted = true;
        } else if (c == '[' || c == '{') {
          ++depth;
        } else if (c == ']' || c == '}') {
          --depth;
        } else if (c == ',' && depth == 0) {
          break;
        }
      }
      const std::string_view value = trim(s.substr(0, i));
      s.remove_prefix(std::min(i + 1, s.size()));
      s = trim(s);
      arena_.clear();
      bool ok = true;
      const std::uint32_t v = parse_py_value(value, arena_, ok);
      if (!ok) {
        mismatch = true;
        continue;
      }
      TensorRef t;
      t.name = log_.strings.intern(path);
      add_hash_group(v, t, mismatch);
      log_.tensors.push_back(t);
    }
    const auto count = static_cast<std::uint32_t>(log_.tensors.size());
    if (input) {
      r.arg_count = count - r.first_arg;
      r.first_out = count;
      r.has_input_hashes = true;
    } else {
      r.out_count = count - r.first_out;
    }
    if (mismatch) issue(ln, "unreadable hash entries; not used");
    flush_spec_issue(ln);
  }

  void finish_dump(std::int64_t ln) {
    if (dump_declared_ >= 0 && static_cast<std::int64_t>(log_.records.size()) < dump_declared_) {
      issue(ln, "the header declares " + std::to_string(dump_declared_) + " ops, " +
                    std::to_string(log_.records.size()) + " were read (file cut short?)");
      log_.truncated = true;
    }
  }

  std::string_view text_;
  OpLog log_;
  PyArena arena_;
  std::vector<std::string_view> names_;
  std::unordered_map<std::uint32_t, std::uint32_t> source_index_;  // interned header -> sources index
  std::vector<std::pair<std::uint32_t, std::uint32_t>> modules_;   // (depth, module string id)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> calls_;     // (depth, record) of open calls
  std::uint32_t source_ = 0;
  std::int64_t step_given_ = 0;
  std::int64_t step_ = 1;
  std::int64_t last_step_ = -1;
  std::uint32_t index_ = 0;
  Phase phase_ = Phase::Forward;
  std::pair<std::uint32_t, std::uint32_t> loop_{0, 0};  // (file, function) that called backward
  bool sources_seen_ = false;
  bool triton_open_ = false;
  bool spec_conflict_ = false;
  bool pending_spec_issue_ = false;
  bool spec_issue_reported_ = false;
  std::string spec_conflict_problem_;
  std::string hash_order_;
  bool dump_open_ = false;
  int dump_section_ = 0;
  std::int64_t dump_declared_ = -1;
};

}  // namespace

OpLog parse_debugmode_text(std::string_view text, const std::string& source, int rank, std::int64_t step) {
  return Reader(text, source, rank, step).run();
}

OpLog read_debugmode_log(const std::string& path, int rank, std::int64_t step) {
  const MappedFile file(path);
  return parse_debugmode_text(file.text(), path, rank, step);
}

bool looks_like_debugmode(std::string_view head) {
  while (!head.empty()) {
    const auto nl = head.find('\n');
    const std::string_view l = trim(head.substr(0, nl));
    if (!l.empty()) {
      if (starts_with(l, "# File: ") || starts_with(l, "[nn.Mod") || starts_with(l, "[triton] ") ||
          starts_with(l, "[annotate] ") || starts_with(l, "[record function] ") ||
          starts_with(l, kDumpHeader))
        return true;
      const auto paren = l.find('(');
      if (paren == std::string_view::npos) return false;
      const std::string_view name = l.substr(0, paren);
      return valid_op_name(name) && contains(name, "::");
    }
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  return false;
}

}  // namespace gparity::model::ops
