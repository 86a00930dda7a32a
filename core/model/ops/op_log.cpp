#include "core/model/ops/op_log.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>

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

std::string_view unhashed_name(Unhashed u) noexcept {
  switch (u) {
    case Unhashed::No: return "";
    case Unhashed::RngState: return "rng_state";
    case Unhashed::Debug: return "debug";
    case Unhashed::Uninitialized: return "uninitialized";
    case Unhashed::Captured: return "captured";
  }
  return "";
}

Unhashed unhashed_from_name(std::string_view name) noexcept {
  for (const auto u : {Unhashed::RngState, Unhashed::Debug, Unhashed::Uninitialized, Unhashed::Captured})
    if (name == unhashed_name(u)) return u;
  return Unhashed::No;
}

bool allocates_uninitialized(std::string_view op) noexcept {
  if (op.starts_with("aten::")) op.remove_prefix(6);
  if (const auto dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  for (const std::string_view e :
       {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"})
    if (op == e) return true;
  return false;
}

Unhashed unhashed_return(std::string_view return_name) noexcept {
  for (const std::string_view rng : {"philox_seed", "philox_offset", "rng_state", "unused", "seed", "offset"})
    if (return_name == rng) return Unhashed::RngState;
  return return_name == "debug_attn_mask" ? Unhashed::Debug : Unhashed::No;
}

std::vector<std::string_view> attention_returns(std::string_view op) {
  if (op.starts_with("aten::")) op.remove_prefix(6);
  if (const auto dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  // torch 2.11 native_functions.yaml. Non-tensor returns (SymInt) keep their place: DebugMode
  // prints every return.
  static constexpr std::string_view kSdpaFused[] = {"output",      "logsumexp",     "cum_seq_q",
                                                    "cum_seq_k",   "max_q",         "max_k",
                                                    "philox_seed", "philox_offset", "debug_attn_mask"};
  static constexpr std::string_view kEfficient[] = {"output", "log_sumexp", "philox_seed", "philox_offset"};
  static constexpr std::string_view kEfficientForward[] = {
      "output", "logsumexp", "philox_seed", "philox_offset", "max_seqlen_batch_q", "max_seqlen_batch_k"};
  static constexpr std::string_view kFlashForward[] = {"output", "softmax_logsumexp", "rng_state", "unused",
                                                       "debug_attn_mask"};
  if (op == "_scaled_dot_product_cudnn_attention" || op == "_scaled_dot_product_flash_attention" ||
      op == "_scaled_dot_product_fused_attention_overrideable")
    return {std::begin(kSdpaFused), std::end(kSdpaFused)};
  if (op == "_scaled_dot_product_efficient_attention") return {std::begin(kEfficient), std::end(kEfficient)};
  if (op == "_efficient_attention_forward")
    return {std::begin(kEfficientForward), std::end(kEfficientForward)};
  if (op == "_flash_attention_forward") return {std::begin(kFlashForward), std::end(kFlashForward)};
  return {};
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
