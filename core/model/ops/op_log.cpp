#include "core/model/ops/op_log.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

namespace gparity::model::ops {

std::size_t StringTable::Hash::operator()(std::string_view s) const noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x94d049bb133111ebull;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

StringTable::StringTable() {
  views_.emplace_back();
  index_.emplace(std::string_view(), 0);
}

std::uint32_t StringTable::intern(std::string_view s) {
  const std::size_t h = Hash{}(s);
  Recent& slot = recent_[h & (kRecent - 1)];
  if (slot.text == s && (slot.id != 0 || s.empty())) return slot.id;
  if (const auto it = index_.find(s); it != index_.end()) {
    slot = {it->first, it->second};
    return it->second;
  }
  const std::string& stored = storage_.emplace_back(s);
  const std::string_view v = stored;
  const auto id = static_cast<std::uint32_t>(views_.size());
  views_.push_back(v);
  index_.emplace(v, id);
  slot = {v, id};
  return id;
}

std::optional<std::uint32_t> StringTable::find(std::string_view s) const {
  if (const auto it = index_.find(s); it != index_.end()) return it->second;
  return std::nullopt;
}

std::string HashSpec::text() const {
  if (functions.empty()) return "none";
  std::string out;
  for (const auto& f : functions) {
    if (!out.empty()) out += '+';
    out += f;
  }
  return out;
}

int HashSpec::index_of(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < functions.size(); ++i) {
    if (functions[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string_view record_kind_name(RecordKind k) noexcept {
  switch (k) {
    case RecordKind::Op: return "op";
    case RecordKind::TorchFunction: return "torch_function";
    case RecordKind::Redistribute: return "redistribute";
    case RecordKind::Triton: return "triton";
  }
  return "op";
}

std::string_view phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
    case Phase::Unknown: return "unknown";
  }
  return "unknown";
}

std::string OpLog::source_text(const OpRecord& r) const {
  if (r.source == 0 || r.source >= sources.size()) return {};
  const SourceLoc& s = sources[r.source];
  std::string out(str(s.file));
  if (s.line > 0) out += ':' + std::to_string(s.line);
  return out;
}

std::string OpLog::tensor_text(const TensorRef& t) const {
  std::string out(str(t.dtype));
  if (t.dtype != 0 || t.shape != 0) {
    out += '[';
    out += str(t.shape);
    out += ']';
  }
  if (t.placement != 0) {
    out += "| ";
    out += str(t.placement);
  }
  return out;
}

std::string OpLog::hash_text(const HashValue& h) const {
  switch (h.kind) {
    case HashValue::Kind::Int: return std::to_string(h.bits);
    case HashValue::Kind::Float: {
      const double d = std::bit_cast<double>(h.bits);
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, r.ptr);
    }
    case HashValue::Kind::Text: return std::string(str(static_cast<std::uint32_t>(h.bits)));
  }
  return {};
}

}  // namespace gparity::model::ops
