// `gparity graph ranks DIR` from files, as users run it (issue 35, docs/scale.md), beside the
// in-memory bench_graph_ranks_scale: a plain timed main that writes its own rank logs and runs the
// CLI under /usr/bin/time -v (wall, CPU, peak RSS), `cat` of the same logs beside it as the floor.
//
// The logs are made from a real one: the aot_joint_graph payload of the PyTorch 2.11 FSDP2 compile
// log (../shared/samples/torch-2.11-fsdp2-2rank/compile/trace, rank 0), its body repeated (every
// name a repetition defines suffixed `_r<k>`) to about GPARITY_GRAPH_NODES nodes (20,000), the
// graph's own envelope line and has_payload MD5 around it. Each rank's device literals are its own
// (`cuda:<rank>` in annotations, `index=<rank>` in device literals) and one constant is changed on
// rank GPARITY_PLANTED_RANK (137): `div_1_r<middle>`'s divisor 96 becomes 97, the node the verdict
// must name. Goals (2-core machine): 256 ranks <= 3 s wall and <= 1 GiB, 1,024 ranks <= 12 s and
// <= 2 GiB.
//
// Usage: bench_graph_ranks_files [RANKS...]        (default 256 1024; the logs of the largest
//                                                   count are written once, the others hard-link
//                                                   its first ranks)
//        bench_graph_ranks_files --write DIR RANKS (only write the logs, e.g. for a script)
// GPARITY_SCALE_DIR keeps the logs there (default: a temporary folder, deleted afterwards);
// GPARITY_SAMPLES points at the shared samples (default ../shared/samples beside the source tree).

// MD5 for has_payload through the one-algorithm API, as core/model/formats/torch_trace.cpp does.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path sample_log() {
  const char* env = std::getenv("GPARITY_SAMPLES");
  const fs::path samples =
      env != nullptr ? fs::path(env) : fs::path(GPARITY_SOURCE_DIR) / "../shared/samples";
  const fs::path dir = samples / "torch-2.11-fsdp2-2rank/compile/trace";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find("rank_0_") != std::string::npos) return e.path();
  }
  std::cerr << "no rank 0 log in " << dir << " (set GPARITY_SAMPLES)\n";
  std::exit(2);
}

/// The aot_joint_graph record of a log: its envelope line and payload lines (TABs removed).
struct JointGraph {
  std::string envelope;
  std::vector<std::string> lines;
};

JointGraph joint_graph(const std::string& log) {
  JointGraph g;
  std::istringstream in(log);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '\t') {
      if (inside) g.lines.push_back(line.substr(1));
      continue;
    }
    if (inside) break;
    inside = line.find("{\"aot_joint_graph\"") != std::string::npos;
    if (inside) g.envelope = line;
  }
  if (g.lines.empty()) {
    std::cerr << "no aot_joint_graph payload in the sample log\n";
    std::exit(2);
  }
  return g;
}

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

