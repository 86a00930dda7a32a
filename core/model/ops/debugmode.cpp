#include "core/model/ops/debugmode.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/model/base/mapped_file.hpp"
#include "core/model/ops/debugmode_reader.hpp"

namespace gparity::model::ops {

namespace debugmode_detail {

namespace {

bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == ':' || c == '<' || c == '>';
}

}  // namespace

/// An op name as DebugMode writes it: "aten::add.Tensor", "torch.mm", "redistribute_input".
bool valid_op_name(std::string_view n) noexcept {
  if (n.empty()) return false;
  const char c = n[0];
  if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return false;
  return std::all_of(n.begin(), n.end(), is_name_char);
}

std::size_t call_name_end(std::string_view body) noexcept {
  if (body.empty() || body[0] != '<') return body.find('(');
  // A repr: `<method 'sum' of 'torch._C.TensorBase' objects>`; quoted names may hold brackets.
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '<') {
      ++depth;
    } else if (c == '>' && --depth == 0) {
      return i + 1 < body.size() && body[i + 1] == '(' ? i + 1 : std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

bool torch_function_line(std::string_view trimmed) noexcept {
  const auto paren = call_name_end(trimmed);
  if (paren == std::string_view::npos || paren == 0) return false;
  const std::string_view name = trimmed.substr(0, paren);
  if (name[0] == '<') return true;
  // `module.name`: a dot, never a namespace (`aten::mm` is a dispatched op).
  return valid_op_name(name) && contains(name, ".") && !contains(name, "::");
}

bool backward_entry(std::string_view torch_function) noexcept {
  return torch_function == "torch._tensor.backward" || torch_function == "torch.autograd.backward" ||
         torch_function == "torch.autograd.grad";
}

/// A collective whose output DebugMode hashes at dispatch, before it completed: functional
/// collectives (the wait_tensor holds the value) and c10d's Work-returning ones.
bool unreliable_collective(std::string_view op) noexcept {
  if (!starts_with(op, "_c10d_functional::") && !starts_with(op, "c10d_functional::") &&
      !starts_with(op, "c10d::"))
    return false;
  return !contains(op, "wait_tensor");
}

namespace {

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

}  // namespace

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

// ---- the reader: debug_string lines, calls, sources and phases --------------------------------------

OpLog Reader::run() {
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

std::string_view Reader::first_line(std::string_view t) {
  while (!t.empty()) {
    const auto nl = t.find('\n');
    const std::string_view l = t.substr(0, nl);
    if (!trim(l).empty()) return l;
    if (nl == std::string_view::npos) break;
    t.remove_prefix(nl + 1);
  }
  return {};
}

void Reader::text_line(std::string_view line, std::int64_t ln) {
  std::size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;
  const std::string_view body = trim(line.substr(indent));
  if (body.empty()) return;
  const auto depth = static_cast<std::uint32_t>(indent >= 2 ? (indent - 2) / 2 : 0);
  // Calls, annotations and source lines sit at their call's depth; kernel hashes and output
  // placements belong to the line above them.
  const bool trailer = (body[0] == '#' && !starts_with(body, "# File: ")) || starts_with(body, "-> output:");
  if (!trailer) leave_calls(depth);
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

void Reader::comment_line(std::string_view body, std::int64_t ln) {
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

void Reader::source_line(std::string_view s, std::int64_t ln) {
  const auto code_pos = s.find(", code: ");
  const std::string_view head = code_pos == std::string_view::npos ? s : s.substr(0, code_pos);
  const std::string_view code =
      code_pos == std::string_view::npos ? std::string_view() : s.substr(code_pos + 8);
  const auto in_pos = head.rfind(" in ");
  const std::string_view loc = in_pos == std::string_view::npos ? head : head.substr(0, in_pos);
  const std::string_view fn = in_pos == std::string_view::npos ? std::string_view() : head.substr(in_pos + 4);
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

bool Reader::calls_backward(std::string_view code) noexcept {
  return contains(code, ".backward(") || starts_with(code, "backward(") || contains(code, "autograd.grad(");
}

void Reader::phase_on_source(const SourceLoc& s) {
  sources_seen_ = true;
  // Inside a backward torch function every op is the backward's, whatever frame it shows
  // (backward ops show their forward's, which may be the training loop's own function).
  if (backward_depth_ >= 0) return;
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

void Reader::enter_torch_function(std::string_view name, std::uint32_t depth) {
  if (backward_depth_ >= 0 || !backward_entry(name)) return;
  backward_depth_ = depth;
  phase_ = Phase::Backward;
}

void Reader::leave_calls(std::uint32_t depth) {
  if (backward_depth_ < 0 || static_cast<std::int64_t>(depth) > backward_depth_) return;
  backward_depth_ = -1;
  // The gradients are ready: what follows is their sync and the optimizer. With source lines,
  // the training loop's next line says so (phase_on_source), as it does without torch functions.
  if (!sources_seen_) phase_ = Phase::Optimizer;
}

void Reader::next_step() {
  phase_ = Phase::Forward;
  if (step_given_ > 0) return;  // one step per file: a later forward stays in it
  ++step_;
}

void Reader::annotation_line(std::string_view body, std::uint32_t depth, std::int64_t ln) {
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

void Reader::pop_modules(std::uint32_t depth) {
  while (!modules_.empty() && modules_.back().first >= depth) modules_.pop_back();
  while (!calls_.empty() && calls_.back().first >= depth) calls_.pop_back();
}

void Reader::call_line(std::string_view body, std::uint32_t depth, std::int64_t ln) {
  // Whatever this line holds, it sits at `depth`: the calls and modules open at that depth or
  // deeper have ended, so a damaged line never lends its children to an earlier call.
  pop_modules(depth);
  const auto paren = call_name_end(body);
  if (paren == std::string_view::npos) {
    issue(ln, body[0] == '<' ? "not a DebugMode call line (a <...> name without '(' after it)"
                             : "not a DebugMode call line (no '(')");
    return;
  }
  std::string_view name = trim(body.substr(0, paren));
  RecordKind kind = RecordKind::Op;
  if (starts_with(name, "redistribute_input")) {
    name = "redistribute_input";
    kind = RecordKind::Redistribute;
  } else if (name[0] == '<') {
    kind = RecordKind::TorchFunction;  // str() of a callable without module and name: Tensor.sum
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

  if (kind == RecordKind::TorchFunction) enter_torch_function(name, depth);
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
  if (out_node != kNone) zip_outputs(name, out_node, hash_node, mismatch);
  r.out_count = static_cast<std::uint32_t>(log_.tensors.size()) - r.first_out;
  mark_unhashed(r);
  r.output_hash_unreliable = unreliable_collective(name);
  if (mismatch) issue(ln, "hashes do not match the tensors' structure; unmatched hashes not used");
  flush_spec_issue(ln);
  commit(r);
}

std::uint32_t Reader::collective_group(std::string_view op, std::uint32_t args) {
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

void Reader::find_hash_keys(std::uint32_t dict, std::uint32_t& hash, std::uint32_t& input_hash) {
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

OpRecord Reader::begin_record(RecordKind kind, std::string_view name, std::uint32_t depth, std::int64_t ln) {
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

void Reader::zip_outputs(std::string_view op, std::uint32_t out, std::uint32_t hash, bool& mismatch) {
  if (allocates_uninitialized(op)) {
    // Uninitialized memory: DebugMode hashes whatever bytes the block held (unless deterministic
    // mode filled them), which no other run need share. No value, as the recorders mark it.
    const auto first = log_.tensors.size();
    zip(out, hash, 0, mismatch);
    for (auto t = first; t < log_.tensors.size(); ++t) {
      log_.tensors[t].unhashed = Unhashed::Uninitialized;
      log_.tensors[t].hash_count = 0;
    }
    return;
  }
  const auto returns = attention_returns(op);
  const auto& n = arena_.nodes;
  if (returns.empty() || !n[out].container() || arena_.child_count(out) != returns.size()) {
    zip(out, hash, 0, mismatch);
    return;
  }
  // An attention op: its outputs one by one, to mark its RNG state and debug outputs by their
  // return's position (DebugMode hashes them; on CUDA with dropout 0 they may be uninitialized).
  const bool pair = hash != kNone && n[hash].container() && arena_.child_count(hash) == returns.size();
  if (hash != kNone && !pair && n[hash].kind != PyNode::Kind::None) mismatch = true;
  std::uint32_t hc = pair ? hash + 1 : kNone;
  std::size_t i = 0;
  for (std::uint32_t c = out + 1; c < n[out].end; c = n[c].end, ++i) {
    const auto first = log_.tensors.size();
    zip(c, hc, 0, mismatch);
    if (hc != kNone) hc = n[hc].end;
    const Unhashed why = unhashed_return(returns[i]);
    for (auto t = first; t < log_.tensors.size() && why != Unhashed::No; ++t) {
      log_.tensors[t].unhashed = why;
      log_.tensors[t].hash_count = 0;
    }
  }
}

void Reader::mark_unhashed(const OpRecord& r) {
  // An RNG state output read later (the attention backward's philox_seed, philox_offset) is the
  // same bytes: its input hash is no value either. Ids are a step's (one DebugMode per step).
  if (r.step != unhashed_step_) {
    unhashed_ids_.clear();
    unhashed_step_ = r.step;
  }
  for (std::uint32_t i = 0; i < r.arg_count; ++i) {
    TensorRef& t = log_.tensors[r.first_arg + i];
    if (t.id < 0) continue;
    if (const auto it = unhashed_ids_.find(t.id); it != unhashed_ids_.end()) {
      t.unhashed = it->second;
      t.hash_count = 0;
    }
  }
  for (std::uint32_t i = 0; i < r.out_count; ++i) {
    const TensorRef& t = log_.tensors[r.first_out + i];
    if (t.id < 0) continue;
    if (t.unhashed != Unhashed::No) {
      unhashed_ids_[t.id] = t.unhashed;
    } else {
      unhashed_ids_.erase(t.id);
    }
  }
}

void Reader::commit(OpRecord& r) {
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

}  // namespace debugmode_detail

using namespace debugmode_detail;

OpLog parse_debugmode_text(std::string_view text, const std::string& source, int rank, std::int64_t step) {
  return Reader(text, source, rank, step).run();
}

OpLog read_debugmode_log(const std::string& path, int rank, std::int64_t step) {
  const MappedFile file(path);
  return parse_debugmode_text(file.text(), path, rank, step);
}

namespace {

/// A line only a DebugMode log starts with.
bool debugmode_only_line(std::string_view l) {
  if (starts_with(l, "# File: ") || starts_with(l, "[nn.Mod") || starts_with(l, "[triton] ") ||
      starts_with(l, "[annotate] ") || starts_with(l, "[record function] ") || starts_with(l, kDumpHeader))
    return true;
  const auto paren = l.find('(');
  if (paren == std::string_view::npos) return false;
  const std::string_view name = l.substr(0, paren);
  return valid_op_name(name) && contains(name, "::");
}

}  // namespace

bool looks_like_debugmode(std::string_view head) {
  // A torch function (`torch.mm(...)`) or run_graph's `[node] ...` can open a log, but Python
  // text could start so too: they count when a line only DebugMode writes follows them.
  while (!head.empty()) {
    const auto nl = head.find('\n');
    const std::string_view l = trim(head.substr(0, nl));
    if (!l.empty()) {
      if (debugmode_only_line(l)) return true;
      if (!torch_function_line(l) && !starts_with(l, "[node] ")) return false;
    }
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  return false;
}

}  // namespace gparity::model::ops
