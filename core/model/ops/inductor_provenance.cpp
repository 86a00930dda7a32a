#include "core/model/ops/inductor_provenance.hpp"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "hash/xxh3.hpp"

namespace gparity::model::ops {

namespace {

using json = nlohmann::json;

std::string_view trim_ws(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ident_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// "[x, layer_norm]" at the start of `s` -> {"x", "layer_norm"}.
std::vector<std::string> bracket_list(std::string_view s) {
  std::vector<std::string> out;
  s = trim_ws(s);
  if (s.empty() || s.front() != '[') return out;
  const auto close = s.find(']');
  if (close == std::string_view::npos) return out;
  std::string_view body = s.substr(1, close - 1);
  while (!body.empty()) {
    const auto comma = body.find(',');
    const std::string_view item = trim_ws(body.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    body.remove_prefix(comma + 1);
  }
  return out;
}

/// The kernel a statement of call() launches: `name.run(` (Triton), `name(` (a C++ kernel the
/// code defined), `extern_kernels.name(`, or (`torch_ops_allowed`: a provenance comment above it)
/// `torch.ops.ns.op.overload(`; "" when it launches none.
std::string launched_kernel(std::string_view t, bool torch_ops_allowed,
                            const std::map<std::string, KernelSource>& defined) {
  // A C++ kernel (CPU) is called by its name: `cpp_fused_gelu_1(buf4)`.
  std::size_t id = 0;
  while (id < t.size() && ident_char(t[id])) ++id;
  if (id > 0 && id < t.size() && t[id] == '(' && defined.contains(std::string(t.substr(0, id))))
    return std::string(t.substr(0, id));
  if (const auto run = t.find(".run("); run != std::string_view::npos) {
    std::size_t b = run;
    while (b > 0 && ident_char(t[b - 1])) --b;
    if (b < run) return std::string(t.substr(b, run - b));
  }
  for (const std::string_view prefix :
       {std::string_view("extern_kernels."), std::string_view("torch.ops.")}) {
    const auto at = t.find(prefix);
    if (at == std::string_view::npos || (prefix == "torch.ops." && !torch_ops_allowed)) continue;
    std::size_t e = at + prefix.size();
    while (e < t.size() && (ident_char(t[e]) || (prefix == "torch.ops." && t[e] == '.'))) ++e;
    if (e < t.size() && t[e] == '(' && e > at + prefix.size()) return std::string(t.substr(at, e - at));
  }
  return {};
}

/// A kernel source line with what differs between two builds of one kernel taken out: its own
/// name (renumbering) and the GPU index (`DeviceProperties(type='cuda', index=1, ...)`).
std::string normalize_kernel_line(std::string_view line, std::string_view name) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size();) {
    if (!name.empty() && line.substr(i, name.size()) == name &&
        (i + name.size() >= line.size() || !ident_char(line[i + name.size()]))) {
      out += "<kernel>";
      i += name.size();
    } else if (line.substr(i, 6) == "index=" && i + 6 < line.size() && line[i + 6] >= '0' &&
               line[i + 6] <= '9') {
      out += "index=?";
      i += 6;
      while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    } else {
      out += line[i++];
    }
  }
  return out;
}

/// Occurrences of `word` in `line` as a whole identifier, and of them those that are `tl.store(`'s
/// first argument.
void count_uses(std::string_view line, std::string_view word, std::size_t& uses, std::size_t& stores) {
  for (std::size_t at = line.find(word); at != std::string_view::npos; at = line.find(word, at + 1)) {
    if ((at > 0 && ident_char(line[at - 1])) ||
        (at + word.size() < line.size() && ident_char(line[at + word.size()])))
      continue;
    ++uses;
    std::size_t before = at;
    while (before > 0 && line[before - 1] == ' ') --before;
    stores += before >= 9 && line.substr(before - 9, 9) == "tl.store(" ? 1 : 0;
  }
}

/// KernelSource::stored_only of a kernel's lines: the in_out_ptr parameters of its `def` line whose
/// every use after it is tl.store's first argument.
std::vector<std::string> stored_only_args(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  std::size_t def = 0;
  while (def < lines.size() && lines[def].find("def ") == std::string::npos) ++def;
  if (def == lines.size()) return out;
  const std::string_view sig = lines[def];
  const auto open = sig.find('('), close = sig.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return out;
  std::string_view params = sig.substr(open + 1, close - open - 1);
  while (!params.empty()) {
    const auto comma = params.find(',');
    std::string_view p = params.substr(0, comma);
    params = comma == std::string_view::npos ? std::string_view() : params.substr(comma + 1);
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    p = p.substr(0, p.find_first_of(" :"));
    if (!p.starts_with("in_out_ptr")) continue;
    std::size_t uses = 0, stores = 0;
    for (std::size_t i = def + 1; i < lines.size(); ++i) count_uses(lines[i], p, uses, stores);
    if (uses > 0 && uses == stores) out.emplace_back(p);
  }
  return out;
}

KernelSource kernel_source(const std::vector<std::string_view>& body, std::string_view name) {
  KernelSource k;
  std::string joined;
  for (const auto line : body) {
    k.lines.push_back(normalize_kernel_line(line, name));
    joined += k.lines.back();
    joined += '\n';
    k.deterministic_off = k.deterministic_off || line.find("'are_deterministic_algorithms_enabled': False") !=
                                                     std::string_view::npos;
    k.atomics = k.atomics || line.find("'atomic_add_found': True") != std::string_view::npos ||
                line.find("tl.atomic_add(") != std::string_view::npos;
  }
  k.hash = hash::xxh3_64(std::as_bytes(std::span(joined.data(), joined.size())));
  k.stored_only = stored_only_args(k.lines);
  return k;
}

void add_unique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& e : j)
    if (e.is_string()) add_unique(out, e.get<std::string>());
  return out;
}

