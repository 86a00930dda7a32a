#include "core/model/formats/torch_trace.hpp"

// MD5 through OpenSSL's one-algorithm API, deprecated in 3.0 but kept: the EVP interface drags
// the provider machinery (4 MB, 0.3 ms of start-up) into the statically linked `gparity`.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/torch_trace_dir.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"

namespace gparity::model {

std::string CompileId::text() const {
  if (frame_id < 0) return "-";
  std::string s = compiled_autograd_id >= 0 ? "!" + std::to_string(compiled_autograd_id) + "/" : "";
  s += std::to_string(frame_id) + "/" + std::to_string(frame_compile_id);
  if (attempt > 0) s += "_" + std::to_string(attempt);
  return s;
}

std::optional<CompileId> CompileId::parse(std::string_view t) {
  CompileId id;
  if (t == "-") return id;
  if (t.starts_with("[") && t.ends_with("]")) t = t.substr(1, t.size() - 2);
  const auto num = [&](std::int32_t& out) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
    if (r.ec != std::errc() || out < 0) return false;
    t.remove_prefix(static_cast<std::size_t>(r.ptr - t.data()));
    return true;
  };
  const auto eat = [&](char c) {
    if (t.empty() || t.front() != c) return false;
    t.remove_prefix(1);
    return true;
  };
  if (eat('!')) {
    if (!num(id.compiled_autograd_id) || !eat('/')) return std::nullopt;
  }
  if (!num(id.frame_id) || !eat('/') || !num(id.frame_compile_id)) return std::nullopt;
  if (eat('_') && !num(id.attempt)) return std::nullopt;
  if (!t.empty()) return std::nullopt;
  return id;
}

std::string TraceProblem::text() const {
  return line > 0 ? source + ":" + std::to_string(line) + ": " + problem : source + ": " + problem;
}

bool looks_like_torch_trace(std::string_view text) noexcept {
  const auto b = text.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return false;
  const auto line = text.substr(b, text.find('\n', b) - b);
  // "V1121 04:50:33.123000 999 path:line] {": a glog level letter, MMDD, and the JSON envelope.
  if (line.size() < 8 || std::string_view("VIWEF").find(line[0]) == std::string_view::npos) return false;
  for (std::size_t i = 1; i < 5; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
  }
  return line[5] == ' ' && line.find("] {") != std::string_view::npos;
}

bool is_graph_record_name(std::string_view kind, std::string_view name) noexcept {
  static constexpr std::string_view kGraphKinds[] = {
      "dynamo_output_graph",      "aot_joint_graph",          "aot_forward_graph",
      "aot_backward_graph",       "aot_inference_graph",      "inductor_pre_grad_graph",
      "inductor_post_grad_graph", "compiled_autograd_graph",  "graph_dump",
      "optimize_ddp_split_graph", "optimize_ddp_split_child", "exported_program"};
  for (const auto k : kGraphKinds) {
    if (kind == k) return true;
  }
  if (kind != "artifact") return false;
  return name.ends_with("_graph") || name.starts_with("before_") || name.starts_with("after_");
}

std::string TorchTraceRank::payload(const TraceRecord& r) const {
  std::string out;
  out.reserve(r.payload_bytes);
  std::string_view rest = text.substr(r.payload_offset, r.payload_bytes);
  for (std::uint32_t i = 0; i < r.payload_lines && !rest.empty();) {
    const auto eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Blank lines between payload lines are log stutter, not payload (as tlparse reads them).
    if (line.empty() || line.front() != '\t') continue;
    line.remove_prefix(1);
    if (i++ > 0) out += '\n';
    out += line;
  }
  return out;
}

std::vector<const TraceGraph*> TorchTraceRank::find_graphs(std::string_view kind,
                                                           std::optional<CompileId> compile) const {
  std::vector<const TraceGraph*> out;
  for (const auto& g : graphs) {
    if ((kind.empty() || g.kind == kind) && (!compile || g.compile == *compile)) out.push_back(&g);
  }
  return out;
}

