#include "core/model/formats/format_detect.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>

#include "core/model/base/crc32c.hpp"
#include "core/model/formats/torch_trace.hpp"

namespace gparity::model {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kHeadBytes = 64 * 1024;

std::uint64_t le64(const unsigned char* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint32_t le32(const unsigned char* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// Top-level keys of a JSON object, as far as `text` goes (a head cut short stops the parse, the
/// keys seen so far stay), and the string value of "format". No document is built, so a deeply
/// nested head costs no recursion.
class TopKeys final : public nlohmann::json::json_sax_t {
 public:
  std::vector<std::string> keys;
  std::string format_value;
  bool whole = false;  // the text parsed to its end as one JSON value

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& s) override {
    if (depth_ == 1 && last_key_ == "format") format_value = s;
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      last_key_ = k;
      if (keys.size() < 64) keys.push_back(k);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override {
    return false;
  }
  [[nodiscard]] bool has(std::string_view k) const {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  }

 private:
  bool value() {
    if (depth_ == 1) last_key_.clear();
    return true;
  }
  bool open() {
    if (depth_ == 1) last_key_.clear();
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  int depth_ = 0;
  std::string last_key_;
};

bool valid_utf8(std::string_view s, bool cut_short) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0) return false;
    if (i + n > s.size()) return cut_short;  // a character cut by the head's end
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

std::string quoted_keys(const std::vector<std::string>& keys) {
  std::string s;
  for (std::size_t i = 0; i < keys.size() && i < 5; ++i) {
    std::string k = keys[i].substr(0, 40);
    for (auto& ch : k)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    s += (i ? ", \"" : "\"") + k + "\"";
  }
  if (keys.size() > 5) s += ", ...";
  return s;
}

FormatDetection detect_json(std::string_view head, bool cut_short) {
  const auto start = head.find_first_not_of(" \t\r\n");
  // JSON lines: a first line that is a whole object, and more after it.
  const auto nl = head.find('\n', start);
  if (nl != std::string_view::npos && head.find_first_not_of(" \t\r\n", nl) != std::string_view::npos) {
    const auto first = head.substr(start, nl - start);
    if (nlohmann::json::accept(first)) return {Format::JsonLines, "one JSON object a line"};
  }
  TopKeys keys;
  keys.whole =
      nlohmann::json::sax_parse(head.substr(start), &keys, nlohmann::json::input_format_t::json, false);
  // '{' first claims it for the JSON readers even when it does not parse: they name the damage
  // with its line and column, which a "not JSON" here could not.
  if (!keys.whole && !cut_short && keys.keys.empty())
    return {Format::Json, "a '{' that does not parse as JSON"};
  if (keys.format_value == "gparity.graph")
    return {Format::GraphJson, "JSON with \"format\": \"gparity.graph\""};
  for (const char* k : {"entries", "pg_config", "comm_lib_version"}) {
    if (keys.has(k)) return {Format::FlightRecorderJson, std::string("JSON object with \"") + k + "\""};
  }
  if (keys.keys.empty()) return {Format::Json, "JSON object with no keys"};
  return {Format::Json, "JSON object with keys " + quoted_keys(keys.keys)};
}

FormatDetection detect_folder(const fs::path& dir) {
  std::error_code ec;
  const auto meta = dir / ".metadata";
  if (!fs::is_regular_file(meta, ec)) return {Format::Folder, "a folder"};
  std::ifstream in(meta, std::ios::binary);
  unsigned char b[2] = {0, 0};
  in.read(reinterpret_cast<char*>(b), 2);
  std::size_t distcp = 0;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".distcp") ++distcp;
  if (in.gcount() == 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
    return {Format::DcpCheckpoint, "a .metadata pickle and " + std::to_string(distcp) + " .distcp files"};
  return {Format::Folder, "a folder whose .metadata is not a pickle"};
}

}  // namespace

std::string_view format_name(Format f) noexcept {
  switch (f) {
    case Format::Missing: return "missing";
    case Format::Unreadable: return "unreadable";
    case Format::Folder: return "folder";
    case Format::DcpCheckpoint: return "DCP checkpoint folder";
    case Format::Empty: return "empty file";
    case Format::Pickle: return "pickle";
    case Format::Zip: return "zip archive";
    case Format::Safetensors: return "safetensors file";
    case Format::TensorBoard: return "TensorBoard event file";
    case Format::TorchTrace: return "TORCH_TRACE log";
    case Format::FlightRecorderJson: return "Flight Recorder JSON dump";
    case Format::GraphJson: return "gparity graph JSON";
    case Format::Json: return "JSON";
    case Format::JsonLines: return "JSON lines";
    case Format::Text: return "text";
    case Format::Binary: return "binary data";
  }
  return "binary data";
}

std::string FormatDetection::describe() const {
  const std::string name(format_name(format));
  return reason.empty() ? name : name + " (" + reason + ")";
}

FormatDetection detect_format(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    return {Format::Missing,
            ec && ec != std::errc::no_such_file_or_directory ? ec.message() : "no such file or directory"};
  if (fs::is_directory(st)) return detect_folder(path);
  const auto size = fs::file_size(path, ec);
  if (ec) return {Format::Unreadable, ec.message()};
  if (size == 0) return {Format::Empty, "0 bytes"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {Format::Unreadable, std::strerror(errno)};
  std::string head(static_cast<std::size_t>(std::min<std::uintmax_t>(size, kHeadBytes)), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.empty()) return {Format::Unreadable, "cannot read its first bytes"};
  const bool cut_short = head.size() < size;
  const auto* u = reinterpret_cast<const unsigned char*>(head.data());

  if (head.size() >= 2 && u[0] == 0x80 && u[1] >= 2 && u[1] <= 5)
    return {Format::Pickle, "pickle protocol " + std::to_string(u[1])};
  if (head.starts_with(std::string_view("PK\x03\x04", 4))) return {Format::Zip, "zip local file header"};
  // The TFRecord test first: its CRC is a 32-bit check, while a TFRecord's own first bytes can
  // pass for a safetensors header length followed by '{' one time in 256.
  if (head.size() >= 12 &&
      le32(u + 8) == mask_crc32c(crc32c(std::span(reinterpret_cast<const std::byte*>(head.data()), 8)))) {
    return {Format::TensorBoard,
            "TFRecord of " + std::to_string(le64(u)) + " bytes with a matching masked CRC-32C"};
  }
  if (head.size() >= 9) {
    const std::uint64_t n = le64(u);
    if (head[8] == '{' && n >= 2 && n <= size - 8)
      return {Format::Safetensors, "header of " + std::to_string(n) + " bytes"};
  }
  if (looks_like_torch_trace(head)) return {Format::TorchTrace, "glog-prefixed envelope"};
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] == '{' && valid_utf8(head, cut_short))
    return detect_json(head, cut_short);
  if (valid_utf8(head, cut_short)) {
    if (first == std::string::npos) return {Format::Text, "only blank space"};
    return {Format::Text, "UTF-8 text"};
  }
  return {Format::Binary, "neither UTF-8 text nor a known header"};
}

std::string formats_text(std::span<const std::string_view> tried) {
  std::string s;
  for (const auto t : tried) {
    if (!s.empty()) s += ", ";
    s += t;
  }
  return s;
}

InputError unrecognized_input(const std::string& path, const FormatDetection& d,
                              std::span<const std::string_view> tried) {
  return InputError(path, d.describe() + "; formats tried: " + formats_text(tried));
}

}  // namespace gparity::model
