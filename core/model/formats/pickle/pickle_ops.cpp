#include "core/model/formats/pickle/pickle_ops.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "core/model/base/input_error.hpp"

namespace gparity::model::pickle {
namespace {

struct OpInfo {
  char code;
  const char* name;
};

// Every opcode of protocols 0 to 5 (Lib/pickletools.py, `opcodes`).
constexpr std::array<OpInfo, 68> kOps{{
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'M', "BININT2"},
    {'L', "LONG"},
    {'\x8a', "LONG1"},
    {'\x8b', "LONG4"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {'\x8e', "BINBYTES8"},
    {'\x96', "BYTEARRAY8"},
    {'N', "NONE"},
    {'\x88', "NEWTRUE"},
    {'\x89', "NEWFALSE"},
    {'V', "UNICODE"},
    {'\x8c', "SHORT_BINUNICODE"},
    {'X', "BINUNICODE"},
    {'\x8d', "BINUNICODE8"},
    {'G', "BINFLOAT"},
    {']', "EMPTY_LIST"},
    {'a', "APPEND"},
    {'e', "APPENDS"},
    {'l', "LIST"},
    {')', "EMPTY_TUPLE"},
    {'t', "TUPLE"},
    {'\x85', "TUPLE1"},
    {'\x86', "TUPLE2"},
    {'\x87', "TUPLE3"},
    {'}', "EMPTY_DICT"},
    {'d', "DICT"},
    {'s', "SETITEM"},
    {'u', "SETITEMS"},
    {'\x8f', "EMPTY_SET"},
    {'\x90', "ADDITEMS"},
    {'\x91', "FROZENSET"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'j', "LONG_BINGET"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'\x94', "MEMOIZE"},
    {'\x82', "EXT1"},
    {'\x83', "EXT2"},
    {'\x84', "EXT4"},
    {'c', "GLOBAL"},
    {'\x93', "STACK_GLOBAL"},
    {'R', "REDUCE"},
    {'b', "BUILD"},
    {'i', "INST"},
    {'o', "OBJ"},
    {'\x81', "NEWOBJ"},
    {'\x92', "NEWOBJ_EX"},
    {'\x80', "PROTO"},
    {'\x95', "FRAME"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'\x97', "NEXT_BUFFER"},
    {'\x98', "READONLY_BUFFER"},
}};

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | ((cp >> 18) & 0x07));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads `n` hex digits at s[i]; -1 when they are not all hex.
std::int64_t hex_at(std::string_view s, std::size_t i, std::size_t n) noexcept {
  if (i + n > s.size()) return -1;
  std::int64_t v = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const int d = hex_digit(s[i + k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

// Indexed by opcode byte: op_name runs once per opcode of every pickle read (a DCP checkpoint
// decodes one small pickle per chunk), so no search, and built at compile time (a function-local
// static would test its guard on every call).
constexpr auto kOpNames = [] {
  std::array<std::string_view, 256> t{};
  for (const auto& o : kOps) t[static_cast<unsigned char>(o.code)] = o.name;
  return t;
}();

std::string_view op_name(char code) noexcept {
  return kOpNames[static_cast<unsigned char>(code)];
}

void OpReader::fail(std::size_t offset, const std::string& problem) const {
  throw InputError(source_, "byte " + std::to_string(offset) + ": " + problem);
}

std::string_view OpReader::take(std::size_t n, std::size_t op_offset, const char* what) {
  if (n > bytes_.size() - pos_) {
    fail(op_offset, std::string(what) + " needs " + std::to_string(n) + " bytes but only " +
                        std::to_string(bytes_.size() - pos_) + " remain (truncated pickle)");
  }
  const std::string_view s(reinterpret_cast<const char*>(bytes_.data()) + pos_, n);
  pos_ += n;
  return s;
}

std::uint64_t OpReader::le(std::size_t n, std::size_t op_offset, const char* what) {
  const auto s = take(n, op_offset, what);
  std::uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>(s[i]);
  return v;
}

std::string_view OpReader::line(std::size_t op_offset, const char* what) {
  const std::string_view rest(reinterpret_cast<const char*>(bytes_.data()) + pos_, bytes_.size() - pos_);
  const auto nl = rest.find('\n');
  if (nl == std::string_view::npos) fail(op_offset, std::string(what) + ": no newline-terminated argument");
  pos_ += nl + 1;
  return rest.substr(0, nl);
}

Op OpReader::next() {
  if (at_end()) fail(pos_, "pickle ends without STOP (truncated?)");
  Op op;
  op.offset = pos_;
  op.code = static_cast<char>(bytes_[pos_++]);
  const auto name = op_name(op.code);
  if (name.empty()) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(op.code)));
    fail(op.offset, std::string("unknown opcode ") + hex);
  }
  const char* what = name.data();
  const auto int_of = [&](std::string_view s) {
    std::int64_t v = 0;
    const auto* b = s.data();
    if (!s.empty() && s.front() == '+') ++b;
    const auto r = std::from_chars(b, s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
    op.i = v;
    return true;
  };
  const auto bytes_arg = [&](std::size_t n) {
    op.kind = ArgKind::Bytes;
    op.text = std::string(take(n, op.offset, what));
  };
  const auto length = [&](std::size_t width) {
    const std::uint64_t n = le(width, op.offset, what);
    if (n > bytes_.size() - pos_) {
      fail(op.offset, std::string(what) + " declares " + std::to_string(n) + " bytes but only " +
                          std::to_string(bytes_.size() - pos_) + " remain (truncated pickle)");
    }
    return static_cast<std::size_t>(n);
  };
  switch (op.code) {
    case 'F': {
      const auto s = line(op.offset, what);
      op.kind = ArgKind::Float;
      const auto r = std::from_chars(s.data(), s.data() + s.size(), op.f);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail(op.offset, "FLOAT: malformed number");
      break;
    }
    case 'I': {
      const auto s = line(op.offset, what);
      if (s == "00" || s == "01") {
        op.kind = ArgKind::Bool;
        op.i = s == "01";
      } else {
        op.kind = ArgKind::Int;
        if (!int_of(s)) {
          op.kind = ArgKind::BigInt;
          op.text = std::string(s);
          if (s.empty() || s.find_first_not_of("+-0123456789") != std::string_view::npos)
            fail(op.offset, "INT: malformed integer");
        }
      }
      break;
    }
    case 'L': {
      auto s = line(op.offset, what);
      if (!s.empty() && s.back() == 'L') s.remove_suffix(1);
      op.kind = ArgKind::Int;
      if (!int_of(s)) {
        if (s.empty() || s.find_first_not_of("+-0123456789") != std::string_view::npos)
          fail(op.offset, "LONG: malformed integer");
        op.kind = ArgKind::BigInt;
        op.text = std::string(s);
      }
      break;
    }
    case 'J':
      op.kind = ArgKind::Int;
      op.i = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4, op.offset, what)));
      break;
    case 'K':
    case 'h':
    case 'q':
    case '\x82':
    case '\x80':
      op.kind = ArgKind::Int;
      op.i = static_cast<std::int64_t>(le(1, op.offset, what));
      break;
    case 'M':
    case '\x83':
      op.kind = ArgKind::Int;
      op.i = static_cast<std::int64_t>(le(2, op.offset, what));
      break;
    case 'j':
    case 'r':
    case '\x84':
      op.kind = ArgKind::Int;
      op.i = static_cast<std::int64_t>(le(4, op.offset, what));
      break;
    case '\x8a':
    case '\x8b': {
      const std::size_t n = length(op.code == '\x8a' ? 1 : 4);
      const auto s = take(n, op.offset, what);
      if (n <= 8) {
        // Little-endian two's complement, sign-extended from its top byte.
        std::uint64_t v = 0;
        for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>(s[i]);
        if (n > 0 && n < 8 && (static_cast<std::uint8_t>(s[n - 1]) & 0x80)) v |= ~std::uint64_t{0} << (8 * n);
        op.kind = ArgKind::Int;
        op.i = static_cast<std::int64_t>(v);
      } else {
        op.kind = ArgKind::BigInt;
        static constexpr char kHex[] = "0123456789abcdef";
        op.text = "0x";  // big-endian hex of the two's complement bytes
        for (std::size_t i = n; i-- > 0;) {
          const auto b = static_cast<std::uint8_t>(s[i]);
          op.text += kHex[b >> 4];
          op.text += kHex[b & 15];
        }
      }
      break;
    }
    case 'S': {
      // A Python repr: quoted, with backslash escapes.
      const auto s = line(op.offset, what);
      if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front())
        fail(op.offset, "STRING: argument is not a quoted string");
      op.kind = ArgKind::Bytes;
      const auto body = s.substr(1, s.size() - 2);
      for (std::size_t i = 0; i < body.size(); ++i) {
        if (body[i] != '\\' || i + 1 == body.size()) {
          op.text += body[i];
          continue;
        }
        const char c = body[++i];
        switch (c) {
          case 'n': op.text += '\n'; break;
          case 't': op.text += '\t'; break;
          case 'r': op.text += '\r'; break;
          case 'x': {
            const auto v = hex_at(body, i + 1, 2);
            if (v < 0) fail(op.offset, "STRING: malformed \\x escape");
            op.text += static_cast<char>(v);
            i += 2;
            break;
          }
          default: op.text += c;
        }
      }
      break;
    }
    case 'T': bytes_arg(length(4)); break;
    case 'U': bytes_arg(length(1)); break;
    case 'B': bytes_arg(length(4)); break;
    case 'C': bytes_arg(length(1)); break;
    case '\x8e':
    case '\x96': bytes_arg(length(8)); break;
    case 'V': {
      // raw-unicode-escape: bytes are Latin-1 code points, \uXXXX and \UXXXXXXXX escapes.
      const auto s = line(op.offset, what);
      op.kind = ArgKind::Text;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
          const std::size_t n = s[i + 1] == 'u' ? 4 : 8;
          const auto v = hex_at(s, i + 2, n);
          if (v < 0 || v > 0x10FFFF) fail(op.offset, "UNICODE: malformed escape");
          append_utf8(op.text, static_cast<std::uint32_t>(v));
          i += 1 + n;
        } else {
          append_utf8(op.text, static_cast<std::uint8_t>(s[i]));
        }
      }
      break;
    }
    case '\x8c':
      op.kind = ArgKind::Text;
      op.text = std::string(take(length(1), op.offset, what));
      break;
    case 'X':
      op.kind = ArgKind::Text;
      op.text = std::string(take(length(4), op.offset, what));
      break;
    case '\x8d':
      op.kind = ArgKind::Text;
      op.text = std::string(take(length(8), op.offset, what));
      break;
    case 'G': {
      const std::uint64_t be = le(8, op.offset, what);
      std::uint64_t bits = 0;  // the argument is big-endian
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | ((be >> (8 * k)) & 0xFF);
      op.kind = ArgKind::Float;
      std::memcpy(&op.f, &bits, sizeof bits);
      break;
    }
    case 'g':
    case 'p': {
      const auto s = line(op.offset, what);
      op.kind = ArgKind::Int;
      if (!int_of(s) || op.i < 0) fail(op.offset, std::string(what) + ": malformed memo index");
      break;
    }
    case 'c':
    case 'i':
      op.kind = ArgKind::TwoLines;
      op.text = std::string(line(op.offset, what));
      op.text2 = std::string(line(op.offset, what));
      break;
    case 'P':
      op.kind = ArgKind::Text;
      op.text = std::string(line(op.offset, what));
      break;
    case '\x95': {
      // FRAME: a length prefix for buffering only; the frame must fit in what is left.
      const std::uint64_t n = le(8, op.offset, what);
      if (n > bytes_.size() - pos_)
        fail(op.offset, "FRAME of " + std::to_string(n) + " bytes runs past the end");
      break;
    }
    default: break;
  }
  return op;
}

}  // namespace gparity::model::pickle