std::vector<CompileId> TorchTraceRank::compile_ids() const {
  std::set<CompileId> ids;
  for (const auto& r : records) {
    if (r.compile.frame_id >= 0) ids.insert(r.compile);
  }
  return {ids.begin(), ids.end()};
}

namespace {

std::string to_hex(const unsigned char* d, unsigned n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (unsigned i = 0; i < n; ++i) {
    s[2 * i] = kHex[d[i] >> 4];
    s[2 * i + 1] = kHex[d[i] & 15];
  }
  return s;
}

class TraceParser {
 public:
  TraceParser(TorchTraceRank& out, const TraceOptions& options) : out_(out), options_(options) {}

  void run() {
    const std::string_view t = out_.text;
    out_.bytes = t.size();
    std::size_t pos = 0;
    std::int64_t line = 0;
    while (pos < t.size()) {
      ++line;
      const auto eol_at = t.find('\n', pos);
      const bool complete = eol_at != std::string_view::npos;
      const std::size_t eol = complete ? eol_at : t.size();
      std::string_view l = t.substr(pos, eol - pos);
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      const std::size_t next = complete ? eol + 1 : t.size();
      if (!l.empty() && l.front() == '\t') {
        if (skipping_) {  // the payload of an envelope that could not be read
          pos = next;
          continue;
        }
        if (current_ < 0) {
          damage(line, "payload line with no envelope before it");
          skipping_ = true;
          pos = next;
          continue;
        }
        payload_line(pos, next, l.substr(1));
        // A last line without a newline is complete when the payload's MD5 says so.
        if (!complete) return last_payload_line(line);
      } else if (!l.empty()) {
        finish_record();
        skipping_ = false;
        if (!envelope(l, line)) {
          skipping_ = true;  // read on at the next envelope: one bad record costs only itself
          if (!complete && !out_.problems.empty())
            out_.problems.back().problem += " (file ends in this line: truncated?)";
        }
      }
      pos = next;
    }
    finish_record();
  }

  void parse_graphs() {
    for (std::size_t i = 0; i < out_.records.size(); ++i) {
      TraceRecord& r = out_.records[i];
      if (r.payload_lines == 0 || !is_graph_record_name(r.kind, r.name)) continue;
      const std::string text = out_.payload(r);
      // Artifacts and graph dumps hold code as often as graphs; the graph kinds always hold one.
      if (!looks_like_fx_text(text) && (r.kind == "artifact" || r.kind == "graph_dump")) continue;
      FxParse p = read_fx_text(text, out_.path, r.line + 1);
      for (auto& pr : p.problems)
        out_.problems.push_back({out_.path, pr.line, r.name + " payload: " + pr.problem});
      if (p.graph) {
        TraceGraph g{r.name, r.compile, i, std::move(*p.graph)};
        g.problems = static_cast<std::uint32_t>(p.problems.size());
        r.graph = static_cast<std::int32_t>(out_.graphs.size());
        out_.graphs.push_back(std::move(g));
      } else {
        out_.unparsed.push_back(i);
      }
    }
    // Problems in file order: damage found while scanning may sit after a bad graph payload.
    std::stable_sort(out_.problems.begin(), out_.problems.end(),
                     [](const TraceProblem& a, const TraceProblem& b) { return a.line < b.line; });
  }

 private:
  void damage(std::int64_t line, std::string problem) {
    finish_record();
    out_.problems.push_back({out_.path, line, std::move(problem)});
  }

  void last_payload_line(std::int64_t line) {
    const TraceRecord& r = out_.records[static_cast<std::size_t>(current_)];
    const bool verified = hashing_;
    finish_record();
    if (!verified || !r.md5_ok) {
      out_.problems.push_back({out_.path, line, "file ends in the middle of a payload line (truncated?)"});
    }
  }

