#include "tests/reliability/hostile/builders.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/temp_dir.hpp"

namespace gparity::testing::hostile {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string write_file(const fs::path& p, std::string_view bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return p.string();
}

std::string copy_dir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy(from, to, fs::copy_options::recursive);
  return to.string();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string le_bytes(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string deep_json(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::vector<std::size_t> spread(const std::vector<std::size_t>& points, std::size_t count) {
  if (points.size() <= count) return points;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(points[i * (points.size() - 1) / (count - 1)]);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::size_t> line_boundaries(const std::string& text) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 1 < text.size(); ++i)
    if (text[i] == '\n') out.push_back(i + 1);
  return out;
}

Variant one(Vars vars, std::string label) {
  return {std::move(label), std::move(vars), {}};
}

std::vector<Variant> file_cuts(const fs::path& d, const std::string& name, const std::string& text,
                               const std::vector<std::size_t>& cuts) {
  std::vector<Variant> out;
  for (const auto cut : cuts) {
    if (cut == 0) continue;
    const auto file = d / ("cut" + std::to_string(cut)) / name;
    out.push_back(one({{"in", write_file(file, text.substr(0, cut))}}, "cut at byte " + std::to_string(cut)));
  }
  return out;
}

// ---- 100 MB lines ----------------------------------------------------------------------------

const fs::path& shared_dir() {
  static const TempDir dir;
  return dir.path();
}

std::string hundred_mb_of(char c) {
  return std::string(100U << 20, c);
}

// ---- pickles --------------------------------------------------------------------------------

std::string bin_unicode(std::string_view s) {
  return "X" + le_bytes(s.size(), 4) + std::string(s);
}

std::string reduce_call(const std::string& module, const std::string& name, const std::string& marker,
                        bool stack_global) {
  std::string s;
  if (stack_global) {
    s += "\x8c" + le_bytes(module.size(), 1) + module + "\x8c" + le_bytes(name.size(), 1) + name + "\x93";
  } else {
    s += "c" + module + "\n" + name + "\n";
  }
  if (name == "eval") return s + "(" + bin_unicode("open('" + marker + "', 'w')") + "tR";
  if (name == "Popen") return s + "((" + bin_unicode("touch") + bin_unicode(marker) + "ltR";
  return s + "(" + bin_unicode("touch " + marker) + "tR";
}

const std::vector<Callable> kCallables = {{"os", "system", false},
                                          {"os", "system", true},
                                          {"builtins", "eval", false},
                                          {"subprocess", "Popen", false}};

std::string length_claim() {
  return "\x8d" + le_bytes(1ULL << 40, 8) + "abc";
}

// ---- FX text --------------------------------------------------------------------------------

std::string fx_module(const std::string& body) {
  return "class M(torch.nn.Module):\n    def forward(self, x: \"f32[4][1]cpu\"):\n" + body +
         "        return (y,)\n";
}

}  // namespace gparity::testing::hostile
