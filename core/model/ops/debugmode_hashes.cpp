// The DebugMode reader's hashes (debugmode_reader.hpp): `hash` / `input_hash` trees zipped with
// the tensors they belong to, one hash-function spec per log, Triton launches with their pre- and
// post-kernel hashes, and nightly's dump_tensor_hashes blocks.

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <span>
#include <tuple>
#include <unordered_set>

#include "core/model/ops/debugmode_reader.hpp"

namespace gparity::model::ops::debugmode_detail {

void Reader::zip_args(std::uint32_t args, std::uint32_t input_hash, bool& mismatch) {
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

void Reader::zip(std::uint32_t v, std::uint32_t h, std::uint32_t name, bool& mismatch) {
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

void Reader::add_hash_group(std::uint32_t h, TensorRef& ref, bool& mismatch) {
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

std::string_view Reader::hash_value(const PyNode& node, HashValue& hv) {
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

bool Reader::check_spec() {
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

namespace {

/// A tensor's identity inside a hashing run: its DebugMode id, or where the log has no ids, its
/// dtype, shape and hashes.
struct NoiseKey {
  std::int64_t id = -1;
  std::uint32_t dtype = 0, shape = 0;
  std::vector<HashValue> hashes;
  friend bool operator==(const NoiseKey&, const NoiseKey&) = default;
};

NoiseKey noise_key(const OpLog& log, const TensorRef& t) {
  NoiseKey k{t.id, t.dtype, t.shape, {}};
  if (t.id < 0)
    for (std::uint32_t i = 0; i < t.hash_count; ++i) k.hashes.push_back(log.hash(t, i));
  return k;
}

/// Whether `t` is one of a launch's tensor arguments as it hashed them: same dtype, shape and
/// every hash (the pre-kernel ones before the launch, the post-kernel ones after it).
bool is_launch_argument(const OpLog& log, const TensorRef& t, std::span<const TensorRef> launch_args) {
  if (!t.hashed()) return false;
  return std::any_of(launch_args.begin(), launch_args.end(), [&](const TensorRef& a) {
    if (a.dtype != t.dtype || a.shape != t.shape || a.hash_count != t.hash_count) return false;
    for (std::uint32_t i = 0; i < a.hash_count; ++i)
      if (!(log.hash(a, i) == log.hash(t, i))) return false;
    return true;
  });
}

/// A record that may belong to a hashing run: a dispatched op or a torch function call
/// (record_torchfunction logs the hashing's own torch calls) of the launch's step.
bool may_hash(const OpRecord& r, const OpRecord& launch) {
  return (r.kind == RecordKind::Op || r.kind == RecordKind::TorchFunction) && r.step == launch.step;
}

/// Whether every tensor argument of `r` is either one of the launch's arguments as hashed
/// (`hashed`, `also`) or made by the run so far (`made`); if so, `r`'s outputs join `made`.
bool extends_run(const OpLog& log, const OpRecord& r, std::span<const TensorRef> hashed,
                 std::span<const TensorRef> also, std::vector<NoiseKey>& made) {
  for (std::uint32_t i = 0; i < r.arg_count; ++i) {
    const TensorRef& t = log.arg(r, i);
    if (is_launch_argument(log, t, hashed) || is_launch_argument(log, t, also)) continue;
    if (std::find(made.begin(), made.end(), noise_key(log, t)) == made.end()) return false;
  }
  for (std::uint32_t i = 0; i < r.out_count; ++i) made.push_back(noise_key(log, log.out(r, i)));
  return true;
}

/// A value as a launch reads it: dtype, shape and hashes (launch arguments carry no ids).
/// (Each hash as its kind and bits, in order.)
using ArgValue = std::tuple<std::uint32_t, std::uint32_t, std::vector<std::pair<int, std::uint64_t>>>;

ArgValue arg_value(const OpLog& log, const TensorRef& t) {
  std::vector<std::pair<int, std::uint64_t>> h;
  for (std::uint32_t i = 0; i < t.hash_count; ++i)
    h.emplace_back(static_cast<int>(log.hash(t, i).kind), log.hash(t, i).bits);
  return {t.dtype, t.shape, std::move(h)};
}

/// Hashes that tell nothing apart (every one 0: a constant or empty tensor).
bool weak_value(const ArgValue& v) {
  const auto& h = std::get<2>(v);
  return std::all_of(h.begin(), h.end(), [](const auto& x) { return x.second == 0; });
}

}  // namespace

void Reader::mark_hash_noise() {
  // DebugMode hashes a launch's tensor arguments with hash_fn before it (pre-kernel hashes) and
  // after it (post-kernel hashes) while the mode records: whatever hash_fn holds, each run of ops
  // that reads only those arguments (as hashed) or what the run itself made, right next to the
  // [triton] line, is DebugMode's, not the program's. An op whose output the program reads later
  // is the program's: such ops are given back below.
  auto& recs = log_.records;
  std::vector<NoiseKey> made;
  for (std::size_t t = 0; t < recs.size(); ++t) {
    const OpRecord& launch = recs[t];
    if (launch.kind != RecordKind::Triton) continue;
    const std::span<const TensorRef> pre(log_.tensors.data() + launch.first_arg, launch.arg_count);
    const std::span<const TensorRef> post(log_.tensors.data() + launch.first_out, launch.out_count);
    // Before: the longest run of qualifying records that ends at the launch (found forward, since
    // a chain's records read what earlier ones of it made).
    std::size_t from = t;
    while (from > 0 && t - from < kNoiseLookback && may_hash(recs[from - 1], launch)) --from;
    std::size_t run_start = from;
    made.clear();
    for (std::size_t k = from; k < t; ++k) {
      if (!extends_run(log_, recs[k], pre, {}, made)) {
        run_start = k + 1;
        made.clear();
      }
    }
    for (std::size_t k = run_start; k < t; ++k) recs[k].hash_noise = true;
    // After: the run that starts right after it; the post-kernel hashes name what it wrote, and the
    // arguments it only read keep their pre-kernel hashes (the same values).
    made.clear();
    for (std::size_t k = t + 1; k < recs.size() && may_hash(recs[k], launch); ++k) {
      if (!extends_run(log_, recs[k], post, pre, made)) break;
      recs[k].hash_noise = true;
    }
  }
  give_back_program_ops();
}

void Reader::give_back_program_ops() {
  // An output the program reads later (a record outside the runs, by id; a launch, whose
  // arguments have no id, by value) is the program's: its record leaves the run, and so do those
  // that made what it read. Repeated until nothing changes.
  auto& recs = log_.records;
  std::set<ArgValue> launch_reads;
  for (const auto& r : recs)
    if (r.kind == RecordKind::Triton)
      for (std::uint32_t i = 0; i < r.arg_count; ++i)
        if (log_.arg(r, i).hashed()) launch_reads.insert(arg_value(log_, log_.arg(r, i)));
  auto read_by_launch = [&](const TensorRef& t) {
    if (!t.hashed()) return false;
    const ArgValue v = arg_value(log_, t);
    return !weak_value(v) && launch_reads.contains(v);
  };
  bool changed = true;
  while (changed) {
    changed = false;
    std::unordered_set<std::int64_t> read_by_program;  // tensor ids read outside the runs
    for (const auto& r : recs)
      if (!r.hash_noise)
        for (std::uint32_t i = 0; i < r.arg_count; ++i)
          if (const auto id = log_.arg(r, i).id; id >= 0) read_by_program.insert(id);
    for (auto& r : recs) {
      for (std::uint32_t i = 0; i < r.out_count && r.hash_noise; ++i) {
        const TensorRef& o = log_.out(r, i);
        if ((o.id >= 0 && read_by_program.contains(o.id)) || read_by_launch(o)) {
          r.hash_noise = false;
          changed = true;
        }
      }
    }
  }
}

void Reader::triton_line(std::string_view body, std::uint32_t depth, std::int64_t ln) {
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

void Reader::kernel_hashes(std::string_view dict_text, std::int64_t ln, bool pre) {
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

void Reader::flush_spec_issue(std::int64_t ln) {
  if (pending_spec_issue_ && !spec_issue_reported_) {
    issue(ln, spec_conflict_problem_);
    spec_issue_reported_ = true;
  }
  pending_spec_issue_ = false;
}

void Reader::dump_line(std::string_view line, std::int64_t ln) {
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

void Reader::dump_block(std::string_view title, std::int64_t ln) {
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

void Reader::dump_hashes(std::string_view list, std::int64_t ln, bool input) {
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

void Reader::finish_dump(std::int64_t ln) {
  if (dump_declared_ >= 0 && static_cast<std::int64_t>(log_.records.size()) < dump_declared_) {
    issue(ln, "the header declares " + std::to_string(dump_declared_) + " ops, " +
                  std::to_string(log_.records.size()) + " were read (file cut short?)");
    log_.truncated = true;
  }
}

}  // namespace gparity::model::ops::debugmode_detail