/// 2.8's inductor_post_to_pre_grad_nodes: each post-grad node's list of {name, ..., from_node};
/// nodes a pass made have no name: their from_node says where they came from.
void pre_names(const json& entries, std::vector<std::string>& out, int depth = 0) {
  if (!entries.is_array() || depth > 32) return;
  for (const auto& e : entries) {
    if (!e.is_object()) continue;
    const auto name = e.find("name");
    if (name != e.end() && name->is_string() && !name->get<std::string>().empty()) {
      add_unique(out, name->get<std::string>());
    } else if (const auto from = e.find("from_node"); from != e.end()) {
      pre_names(*from, out, depth + 1);
    }
  }
}

/// The provenance artifacts of one graph, as they arrive.
struct Mappings {
  std::map<std::string, std::vector<std::string>> kernel_to_post;
  std::map<std::string, std::vector<std::string>> post_to_pre;
  std::map<std::string, std::vector<UserFrame>> frames;
  std::map<std::string, std::string> configs;  // triton_kernel_info
};

void read_node_mappings(const json& j, Mappings& m) {
  if (const auto k = j.find("cppCodeToPost"); k != j.end() && k->is_object())
    for (const auto& [key, v] : k->items()) m.kernel_to_post[key] = string_list(v);
  if (const auto p = j.find("postToPre"); p != j.end() && p->is_object())
    for (const auto& [key, v] : p->items()) m.post_to_pre[key] = string_list(v);
}

void read_stack_traces(const json& j, Mappings& m) {
  if (!j.is_object()) return;
  for (const auto& [key, stacks] : j.items()) {
    auto& frames = m.frames[key];
    if (!stacks.is_array()) continue;
    for (const auto& s : stacks) {
      if (!s.is_string()) continue;
      const auto f = parse_stack_frames(s.get<std::string>());
      if (f.empty()) continue;
      const UserFrame& inner = f.back();
      const bool seen = std::any_of(frames.begin(), frames.end(), [&](const UserFrame& x) {
        return x.file == inner.file && x.line == inner.line;
      });
      if (!seen) frames.push_back(inner);
    }
  }
}

std::string config_text(const json& info) {
  const auto only = info.find("only_config");
  if (only != info.end() && only->is_array()) {
    std::string out;
    for (const auto& kv : *only) {
      if (!kv.is_array() || kv.size() != 2) continue;
      if (!out.empty()) out += ", ";
      out += (kv[0].is_string() ? kv[0].get<std::string>() : kv[0].dump()) + "=" + kv[1].dump();
    }
    return out;
  }
  if (const auto n = info.find("num_configs"); n != info.end() && n->is_number_integer())
    return "autotuned among " + n->dump() + " configs (the choice is not logged)";
  return {};
}

void attach(OutputCode& code, const Mappings& m) {
  auto origin_for = [&](const std::string& key) {
    KernelOrigin o;
    if (const auto it = m.kernel_to_post.find(key); it != m.kernel_to_post.end()) {
      o.post_nodes = it->second;
      for (const auto& post : o.post_nodes)
        if (const auto pre = m.post_to_pre.find(post); pre != m.post_to_pre.end())
          for (const auto& p : pre->second) add_unique(o.pre_nodes, p);
    }
    if (const auto it = m.frames.find(key); it != m.frames.end()) o.frames = it->second;
    return o;
  };
  std::vector<std::string> keys;
  for (const auto& [k, v] : m.kernel_to_post) keys.push_back(k);
  for (const auto& [k, v] : m.frames) keys.push_back(k);
  for (const auto& k : keys) {
    KernelOrigin o = origin_for(k);
    if (!o.post_nodes.empty() || !o.frames.empty()) code.origins[k] = std::move(o);
  }
  code.configs.insert(m.configs.begin(), m.configs.end());
}

