#include "core/model/ops/op_records.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/model/base/mapped_file.hpp"
#include "core/model/ops/kernel_launch.hpp"

namespace gparity::model::ops {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string head_of(const fs::path& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string buf(bytes, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<std::size_t>(in.gcount()));
  return buf;
}

/// 16 hex digits -> the 64-bit value.
bool parse_hex64(const json& j, std::uint64_t& out) {
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  if (s.empty() || s.size() > 16) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& source, int rank) : text_(text) {
    log_.path = source;
    log_.rank = rank;
    log_.format = "gparity op records";
    log_.sources.emplace_back();
    log_.hash_spec.functions = {"xxh3", "shard"};
  }

  OpLog run() {
    std::int64_t line_no = 0;
    std::size_t pos = 0;
    bool any_xxh3 = false;
    while (pos < text_.size()) {
      ++line_no;
      const void* nl = std::memchr(text_.data() + pos, '\n', text_.size() - pos);
      const bool complete = nl != nullptr;
      const std::size_t end =
          complete ? static_cast<std::size_t>(static_cast<const char*>(nl) - text_.data()) : text_.size();
      std::string_view line = text_.substr(pos, end - pos);
      pos = complete ? end + 1 : text_.size();
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) {
        if (!complete) {
          log_.truncated = true;
          log_.issues.push_back({line_no, "truncated last line (no newline, does not parse)"});
        } else {
          log_.issues.push_back({line_no, "not a JSON object"});
        }
        continue;
      }
      const auto type = j.find("type");
      if (type == j.end() || !type->is_string() || type->get_ref<const std::string&>() != "op") continue;
      std::string problem;
      if (!record(j, line_no, problem, any_xxh3)) log_.issues.push_back({line_no, "op record: " + problem});
    }
    // The shard hash of spec v2 is another function (docs/hashing.md): never compared with v1's.
    const std::string shard = spec_ == 2 ? "shard_v2" : "shard";
    log_.hash_spec.functions = {"xxh3", shard};
    if (!any_xxh3) {
      // A run hashed with the shard-invariant hash alone (hashes="shard").
      log_.hash_spec.functions = {shard};
      for (auto& t : log_.tensors)
        if (t.hash_count == 2) {
          log_.hashes[t.first_hash] = log_.hashes[t.first_hash + 1];
          t.hash_count = 1;
        }
    }
    std::sort(log_.steps.begin(), log_.steps.end());
    log_.steps.erase(std::unique(log_.steps.begin(), log_.steps.end()), log_.steps.end());
    log_.bytes = text_.size();
    return std::move(log_);
  }

 private:
  bool tensor(const json& t, bool arg, std::string& problem, bool& any_xxh3) {
    if (!t.is_object()) return problem = "a tensor is not an object", false;
    TensorRef r;
    const auto id = t.find("id");
    if (id == t.end() || !id->is_number_integer() || id->get<std::int64_t>() < 0)
      return problem = "a tensor without a non-negative \"id\"", false;
    r.id = id->get<std::int64_t>();
    const auto dt = t.find("dtype");
    if (dt == t.end() || !dt->is_string())
      return problem = "tensor " + std::to_string(r.id) + " without \"dtype\"", false;
    r.dtype = log_.strings.intern(dt->get_ref<const std::string&>());
    const auto sh = t.find("shape");
    if (sh == t.end() || !sh->is_array())
      return problem = "tensor " + std::to_string(r.id) + " without \"shape\"", false;
    std::string shape;
    std::int64_t numel = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        return problem = "tensor " + std::to_string(r.id) + ": a size is not a non-negative integer", false;
      const auto n = d.get<std::int64_t>();
      shape += (shape.empty() ? "" : ", ") + std::to_string(n);
      numel = (numel > 0 && n > 0 && numel > (std::int64_t{1} << 62) / n) ? -1 : (numel < 0 ? -1 : numel * n);
    }
    r.shape = log_.strings.intern(shape);
    r.numel = numel;
    std::uint64_t xxh = 0, shard = 0;
    const auto x = t.find("xxh3");
    const auto s = t.find("shard");
    const bool has_x = x != t.end(), has_s = s != t.end();
    if ((has_x && !parse_hex64(*x, xxh)) || (has_s && !parse_hex64(*s, shard)))
      return problem = "tensor " + std::to_string(r.id) + ": a hash is not 16 hex digits", false;
    if (has_s) {
      r.first_hash = static_cast<std::uint32_t>(log_.hashes.size());
      // Both slots are always present so positions match the spec; a run without XXH3 is
      // folded to {"shard"} at the end.
      log_.hashes.push_back({HashValue::Kind::Int, has_x ? xxh : 0});
      log_.hashes.push_back({HashValue::Kind::Int, shard});
      r.hash_count = 2;
      any_xxh3 = any_xxh3 || has_x;
    } else if (has_x) {
      return problem = "tensor " + std::to_string(r.id) + ": \"xxh3\" without \"shard\"", false;
    }
    if (const auto u = t.find("unhashed"); u != t.end()) {
      // RNG state, a debug output, an allocation's result (docs/trace-format.md, "op"): no value.
      const std::string why = u->is_string() ? u->get<std::string>() : "";
      r.unhashed = unhashed_from_name(why);
      if (r.unhashed == Unhashed::No)
        return problem = "tensor " + std::to_string(r.id) +
                         ": \"unhashed\" is not \"rng_state\", \"debug\", \"uninitialized\" or \"captured\"",
               false;
      if (has_s) return problem = "tensor " + std::to_string(r.id) + ": \"unhashed\" with hashes", false;
    }
    if (const auto n = t.find("name"); n != t.end() && n->is_string())
      r.name = log_.strings.intern(n->get_ref<const std::string&>());  // a kernel argument's
    if (const auto role = t.find("role"); role != t.end() && role->is_string())
      r.role = arg_role_from_name(role->get_ref<const std::string&>());  // another text: by its name
    if (const auto v = t.find("view"); v != t.end()) {
      const auto b = v->is_object() ? v->find("base") : v->end();
      if (!v->is_object() || b == v->end() || !b->is_number_integer() || b->get<std::int64_t>() < 0)
        return problem = "tensor " + std::to_string(r.id) + ": \"view\" without a non-negative \"base\"",
               false;
      if (has_s) return problem = "tensor " + std::to_string(r.id) + ": a view with hashes", false;
      if (arg) {
        view_arg(r, b->get<std::int64_t>());
      } else {
        ++views_;
      }
    } else if (has_s) {
      last_hashed_[r.id] = r;
    }
    pending_.push_back(r);
    return true;
  }

  /// A view read by an op is read as its base (issue 24: a view has no value of its own): the
  /// base's id, so that the op's input is the base's producer's output, and the base's last
  /// hashes where the view has the base's dtype and size (a transpose, a reshape), so that the
  /// input's value is looked up as the base's.
  void view_arg(TensorRef& r, std::int64_t base) {
    r.id = base;
    const auto it = last_hashed_.find(base);
    if (it == last_hashed_.end() || it->second.dtype != r.dtype || it->second.numel != r.numel || r.numel < 0)
      return;
    r.first_hash = it->second.first_hash;
    r.hash_count = it->second.hash_count;
  }

  bool record(const json& j, std::int64_t line_no, std::string& problem, bool& any_xxh3) {
    OpRecord r;
    r.line = line_no;
    const auto step = j.find("step");
    if (step == j.end() || !step->is_number_integer() || step->get<std::int64_t>() < 0)
      return problem = "no non-negative integer \"step\"", false;
    r.step = step->get<std::int64_t>();
    const auto op = j.find("op");
    if (op == j.end() || !op->is_string() || op->get_ref<const std::string&>().empty())
      return problem = "no \"op\"", false;
    r.op = log_.strings.intern(op->get_ref<const std::string&>());
    const auto phase = j.find("phase");
    const std::string ph = phase != j.end() && phase->is_string() ? phase->get<std::string>() : "";
    r.phase = ph == "forward"     ? Phase::Forward
              : ph == "backward"  ? Phase::Backward
              : ph == "optimizer" ? Phase::Optimizer
                                  : Phase::Unknown;
    if (const auto m = j.find("module"); m != j.end() && m->is_string())
      r.module = log_.strings.intern(m->get_ref<const std::string&>());
    if (const auto s = j.find("source"); s != j.end() && s->is_object()) r.source = source(*s);
    if (!shard_spec(j, line_no, problem)) return false;
    pending_.clear();
    views_ = 0;
    std::uint32_t args = 0, outs = 0;
    for (const char* key : {"args", "outs"}) {
      const auto list = j.find(key);
      if (list == j.end() || !list->is_array())
        return problem = std::string("no \"") + key + "\" list", false;
      for (const auto& t : *list)
        if (!tensor(t, key[0] == 'a', problem, any_xxh3)) return false;
      (key[0] == 'a' ? args : outs) = static_cast<std::uint32_t>(list->size());
    }
    r.view = outs > 0 && views_ == outs;
    r.first_arg = static_cast<std::uint32_t>(log_.tensors.size());
    r.arg_count = args;
    r.first_out = r.first_arg + args;
    r.out_count = outs;
    log_.tensors.insert(log_.tensors.end(), pending_.begin(), pending_.end());
    // Every input is accounted for: hashed where it was not an earlier output, else its
    // producer's output hash is its value.
    r.has_input_hashes = true;
    if (const auto a = j.find("async"); a != j.end() && a->is_boolean() && a->get<bool>())
      r.output_hash_unreliable = true;
    if (!group(j, r, problem)) {
      log_.tensors.resize(r.first_arg);
      return false;
    }
    r.kind = RecordKind::Op;
    if (!kernel(j, r, problem)) {
      log_.tensors.resize(r.first_arg);
      return false;
    }
    const auto index = j.find("index");
    r.index =
        index != j.end() && index->is_number_unsigned() ? index->get<std::uint32_t>() : next_index(r.step);
    if (!log_.records.empty() && log_.records.back().step > r.step) {
      log_.tensors.resize(r.first_arg);
      problem = "step " + std::to_string(r.step) + " after step " + std::to_string(log_.records.back().step) +
                " (records out of order)";
      return false;
    }
    if (log_.steps.empty() || log_.steps.back() != r.step) log_.steps.push_back(r.step);
    log_.records.push_back(r);
    return true;
  }

  /// The record's shard hash spec (`"shard_spec"`: 1 or 2, absent 1; docs/hashing.md): the first
  /// record's is the log's, and a record of another is a problem (its hashes are another
  /// function's; one log, one spec).
  bool shard_spec(const json& j, std::int64_t line_no, std::string& problem) {
    int spec = 1;
    if (const auto s = j.find("shard_spec"); s != j.end()) {
      if (!s->is_number_integer() || (s->get<std::int64_t>() != 1 && s->get<std::int64_t>() != 2))
        return problem = "\"shard_spec\" is not 1 or 2", false;
      spec = static_cast<int>(s->get<std::int64_t>());
    }
    if (spec_ == 0) {
      spec_ = spec;
      spec_line_ = line_no;
    } else if (spec != spec_) {
      return problem = "shard hash spec " + std::to_string(spec) + " after spec " + std::to_string(spec_) +
                       " (line " + std::to_string(spec_line_) + "): one log, one spec",
             false;
    }
    return true;
  }

  /// A kernel launch (`"kind": "kernel"`, from Inductor's launcher): a Triton record as
  /// DebugMode's `[triton]` lines make one, its `source` the output-code line that launched it
  /// (`kernel.site`), and what the recorder knew of the kernel (source hash, config, handle).
  /// Another kind is a newer recorder's: the record is passed over, not misread as an op.
  bool kernel(const json& j, OpRecord& r, std::string& problem) {
    const auto kind = j.find("kind");
    if (kind == j.end()) return true;
    if (!kind->is_string()) return problem = "\"kind\" is not a string", false;
    if (kind->get_ref<const std::string&>() != "kernel")
      return problem = "unknown record kind \"" + kind->get<std::string>() + "\" (passed over)", false;
    r.kind = RecordKind::Triton;
    const auto k = j.find("kernel");
    if (k == j.end() || !k->is_object()) return true;
    const auto text = [&](const json& o, const char* key) -> std::uint32_t {
      const auto v = o.find(key);
      return v != o.end() && v->is_string() ? log_.strings.intern(v->get_ref<const std::string&>()) : 0;
    };
    OpLog::RecordedKernel facts;
    facts.source_hash = text(*k, "source_hash");
    facts.config = text(*k, "config");
    if (const auto site = k->find("site"); site != k->end() && site->is_object()) {
      if (const auto id = source(*site, "call"); id != 0) r.source = id;
      facts.handle = text(*site, "handle");
    }
    log_.recorded_kernels[r.line] = facts;
    return true;
  }

  /// A collective's `group` (its name) and `group_ranks` (its members, global ranks): a record
  /// without them ran on "all ranks", as records before groups were written did.
  bool group(const json& j, OpRecord& r, std::string& problem) {
    const auto g = j.find("group");
    if (g == j.end()) return true;
    if (!g->is_string() || g->get_ref<const std::string&>().empty())
      return problem = "\"group\" is not a non-empty string", false;
    r.group = log_.strings.intern(g->get_ref<const std::string&>());
    const auto gr = j.find("group_ranks");
    if (gr == j.end()) return true;
    std::vector<int> ranks;
    if (gr->is_array()) {
      for (const auto& x : *gr) {
        if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > (1 << 24) ||
            (!ranks.empty() && x.get<std::int64_t>() <= ranks.back())) {
          ranks.clear();
          break;
        }
        ranks.push_back(static_cast<int>(x.get<std::int64_t>()));
      }
    }
    if (ranks.empty()) return problem = "\"group_ranks\" is not a non-empty ascending list of ranks", false;
    const auto [it, inserted] = log_.group_ranks.emplace(r.group, ranks);
    if (!inserted && it->second != ranks)
      return problem = "group \"" + g->get<std::string>() + "\" with other ranks than an earlier record's",
             false;
    return true;
  }

  std::uint32_t next_index(std::int64_t step) {
    std::uint32_t n = 0;
    for (auto it = log_.records.rbegin(); it != log_.records.rend() && it->step == step; ++it) ++n;
    return n;
  }

  /// `function` where the location names none (a kernel's launch site: the output code's call()).
  std::uint32_t source(const json& s, const char* function = "") {
    const auto f = s.find("file");
    const auto l = s.find("line");
    if (f == s.end() || !f->is_string() || l == s.end() || !l->is_number_integer()) return 0;
    const std::string fn =
        s.contains("function") && s["function"].is_string() ? s["function"].get<std::string>() : function;
    const std::string code = s.contains("code") && s["code"].is_string() ? s["code"].get<std::string>() : "";
    const std::int64_t line = l->get<std::int64_t>();
    const auto key = std::make_tuple(f->get<std::string>(), line, fn);
    if (const auto it = source_ids_.find(key); it != source_ids_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(log_.sources.size());
    log_.sources.push_back(
        {log_.strings.intern(std::get<0>(key)), line, log_.strings.intern(fn), log_.strings.intern(code)});
    source_ids_.emplace(key, id);
    return id;
  }

  std::string_view text_;
  OpLog log_;
  std::vector<TensorRef> pending_;
  std::uint32_t views_ = 0;  // outputs of the record being read that are views
  int spec_ = 0;             // the log's shard hash spec (its first record's); 0: none read yet
  std::int64_t spec_line_ = 0;
  std::unordered_map<std::int64_t, TensorRef> last_hashed_;  // by id: its last hashed appearance
  std::map<std::tuple<std::string, std::int64_t, std::string>, std::uint32_t> source_ids_;
};

}  // namespace

bool looks_like_op_records(std::string_view head) {
  std::size_t pos = 0;
  while (pos < head.size()) {
    const auto nl = head.find('\n', pos);
    const std::string_view l =
        head.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (l.find("\"type\":\"op\"") != std::string_view::npos ||
        l.find("\"type\": \"op\"") != std::string_view::npos)
      return true;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return false;
}

bool is_op_record_run(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || !fs::is_regular_file(fs::path(path) / "manifest.json", ec)) return false;
  const std::string manifest = head_of(fs::path(path) / "manifest.json", 1 << 16);
  if (manifest.find("\"op_records\": true") != std::string::npos ||
      manifest.find("\"op_records\":true") != std::string::npos)
    return true;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && name.size() > 6 && name.ends_with(".jsonl") && e.is_regular_file(ec))
      return looks_like_op_records(head_of(e.path(), 1 << 16));
  }
  return false;
}

OpLog parse_op_records(std::string_view text, const std::string& source, int rank) {
  return Reader(text, source, rank).run();
}

OpLog read_op_records(const std::string& path, int rank) {
  const MappedFile file(path);
  return parse_op_records(file.text(), path, rank);
}

}  // namespace gparity::model::ops
