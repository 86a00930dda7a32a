#include "core/model/formats/nccl_graph.hpp"

#include <expat.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "core/model/base/atomic_file.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/mapped_file.hpp"

namespace gparity::model {
namespace {

constexpr std::size_t kMaxDepth = 16;
constexpr std::size_t kMaxValue = 255;  // NCCL's MAX_STR_LEN: longer names or values fail there

// Attributes NCCL's ncclTopoGetGraphFromXmlSub reads with xmlGetAttrInt / xmlGetAttrFloat /
// kvConvertToInt: a missing one makes NCCL fail the whole init.
constexpr std::string_view kGraphInts[] = {"id", "pattern", "crossnic", "nchannels", "samechannels"};
constexpr std::string_view kGraphFloats[] = {"speedintra", "speedinter"};
constexpr std::string_view kLinkTypes[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"};

/// Builds the element tree from expat's callbacks; the first problem stops the parse.
struct TreeBuilder {
  XML_Parser parser = nullptr;
  std::string source;
  XmlElement root;
  bool have_root = false;
  std::vector<XmlElement*> stack;
  std::string error;
  std::int64_t error_line = 0;

  [[nodiscard]] std::int64_t line() const {
    return static_cast<std::int64_t>(XML_GetCurrentLineNumber(parser));
  }

  void fail(std::string what) {
    if (error.empty()) {
      error = std::move(what);
      error_line = line();
    }
    XML_StopParser(parser, XML_FALSE);
  }

  void start(const char* name, const char** atts) {
    if (stack.size() >= kMaxDepth) return fail("elements nested deeper than " + std::to_string(kMaxDepth));
    XmlElement e;
    e.name = name;
    e.line = line();
    if (e.name.size() > kMaxValue) return fail("element name longer than NCCL's limit of 255 characters");
    for (std::size_t i = 0; atts[i] && atts[i + 1]; i += 2) {
      std::string value = atts[i + 1];
      if (value.size() > kMaxValue)
        return fail("attribute " + std::string(atts[i]) + " of <" + e.name +
                    "> is longer than NCCL's limit of 255");
      // NCCL's reader knows no entities and ends a value at its quote.
      if (value.find_first_of("\"<>&\n\r") != std::string::npos)
        return fail("attribute " + std::string(atts[i]) + " of <" + e.name +
                    "> holds characters NCCL's reader cannot read (quote, <, >, & or a line break)");
      e.attrs.emplace_back(atts[i], std::move(value));
    }
    if (stack.empty()) {
      root = std::move(e);
      have_root = true;
      stack.push_back(&root);
      return;
    }
    auto& kids = stack.back()->children;
    kids.push_back(std::move(e));
    stack.push_back(&kids.back());
  }

  void end() {
    if (!stack.empty()) stack.pop_back();
  }

  void text(const char* s, int len) {
    for (int i = 0; i < len; ++i) {
      const char c = s[i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
        return fail("text inside <" + (stack.empty() ? std::string("?") : stack.back()->name) +
                    ">: NCCL's graph XML has only elements and attributes");
    }
  }

  static void on_start(void* self, const XML_Char* name, const XML_Char** atts) {
    static_cast<TreeBuilder*>(self)->start(name, atts);
  }
  static void on_end(void* self, const XML_Char* /*name*/) { static_cast<TreeBuilder*>(self)->end(); }
  static void on_text(void* self, const XML_Char* s, int len) {
    static_cast<TreeBuilder*>(self)->text(s, len);
  }
};

struct ParserDeleter {
  void operator()(XML_ParserStruct* p) const noexcept { XML_ParserFree(p); }
};

[[noreturn]] void bad(const std::string& source, std::int64_t line, const std::string& what) {
  throw InputError(source, line, what);
}

std::optional<std::int64_t> parse_int(std::string_view s, int base) {
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_float(std::string_view s) {
  if (s.empty()) return false;
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

const std::string& required_attr(const XmlElement& e, std::string_view key, const std::string& source) {
  const auto* v = e.attr(key);
  if (!v) bad(source, e.line, "<" + e.name + "> has no " + std::string(key) + "=\"...\" (NCCL requires it)");
  return *v;
}

int int_attr(const XmlElement& e, std::string_view key, const std::string& source) {
  const auto& v = required_attr(e, key, source);
  const auto x = parse_int(v, 10);
  if (!x || *x < 0 || *x > 1'000'000)
    bad(source, e.line,
        "<" + e.name + "> " + std::string(key) + "=\"" + v + "\" is not a non-negative integer");
  return static_cast<int>(*x);
}

/// The GPU a <gpu> names: its rank where given (NCCL then uses it), else its dev.
std::int64_t gpu_id(const XmlElement& gpu, const std::string& source) {
  if (const auto* r = gpu.attr("rank")) {
    const auto x = parse_int(*r, 10);
    if (!x || *x < 0) bad(source, gpu.line, "<gpu> rank=\"" + *r + "\" is not a non-negative integer");
    return *x;
  }
  return *parse_int(*gpu.attr("dev"), 16);
}

void validate_channel(const XmlElement& ch, const std::string& source) {
  if (ch.name != "channel") bad(source, ch.line, "<" + ch.name + "> inside <graph>: expected <channel>");
  std::set<std::int64_t> seen;
  bool gpu_seen = false, rank_seen = false, rank_missing = false;
  std::size_t nets = 0;
  for (const auto& n : ch.children) {
    if (n.name != "gpu" && n.name != "net")
      bad(source, n.line, "<" + n.name + "> inside <channel>: expected <gpu> or <net>");
    const auto* dev = n.attr("dev");
    if (!dev) bad(source, n.line, "<" + n.name + "> has no dev=\"...\" (NCCL requires it)");
    const auto x = parse_int(*dev, 16);
    if (!x || *x < 0)
      bad(source, n.line, "<" + n.name + "> dev=\"" + *dev + "\" is not a hexadecimal device number");
    if (n.name == "net") {
      ++nets;
      continue;
    }
    gpu_seen = true;
    (n.attr("rank") ? rank_seen : rank_missing) = true;
    if (!seen.insert(gpu_id(n, source)).second)
      bad(source, n.line, "GPU " + std::to_string(gpu_id(n, source)) + " appears twice in one channel");
  }
  if (!gpu_seen) bad(source, ch.line, "<channel> lists no <gpu>");
  if (rank_seen && rank_missing)
    bad(source, ch.line, "some <gpu> of this channel have rank=\"...\" and some do not");
  if (nets > 2)
    bad(source, ch.line, "<channel> has " + std::to_string(nets) + " <net> (at most 2: in and out)");
}

void validate_graph(const XmlElement& g, const std::string& source) {
  if (g.name != "graph") bad(source, g.line, "<" + g.name + "> inside <graphs>: expected <graph>");
  for (const auto k : kGraphInts) (void)int_attr(g, k, source);
  for (const auto k : kGraphFloats) {
    const auto& v = required_attr(g, k, source);
    if (!is_float(v)) bad(source, g.line, "<graph> " + std::string(k) + "=\"" + v + "\" is not a number");
  }
  for (const auto k : {std::string_view("typeintra"), std::string_view("typeinter")}) {
    const auto& v = required_attr(g, k, source);
    if (std::find(std::begin(kLinkTypes), std::end(kLinkTypes), v) == std::end(kLinkTypes))
      bad(source, g.line,
          "<graph> " + std::string(k) + "=\"" + v + "\" is not a link type NCCL knows (LOC, NVL, ...)");
  }
  const int n = int_attr(g, "nchannels", source);
  if (static_cast<std::size_t>(n) != g.children.size())
    bad(source, g.line,
        "<graph id=\"" + *g.attr("id") + "\"> says nchannels=\"" + std::to_string(n) + "\" but holds " +
            std::to_string(g.children.size()) + " <channel>");
  for (const auto& ch : g.children) validate_channel(ch, source);
}

void validate(const NcclGraphFile& f) {
  const auto& r = f.root;
  if (r.name != "graphs")
    bad(f.source, r.line,
        "the root element is <" + r.name + ">: an NCCL graph file starts with <graphs version=\"1\">");
  (void)int_attr(r, "version", f.source);
  std::set<int> ids;
  for (const auto& g : r.children) {
    validate_graph(g, f.source);
    if (!ids.insert(int_attr(g, "id", f.source)).second)
      bad(f.source, g.line, "two <graph> with id=\"" + *g.attr("id") + "\"");
  }
}

void write_element(std::ostringstream& out, const XmlElement& e, int indent) {
  out << std::string(static_cast<std::size_t>(indent), ' ') << '<' << e.name;
  for (const auto& [k, v] : e.attrs) out << ' ' << k << "=\"" << v << '"';
  if (e.children.empty()) {
    out << "/>\n";
    return;
  }
  out << ">\n";
  for (const auto& c : e.children) write_element(out, c, indent + 2);
  out << std::string(static_cast<std::size_t>(indent), ' ') << "</" << e.name << ">\n";
}

std::vector<std::int64_t> channel_gpus(const XmlElement& ch, const std::string& source) {
  std::vector<std::int64_t> out;
  for (const auto& n : ch.children)
    if (n.name == "gpu") out.push_back(gpu_id(n, source));
  return out;
}

}  // namespace

const std::string* XmlElement::attr(std::string_view key) const noexcept {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

NcclGraphFile parse_nccl_graph_xml(std::string_view text, const std::string& source) {
  std::unique_ptr<XML_ParserStruct, ParserDeleter> parser(XML_ParserCreate("UTF-8"));
  if (!parser) throw std::bad_alloc();
  TreeBuilder b;
  b.parser = parser.get();
  b.source = source;
  XML_SetUserData(parser.get(), &b);
  XML_SetElementHandler(parser.get(), &TreeBuilder::on_start, &TreeBuilder::on_end);
  XML_SetCharacterDataHandler(parser.get(), &TreeBuilder::on_text);
  if (text.size() > (std::size_t{1} << 30)) bad(source, 0, "larger than 1 GiB: not an NCCL graph file");
  const auto st = XML_Parse(parser.get(), text.data(), static_cast<int>(text.size()), XML_TRUE);
  if (!b.error.empty()) bad(source, b.error_line, b.error);
  if (st != XML_STATUS_OK && XML_GetErrorCode(parser.get()) == XML_ERROR_NO_ELEMENTS && !b.stack.empty()) {
    bad(source, static_cast<std::int64_t>(XML_GetCurrentLineNumber(parser.get())),
        "the file ends inside <" + b.stack.back()->name + "> (opened at line " +
            std::to_string(b.stack.back()->line) + "): truncated?");
  }
  if (st != XML_STATUS_OK) {
    bad(source, static_cast<std::int64_t>(XML_GetCurrentLineNumber(parser.get())),
        std::string("not well-formed XML: ") + XML_ErrorString(XML_GetErrorCode(parser.get())));
  }
  if (!b.have_root) bad(source, 0, "empty: no <graphs> element");
  NcclGraphFile f{source, std::move(b.root)};
  validate(f);
  return f;
}

NcclGraphFile read_nccl_graph_file(const std::filesystem::path& path) {
  const MappedFile m(path.string());
  return parse_nccl_graph_xml(m.text(), path.string());
}

std::vector<NcclGraphView> NcclGraphFile::graphs() const {
  std::vector<NcclGraphView> out;
  for (const auto& g : root.children) {
    NcclGraphView v;
    v.id = int_attr(g, "id", source);
    v.pattern = int_attr(g, "pattern", source);
    v.nchannels = int_attr(g, "nchannels", source);
    v.speed_intra = *g.attr("speedintra");
    v.speed_inter = *g.attr("speedinter");
    v.line = g.line;
    for (const auto& ch : g.children) v.channels.push_back({channel_gpus(ch, source), ch.line});
    out.push_back(std::move(v));
  }
  return out;
}

const XmlElement* NcclGraphFile::ring_graph() const noexcept {
  for (const auto& g : root.children) {
    const auto* p = g.attr("pattern");
    if (p && parse_int(*p, 10) == kNcclPatternRing && !g.children.empty()) return &g;
  }
  return nullptr;
}

std::string write_nccl_graph_xml(const NcclGraphFile& f) {
  std::ostringstream out;
  write_element(out, f.root, 0);
  return out.str();
}

std::optional<RingPattern> parse_ring_pattern(std::string_view text) noexcept {
  if (text == "reverse-odd") return RingPattern::ReverseOdd;
  if (text == "rotate") return RingPattern::Rotate;
  if (text == "random") return RingPattern::Random;
  return std::nullopt;
}

std::string_view ring_pattern_name(RingPattern p) noexcept {
  switch (p) {
    case RingPattern::ReverseOdd: return "reverse-odd";
    case RingPattern::Rotate: return "rotate";
    case RingPattern::Random: return "random";
  }
  return "?";
}

std::string ring_pattern_names() {
  return "reverse-odd, rotate, random";
}

std::vector<std::size_t> ring_permutation(RingPattern p, std::size_t channel, std::size_t n,
                                          std::uint64_t seed) {
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = i;
  if (n < 3) return perm;  // one GPU or two: every order is the same ring
  switch (p) {
    case RingPattern::ReverseOdd:
      if (channel % 2 == 1) std::reverse(perm.begin() + 1, perm.end());
      break;
    case RingPattern::Rotate:
      std::rotate(perm.begin() + 1, perm.begin() + 1 + static_cast<std::ptrdiff_t>(channel % (n - 1)),
                  perm.end());
      break;
    case RingPattern::Random: {
      // Fisher-Yates over mt19937_64 (fully specified by the standard, unlike std::shuffle's use
      // of it), so one seed gives one file on every machine.
      std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + channel);
      for (std::size_t i = n - 1; i > 1; --i) {
        const std::size_t j = 1 + static_cast<std::size_t>(rng() % i);  // in [1, i]
        std::swap(perm[i], perm[j]);
      }
      break;
    }
  }
  return perm;
}

std::vector<std::int64_t> canonical_ring(const std::vector<std::int64_t>& order) {
  if (order.empty()) return order;
  const auto first = std::min_element(order.begin(), order.end());
  std::vector<std::int64_t> out(first, order.end());
  out.insert(out.end(), order.begin(), first);
  return out;
}

RingRewrite rewrite_ring_orders(NcclGraphFile& f, RingPattern p, std::uint64_t seed, int expected_gpus) {
  XmlElement* ring = nullptr;
  for (auto& g : f.root.children) {
    if (g.attr("pattern") && parse_int(*g.attr("pattern"), 10) == kNcclPatternRing && !g.children.empty()) {
      ring = &g;
      break;
    }
  }
  if (!ring)
    bad(f.source, f.root.line,
        "no ring graph (pattern=\"4\") with channels: dump the graph with NCCL_ALGO=Ring set, after a "
        "collective "
        "has run");
  RingRewrite rw;
  rw.graph_id = int_attr(*ring, "id", f.source);
  const auto first = channel_gpus(ring->children.front(), f.source);
  auto sorted_first = first;
  std::sort(sorted_first.begin(), sorted_first.end());
  if (expected_gpus > 0 && first.size() != static_cast<std::size_t>(expected_gpus)) {
    bad(f.source, ring->children.front().line,
        "the ring channels hold " + std::to_string(first.size()) + " GPUs but --ranks is " +
            std::to_string(expected_gpus) + ": dump the graph from a run with as many ranks per node");
  }
  std::set<std::vector<std::int64_t>> distinct;
  for (std::size_t c = 0; c < ring->children.size(); ++c) {
    auto& ch = ring->children[c];
    const auto before = channel_gpus(ch, f.source);
    auto sorted = before;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != sorted_first)
      bad(f.source, ch.line, "this ring channel's GPUs are not the same set as the first channel's");
    // The GPU elements move as a whole (dev and rank stay paired); nets keep their places.
    std::vector<std::size_t> slots;
    std::vector<XmlElement> gpus;
    for (std::size_t i = 0; i < ch.children.size(); ++i) {
      if (ch.children[i].name != "gpu") continue;
      slots.push_back(i);
      gpus.push_back(ch.children[i]);
    }
    const auto perm = ring_permutation(p, c, gpus.size(), seed);
    for (std::size_t i = 0; i < slots.size(); ++i) ch.children[slots[i]] = gpus[perm[i]];
    auto after = channel_gpus(ch, f.source);
    distinct.insert(canonical_ring(after));
    rw.before.push_back(before);
    rw.after.push_back(std::move(after));
  }
  rw.distinct_after = distinct.size();
  // The channels now differ: NCCL's own search sets samechannels to 0 for such graphs.
  for (auto& [k, v] : ring->attrs)
    if (k == "samechannels" && rw.distinct_after > 1) v = "0";
  return rw;
}

RingRewrite write_ring_orders_file(const std::filesystem::path& dump, const std::filesystem::path& out,
                                   RingPattern p, std::uint64_t seed, int expected_gpus) {
  auto f = read_nccl_graph_file(dump);
  auto rw = rewrite_ring_orders(f, p, seed, expected_gpus);
  write_file_atomically(out, write_nccl_graph_xml(f));
  return rw;
}

}  // namespace gparity::model
