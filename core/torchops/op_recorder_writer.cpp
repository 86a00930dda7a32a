// The op recorder: the step's records as trace v1 "op" JSON lines (docs/trace-format.md, "op";
// op_recorder_state.hpp).

#include <array>
#include <bit>
#include <cstdio>
#include <fstream>

#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

void json_string(std::string& out, std::string_view s) {
  out += '"';
  std::size_t run = 0;  // start of the characters not yet appended (appended a run at a time)
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c != '"' && c != '\\' && c >= 0x20) continue;
    out.append(s, run, i - run);
    run = i + 1;
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += '\\';
      out += static_cast<char>(c);
    }
  }
  out.append(s, run, s.size() - run);
  out += '"';
}

std::string hex64(std::int64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v)));
  return buf;
}

/// A source file's lines, stripped, read once a process.
const std::vector<std::string>& file_lines(const std::string& file) {
  static std::unordered_map<std::string, std::vector<std::string>> files;
  auto it = files.find(file);
  if (it == files.end()) {
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) {
      const auto b = l.find_first_not_of(" \t\r\f\v");
      const auto e = l.find_last_not_of(" \t\r\f\v");
      lines.push_back(b == std::string::npos ? std::string() : l.substr(b, e - b + 1));
    }
    it = files.emplace(file, std::move(lines)).first;
  }
  return it->second;
}

const std::string& code_line(const std::vector<std::string>& lines, int line) {
  static const std::string none;
  return line > 0 && static_cast<std::size_t>(line) <= lines.size()
             ? lines[static_cast<std::size_t>(line) - 1]
             : none;
}

}  // namespace

StepText records_jsonl(const State& s, const std::vector<Record>& records) {
  StepText step;
  std::string& out = step.text;
  const bool xxh3 = s.options.xxh3;
  // A hash is 16 hex digits: written as zeros now, its place kept, filled once read back.
  const auto hole = [&](const TensorRef& t, std::int64_t word) {
    out += '"';
    step.holes.push_back({out.size(), t.device, t.chunk, 2 * t.slot + word});
    out += "0000000000000000\"";
  };
  // Every record of a hashed step names the shard spec when it is v2 (absent: v1).
  const bool shard_spec2 = s.options.hash && s.options.shard_spec == 2;
  // Appends to `out`, where `hole` keeps its places.
  const auto tensor = [&](const TensorRef& t) {
    out += "{\"id\":";
    out += std::to_string(t.id);
    out += ",\"dtype\":";
    const char* name = dtype_name(t.dtype);
    json_string(out, name ? std::string(name) : other_dtype_name(t.dtype));
    out += ",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(t.shape[i]);
    }
    out += ']';
    if (!t.name.empty()) {
      out += ",\"name\":";
      json_string(out, t.name);
    }
    if (t.role[0] != '\0') {
      out += ",\"role\":\"";
      out += t.role;
      out += '"';
    }
    if (t.unhashed[0] != '\0') {
      out += ",\"unhashed\":\"";
      out += t.unhashed;
      out += '"';
    }
    if (t.view_base >= 0) {
      out += ",\"view\":{\"base\":";
      out += std::to_string(t.view_base);
      out += '}';
    }
    if (t.device >= 0) {
      if (xxh3) {
        out += ",\"xxh3\":";
        hole(t, 0);
      }
      out += ",\"shard\":";
      hole(t, 1);
    }
    out += '}';
  };
  static constexpr std::array<const char*, 3> kPhases = {"forward", "backward", "optimizer"};
  out.reserve(records.size() * 256);
  std::vector<const std::vector<std::string>*> code_lines(s.codes.size(), nullptr);
  for (std::size_t index = 0; index < records.size(); ++index) {
    const auto& r = records[index];
    out += "{\"type\":\"op\",\"step\":";
    out += std::to_string(s.options.step);
    out += ",\"index\":";
    out += std::to_string(index);
    out += ",\"op\":";
    const KernelSite* kernel =
        r.op || r.kernel_site < 0 ? nullptr : &s.kernel_sites[static_cast<std::size_t>(r.kernel_site)];
    json_string(out, r.op ? r.op->name : kernel ? kernel->kernel : std::string());
    if (shard_spec2) out += ",\"shard_spec\":2";
    if (kernel) {
      out += ",\"kind\":\"kernel\"";
      if (!kernel->kernel_json.empty()) {
        out += ",\"kernel\":";
        out += kernel->kernel_json;
      }
    }
    out += ",\"phase\":\"";
    out += kPhases[static_cast<std::size_t>(r.phase)];
    out += '"';
    if (r.module >= 0) {
      out += ",\"module\":";
      json_string(out, s.module_names[static_cast<std::size_t>(r.module)]);
    }
    if (r.code >= 0) {
      const auto& c = s.codes[static_cast<std::size_t>(r.code)];
      out += ",\"source\":{\"file\":";
      json_string(out, c.file);
      out += ",\"line\":";
      out += std::to_string(r.line);
      out += ",\"function\":";
      json_string(out, c.function);
      out += ",\"code\":";
      auto& lines = code_lines[static_cast<std::size_t>(r.code)];
      if (!lines) lines = &file_lines(c.file);  // a lookup by file name a code object, not a record
      json_string(out, code_line(*lines, r.line));
      out += '}';
    }
    for (const auto* key : {"args", "outs"}) {
      const auto& list = key[0] == 'a' ? r.args : r.outs;
      out += ",\"";
      out += key;
      out += "\":[";
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (i) out += ',';
        tensor(list[i]);
      }
      out += ']';
    }
    if (r.async_collective) {
      out += ",\"collective\":true,";
      out += r.group.empty() ? std::string("\"group\":\"default\"") : r.group;
      out += ",\"async\":true";
    }
    out += "}\n";
  }
  return step;
}

void fill_hashes(StepText& step, const HashWords& words) {
  for (const auto& h : step.holes) {
    const auto& w = words[static_cast<std::size_t>(h.device)][static_cast<std::size_t>(h.chunk)];
    const auto hex = hex64(w[static_cast<std::size_t>(h.word)]);
    step.text.replace(h.offset, hex.size(), hex);
  }
}

}  // namespace gparity::torchops::oprec_detail