void read_rank(const TorchTraceRank& t, RankProvenance& out) {
  out.rank = t.rank;
  for (std::size_t i = 0; i < t.records.size() && out.rank < 0; ++i) out.rank = t.records[i].rank;
  out.path = t.path;
  for (const auto& p : t.problems) out.problems.push_back(p.text());
  // A graph's kernel mappings, stack traces and kernel info follow its output code; 2.8's
  // post-to-pre-grad map comes before it (written at post-grad time), as does anything logged
  // before the first output code.
  std::vector<Mappings> maps;
  Mappings next;
  for (const auto& r : t.records) {
    if (r.kind == "inductor_output_code") {
      OutputCode code = parse_output_code(t.payload(r), out.problems, t.path + ":" + std::to_string(r.line));
      if (r.event.is_object()) {
        for (const char* key : {"filename", "file_path"}) {
          const auto it = r.event.find(key);
          if (code.path.empty() && it != r.event.end() && it->is_string()) code.path = it->get<std::string>();
        }
      }
      code.trace_line = r.line;
      out.codes.push_back(std::move(code));
      maps.push_back(std::move(next));
      next = {};
      continue;
    }
    if (r.kind != "artifact") continue;
    const bool mappings = r.name == "inductor_provenance_tracking_node_mappings";
    const bool old_kernels = r.name == "inductor_triton_kernel_to_post_grad_nodes";
    const bool old_pre = r.name == "inductor_post_to_pre_grad_nodes";
    const bool stacks = r.name == "inductor_provenance_tracking_kernel_stack_traces";
    const bool info = r.name == "triton_kernel_info";
    if (!mappings && !old_kernels && !old_pre && !stacks && !info) continue;
    json j;
    try {
      j = parse_json(t.payload(r), t.path, r.line + 1);
    } catch (const InputError& e) {
      out.problems.push_back(t.path + ":" + std::to_string(r.line) + ": " + r.name + ": " + e.what());
      continue;
    }
    if (!j.is_object()) {
      out.problems.push_back(t.path + ":" + std::to_string(r.line) + ": " + r.name + " is not a JSON object");
      continue;
    }
    Mappings& m = old_pre || maps.empty() ? next : maps.back();
    if (mappings) read_node_mappings(j, m);
    if (old_kernels)
      for (const auto& [key, v] : j.items()) m.kernel_to_post[key] = string_list(v);
    if (old_pre)
      for (const auto& [key, v] : j.items()) pre_names(v, m.post_to_pre[key]);
    if (stacks) read_stack_traces(j, m);
    if (info)
      for (const auto& [key, v] : j.items())
        if (v.is_object())
          if (auto c = config_text(v); !c.empty()) m.configs[key] = std::move(c);
  }
  for (std::size_t i = 0; i < out.codes.size(); ++i) attach(out.codes[i], maps[i]);
}

}  // namespace

std::string UserFrame::text() const {
  const auto slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(line);
}

const KernelOrigin* OutputCode::origin_of(const LaunchSite& site) const {
  if (!site.handle.empty())
    if (const auto it = origins.find(site.handle); it != origins.end()) return &it->second;
  const auto it = origins.find(site.kernel);
  return it == origins.end() ? nullptr : &it->second;
}

const KernelSource* OutputCode::source_of(std::string_view kernel) const {
  const auto it = kernels.find(std::string(kernel));
  return it == kernels.end() ? nullptr : &it->second;
}

const std::string* OutputCode::config_of(std::string_view kernel) const {
  const auto it = configs.find(std::string(kernel));
  return it == configs.end() ? nullptr : &it->second;
}

const RankProvenance* RunProvenance::rank(int r) const {
  for (const auto& p : ranks)
    if (p.rank == r) return &p;
  return nullptr;
}