/// `line` with every identifier in `names` suffixed (attributes, string literals and `#` comments
/// left alone).
std::string rename(const std::string& line, const std::set<std::string, std::less<>>& names,
                   const std::string& suffix) {
  std::string out;
  for (std::size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == '#') return out + line.substr(i);
    if (c == '"' || c == '\'') {
      const std::size_t e = line.find(c, i + 1);
      const std::size_t end = e == std::string::npos ? line.size() : e + 1;
      out += line.substr(i, end - i);
      i = end;
    } else if (ident_char(c) && std::isdigit(static_cast<unsigned char>(c)) == 0) {
      std::size_t e = i;
      while (e < line.size() && ident_char(line[e])) ++e;
      const std::string word = line.substr(i, e - i);
      out += word;
      if (names.count(word) != 0 && (i == 0 || line[i - 1] != '.')) out += suffix;  // not attributes
      i = e;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

/// The joint graph's payload repeated to about `nodes` nodes, rank 0's devices; `planted` marks the
/// line whose divisor a planted rank changes. Returns the lines and the planted node's name.
struct Template {
  std::vector<std::string> lines;
  std::size_t planted_line = 0;
  std::string planted_node;
  std::size_t nodes = 0;
};

Template make_template(const JointGraph& g, std::size_t nodes) {
  std::size_t body_begin = 0, body_end = 0;
  for (std::size_t i = 0; i < g.lines.size(); ++i) {
    if (g.lines[i].find("tree_flatten_spec(") != std::string::npos) body_begin = i + 1;
    if (g.lines[i].find("return ") != std::string::npos) body_end = i;
  }
  std::set<std::string, std::less<>> defined;
  std::size_t per_copy = 0;
  for (std::size_t i = body_begin; i < body_end; ++i) {
    const std::string& l = g.lines[i];
    const std::size_t b = l.find_first_not_of(' ');
    if (b == std::string::npos || l[b] == '#') continue;
    std::size_t e = b;
    while (e < l.size() && ident_char(l[e])) ++e;
    defined.insert(l.substr(b, e - b));
    ++per_copy;
  }
  const std::size_t head = body_begin;  // class, forward, placeholders (one node each, roughly)
  const std::size_t copies = std::max<std::size_t>(1, (nodes > head ? nodes - head : 1) / per_copy + 1);
  Template t;
  t.lines.assign(g.lines.begin(), g.lines.begin() + static_cast<std::ptrdiff_t>(body_begin));
  const std::size_t middle = copies / 2;
  for (std::size_t k = 0; k < copies; ++k) {
    const std::string suffix = "_r" + std::to_string(k);
    for (std::size_t i = body_begin; i < body_end; ++i) {
      t.lines.push_back(rename(g.lines[i], defined, suffix));
      if (k == middle && g.lines[i].find("aten.div.Tensor(mul_9, 96)") != std::string::npos) {
        t.planted_line = t.lines.size() - 1;
        t.planted_node = "div_1" + suffix;
      }
    }
  }
  const std::string last = "_r" + std::to_string(copies - 1);
  for (std::size_t i = body_end; i < g.lines.size(); ++i)
    t.lines.push_back(rename(g.lines[i], defined, last));
  t.nodes = head + copies * per_copy;
  if (t.planted_node.empty()) {
    std::cerr << "the sample's joint graph has no `div.Tensor(mul_9, 96)` line to plant a constant in\n";
    std::exit(2);
  }
  return t;
}

std::string md5_hex(const std::string& s) {
  unsigned char d[MD5_DIGEST_LENGTH];
  MD5(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : d) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

/// Writes `ranks` logs into `dir`; returns their bytes.
std::uint64_t write_logs(const fs::path& dir, int ranks, const JointGraph& g, const Template& t,
                         int planted) {
  fs::create_directories(dir);
  std::uint64_t bytes = 0;
  for (int r = 0; r < ranks; ++r) {
    std::string payload;  // lines joined by "\n", as has_payload hashes them
    std::string tabbed;   // as the log holds them
    for (std::size_t i = 0; i < t.lines.size(); ++i) {
      std::string l = t.lines[i];
      if (r == planted && i == t.planted_line) l = replace_all(l, ", 96)", ", 97)");
      if (r != 0) {
        l = replace_all(l, "cuda:0", "cuda:" + std::to_string(r));
        l = replace_all(l, "index=0)", "index=" + std::to_string(r) + ")");
      }
      if (i != 0) payload += '\n';
      payload += l;
      tabbed += '\t';
      tabbed += l;
      tabbed += '\n';
    }
    std::string env = replace_all(g.envelope, "\"rank\": 0,", "\"rank\": " + std::to_string(r) + ",");
    const std::size_t h = env.find("\"has_payload\": \"");
    env = env.substr(0, h) + "\"has_payload\": \"" + md5_hex(payload) + "\"}";
    const std::string text = env + "\n" + tabbed;
    const fs::path p = dir / ("dedicated_log_torch_trace_rank_" + std::to_string(r) + "_bench.log");
    std::ofstream(p.string() + ".tmp", std::ios::binary) << text;
    fs::rename(p.string() + ".tmp", p);
    bytes += text.size();
  }
  return bytes;
}

struct Timed {
  double wall = 0, cpu = 0;
  long rss_kb = 0;
  int exit = -1;
};

/// Runs `command` under /usr/bin/time -v (its times in `times`), its output to `out`.
Timed timed(const std::string& command, const fs::path& times, const fs::path& out) {
  const std::string line =
      "/usr/bin/time -v -o " + times.string() + " " + command + " > " + out.string() + " 2>&1";
  Timed t;
  const int status = std::system(line.c_str());
  t.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(times);
  for (std::string l; std::getline(in, l);) {
    const auto num = [&](const char* key) {
      return std::atof(l.substr(l.find(key) + std::strlen(key)).c_str());
    };
    if (l.find("User time (seconds): ") != std::string::npos) t.cpu += num("User time (seconds): ");
    if (l.find("System time (seconds): ") != std::string::npos) t.cpu += num("System time (seconds): ");
    if (l.find("Maximum resident set size (kbytes): ") != std::string::npos)
      t.rss_kb = std::atol(l.substr(l.find(": ") + 2).c_str());
    if (const auto q = l.find("Elapsed (wall clock) time (h:mm:ss or m:ss): "); q != std::string::npos) {
      const std::string v = l.substr(q + 45);
      const auto colon = v.rfind(':');
      t.wall = std::atof(v.substr(colon + 1).c_str()) + 60 * std::atof(v.substr(0, colon).c_str());
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int planted = env_int("GPARITY_PLANTED_RANK", 137);
  const JointGraph g = joint_graph(read_text(sample_log()));
  const Template t = make_template(g, static_cast<std::size_t>(env_int("GPARITY_GRAPH_NODES", 20000)));
  if (argc == 4 && std::string(argv[1]) == "--write") {
    const auto bytes = write_logs(argv[2], std::atoi(argv[3]), g, t, planted);
    std::cout << argv[2] << ": " << argv[3] << " rank logs, " << t.nodes << " nodes each, " << bytes / 1e6
              << " MB; planted node " << t.planted_node << " on rank " << planted << '\n';
    return 0;
  }
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {256, 1024};
  const char* keep = std::getenv("GPARITY_SCALE_DIR");
  const fs::path root =
      keep != nullptr ? fs::path(keep)
                      : fs::temp_directory_path() / ("gparity-ranks-files-" + std::to_string(::getpid()));
  const int most = *std::max_element(counts.begin(), counts.end());
  const fs::path all = root / ("ranks" + std::to_string(most));
  if (!fs::exists(all / ("dedicated_log_torch_trace_rank_" + std::to_string(most - 1) + "_bench.log"))) {
    fs::remove_all(all);
    write_logs(all, most, g, t, planted);
  }
  std::cout << "graph ranks from files: " << t.nodes
            << "-node aot_joint_graph (the 2.11 FSDP2 joint graph repeated), "
            << "planted " << t.planted_node << " on rank " << planted << "; load: ";
  std::cout.flush();
  std::system("uptime");
  std::cout << "ranks     MB   wall s   CPU s  RSS MiB  exit  planted named   cat wall s\n";
  for (const int n : counts) {
    fs::path dir = all;
    if (n != most) {
      dir = root / ("ranks" + std::to_string(n));
      fs::create_directories(dir);
      for (int r = 0; r < n; ++r) {
        const std::string name = "dedicated_log_torch_trace_rank_" + std::to_string(r) + "_bench.log";
        if (!fs::exists(dir / name)) fs::create_hard_link(all / name, dir / name);
      }
    }
    std::uint64_t bytes = 0;
    for (const auto& e : fs::directory_iterator(dir)) bytes += e.file_size();
    const Timed floor = timed("cat " + dir.string() + "/*.log", root / "cat.time", "/dev/null");
    const fs::path out = root / ("report" + std::to_string(n) + ".txt");
    const Timed run =
        timed(std::string(GPARITY_EXE) + " graph ranks " + dir.string(), root / "ranks.time", out);
    const bool named = read_text(out).find(t.planted_node) != std::string::npos;
    std::printf("%5d %6.0f %8.2f %7.2f %8.0f %5d  %13s %12.2f\n", n, bytes / 1e6, run.wall, run.cpu,
                run.rss_kb / 1024.0, run.exit, n > planted ? (named ? "yes" : "NO") : "-", floor.wall);
    std::fflush(stdout);
  }
  if (keep == nullptr) fs::remove_all(root);
  return 0;
}