  void payload_line(std::size_t pos, std::size_t next, std::string_view content) {
    TraceRecord& r = out_.records[static_cast<std::size_t>(current_)];
    if (r.payload_lines == 0) r.payload_offset = pos;
    ++r.payload_lines;
    r.payload_bytes = next - r.payload_offset;
    if (hashing_) {
      if (r.payload_lines > 1) MD5_Update(&md_, "\n", 1);
      MD5_Update(&md_, content.data(), content.size());
    }
  }

  void finish_record() {
    if (current_ < 0) return;
    TraceRecord& r = out_.records[static_cast<std::size_t>(current_)];
    if (hashing_) {
      unsigned char digest[MD5_DIGEST_LENGTH];
      MD5_Final(digest, &md_);
      r.md5_ok = to_hex(digest, MD5_DIGEST_LENGTH) == r.md5;
      hashing_ = false;
    } else if (!r.md5.empty() && options_.verify_md5) {
      r.md5_ok = false;
    }
    // A payload announced but absent, or present but not announced, does not match either.
    if (r.md5.empty() != (r.payload_lines == 0)) r.md5_ok = false;
    if (!r.md5_ok) ++out_.md5_mismatches;
    current_ = -1;
  }

  static std::int32_t int_field(const nlohmann::json& j, const char* key, std::int32_t fallback) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return fallback;
    const auto v = it->get<std::int64_t>();
    return v < INT32_MIN || v > INT32_MAX ? fallback : static_cast<std::int32_t>(v);
  }

  bool envelope(std::string_view l, std::int64_t line) {
    // glog prefix: a level letter, then "MMDD hh:mm:ss.micros thread path:line] ".
    const auto close = l.find("] ");
    if (std::string_view("VIWEF").find(l.front()) == std::string_view::npos ||
        close == std::string_view::npos) {
      damage(line, "not a TORCH_TRACE envelope (expected 'V1121 04:50:33.123000 999 path:line] {json}')");
      return false;
    }
    nlohmann::json doc;
    try {
      doc = parse_json(l.substr(close + 2), out_.path, line);
    } catch (const InputError& e) {
      out_.problems.push_back({e.source(), e.line(), "envelope: " + e.problem()});
      return false;
    }
    if (!doc.is_object()) {
      damage(line, "envelope JSON is not an object");
      return false;
    }
    TraceRecord r;
    r.line = line;
    r.rank = int_field(doc, "rank", -1);
    r.compile.frame_id = int_field(doc, "frame_id", -1);
    r.compile.frame_compile_id = int_field(doc, "frame_compile_id", -1);
    r.compile.attempt = int_field(doc, "attempt", 0);
    r.compile.compiled_autograd_id = int_field(doc, "compiled_autograd_id", -1);
    if (const auto it = doc.find("has_payload"); it != doc.end() && it->is_string())
      r.md5 = it->get<std::string>();
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      const std::string& k = it.key();
      if (k == "rank" || k == "frame_id" || k == "frame_compile_id" || k == "attempt" ||
          k == "compiled_autograd_id" || k == "has_payload") {
        continue;
      }
      r.kind = k;
      if (k != "chromium_event") r.event = std::move(it.value());
      break;
    }
    r.name = r.kind;
    if (r.kind == "artifact" && r.event.is_object()) {
      if (const auto n = r.event.find("name"); n != r.event.end() && n->is_string())
        r.name = n->get<std::string>();
      if (const auto e = r.event.find("encoding"); e != r.event.end() && e->is_string()) {
        r.encoding = e->get<std::string>();
      }
    }
    if (r.kind == "str") interned_filename(r.event);
    if (out_.rank < 0 && r.rank >= 0) out_.rank = r.rank;
    if (!r.md5.empty() && options_.verify_md5) {
      MD5_Init(&md_);
      hashing_ = true;
    }
    current_ = static_cast<std::int64_t>(out_.records.size());
    out_.records.push_back(std::move(r));
    return true;
  }

  void interned_filename(const nlohmann::json& e) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number_unsigned()) return;
    const auto idx = e[1].get<std::uint64_t>();
    if (idx > 1'000'000) return;  // a hostile index must not allocate gigabytes
    if (out_.filenames.size() <= idx) out_.filenames.resize(idx + 1);
    out_.filenames[idx] = e[0].get<std::string>();
  }

  TorchTraceRank& out_;
  const TraceOptions& options_;
  MD5_CTX md_{};
  std::int64_t current_ = -1;
  bool hashing_ = false;
  bool skipping_ = false;
};