std::vector<UserFrame> parse_stack_frames(std::string_view stack) {
  std::string text(stack);
  if (text.find('\n') == std::string::npos && text.find("\\n") != std::string::npos) {
    std::string unescaped;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n') {
        unescaped += '\n';
        ++i;
      } else {
        unescaped += text[i];
      }
    }
    text = std::move(unescaped);
  }
  std::vector<UserFrame> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = trim_ws(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.starts_with("File \"")) {
      if (!out.empty() && out.back().code.empty() && !line.empty()) out.back().code = std::string(line);
      continue;
    }
    const auto q = line.find('"', 6);
    if (q == std::string_view::npos) continue;
    UserFrame f;
    f.file = std::string(line.substr(6, q - 6));
    std::string_view tail = line.substr(q + 1);
    if (const auto l = tail.find("line "); l != std::string_view::npos) {
      std::int64_t n = 0;
      // At most 15 digits: a hostile line number never overflows.
      for (std::size_t i = l + 5; i < tail.size() && i < l + 20 && tail[i] >= '0' && tail[i] <= '9'; ++i)
        n = n * 10 + (tail[i] - '0');
      f.line = n;
    }
    if (const auto in = tail.find(", in "); in != std::string_view::npos)
      f.function = std::string(trim_ws(tail.substr(in + 5)));
    out.push_back(std::move(f));
  }
  return out;
}

OutputCode parse_output_code(std::string_view text, std::vector<std::string>& problems,
                             const std::string& source) {
  OutputCode oc;
  std::vector<std::string_view> body;
  std::string kernel;  // the kernel whose source is being read
  std::vector<std::string> nodes, aten;
  std::string handle;
  bool commented = false;
  std::int64_t ln = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++ln;
    const std::string_view t = trim_ws(line);
    if (!kernel.empty()) {
      if (t.starts_with("'''")) {
        oc.kernels[kernel] = kernel_source(body, kernel);
        kernel.clear();
      } else {
        body.push_back(line);
      }
      continue;
    }
    if (t.starts_with("# AOT ID:")) {
      const auto q = t.find('\'');
      const auto q2 = q == std::string_view::npos ? q : t.find('\'', q + 1);
      if (q2 != std::string_view::npos) oc.graph = std::string(t.substr(q + 1, q2 - q - 1));
      continue;
    }
    // `name = async_compile.triton('name', '''` or `.cpp_pybinding([...], '''`: its source follows.
    if (const auto def = line.find(" = async_compile.");
        def != std::string_view::npos && t.ends_with("'''")) {
      kernel = std::string(trim_ws(line.substr(0, def)));
      body.clear();
      continue;
    }
    if (t.starts_with("# Topologically Sorted Source Nodes:")) {
      std::string_view rest = t.substr(36);
      nodes = bracket_list(rest);
      const auto at = rest.find("Original ATen:");
      aten = at == std::string_view::npos ? std::vector<std::string>() : bracket_list(rest.substr(at + 14));
      commented = true;
      continue;
    }
    if (t.starts_with("# [Provenance debug handles]")) {
      handle = std::string(trim_ws(t.substr(28)));
      commented = true;
      continue;
    }
    if (t.empty() || t.front() == '#') continue;
    std::string launched = launched_kernel(t, commented, oc.kernels);
    if (launched.empty()) {
      // `stream1 = get_raw_stream(1)` sits between the comments and the launch they describe.
      if (t.find("get_raw_stream(") == std::string_view::npos) {
        nodes.clear();
        aten.clear();
        handle.clear();
        commented = false;
      }
      continue;
    }
    LaunchSite s;
    s.kernel = std::move(launched);
    // A handle names its kernel: "name:N"; one of another kernel belongs to no launch here.
    if (handle.rfind(s.kernel + ":", 0) == 0) s.handle = handle;
    s.line = ln;
    s.source_nodes = std::move(nodes);
    s.aten = std::move(aten);
    oc.launches.push_back(std::move(s));
    nodes.clear();
    aten.clear();
    handle.clear();
    commented = false;
  }
  if (!kernel.empty()) problems.push_back(source + ": the source of " + kernel + " is cut short");
  if (oc.launches.empty()) problems.push_back(source + ": an output code without kernel launches");
  return oc;
}

std::string find_provenance_dir(const std::string& run_path) {
  namespace fs = std::filesystem;
  fs::path p(run_path);
  if (path_kind(run_path) != PathKind::Directory) p = p.parent_path();
  const fs::path trace = p / "trace";
  return path_kind(trace.string()) == PathKind::Directory ? trace.string() : std::string();
}

RunProvenance read_provenance(const std::string& dir) {
  RunProvenance out;
  out.dir = dir;
  TraceOptions o;
  o.parse_graphs = false;
  const MultiRankTrace trace = read_torch_trace_dir(dir, o);
  for (const auto& t : trace.ranks) {
    RankProvenance r;
    read_rank(t, r);
    out.ranks.push_back(std::move(r));
  }
  return out;
}

RankProvenance parse_provenance(std::string text, const std::string& source) {
  TraceOptions o;
  o.parse_graphs = false;
  const TorchTraceRank t = parse_torch_trace(std::move(text), source, o);
  RankProvenance r;
  read_rank(t, r);
  return r;
}

}  // namespace gparity::model::ops