void parse_into(TorchTraceRank& t, const TraceOptions& options) {
  TraceParser p(t, options);
  p.run();
  if (options.parse_graphs) p.parse_graphs();
}

std::int32_t rank_from_filename(const std::string& path) {
  const auto name = std::filesystem::path(path).filename().string();
  const auto at = name.find("_rank_");
  if (at == std::string::npos) return -1;
  std::int32_t r = -1;
  const char* b = name.data() + at + 6;
  const auto res = std::from_chars(b, name.data() + name.size(), r);
  return res.ec == std::errc() ? r : -1;
}

}  // namespace

TorchTraceRank read_torch_trace(const std::string& path, const TraceOptions& options) {
  auto file = std::make_shared<const MappedFile>(path);
  TorchTraceRank t;
  t.path = path;
  t.text = file->text();
  t.owner = file;
  t.rank = rank_from_filename(path);
  parse_into(t, options);
  return t;
}

TorchTraceRank parse_torch_trace(std::string text, const std::string& source, const TraceOptions& options) {
  auto owned = std::make_shared<const std::string>(std::move(text));
  TorchTraceRank t;
  t.path = source;
  t.text = *owned;
  t.owner = owned;
  parse_into(t, options);
  return t;
}

const TorchTraceRank* MultiRankTrace::rank(std::int32_t r) const {
  for (const auto& t : ranks) {
    if (t.rank == r) return &t;
  }
  return nullptr;
}

std::size_t MultiRankTrace::problem_count() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.problems.size();
  return n;
}

MultiRankTrace read_torch_trace_dir(const std::string& path, const TraceOptions& options, unsigned threads) {
  MultiRankTrace out;
  out.path = path;
  const auto files = torch_trace_files(path);
  out.ranks.resize(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      try {
        out.ranks[i] = read_torch_trace(files[i], options);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, files.size()));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::stable_sort(out.ranks.begin(), out.ranks.end(),
                   [](const TorchTraceRank& a, const TorchTraceRank& b) { return a.rank < b.rank; });
  refuse_rank_in_two_logs(out.ranks, path);
  return out;
}

std::vector<std::string> torch_trace_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (path_kind(path) == PathKind::Directory) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (path_kind(e.path()) != PathKind::Regular) continue;  // a looping link throws, naming it
      // By content, not name: stray files (empty logs, notes) in a trace folder are not ranks.
      std::ifstream in(e.path(), std::ios::binary);
      std::string head(4096, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<std::size_t>(in.gcount()));
      if (looks_like_torch_trace(head)) files.push_back(e.path().string());
    }
    if (ec) throw InputError(path, "cannot list the directory: " + ec.message());
    if (files.empty()) throw InputError(path, "no TORCH_TRACE log in the directory");
  } else {
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void refuse_rank_in_two_logs(std::span<const TorchTraceRank> ranks, const std::string& path) {
  for (std::size_t i = 1; i < ranks.size(); ++i) {
    if (ranks[i].rank >= 0 && ranks[i].rank == ranks[i - 1].rank) {
      throw InputError(path, "rank " + std::to_string(ranks[i].rank) +
                                 " is in two logs: " + ranks[i - 1].path + " and " + ranks[i].path +
                                 " (a restarted job writes a second log: keep the one to read)");
    }
  }
}

}  // namespace gparity::model
