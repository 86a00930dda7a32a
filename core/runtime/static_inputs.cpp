#include "core/runtime/static_inputs.hpp"

#include <cstdio>
#include <map>
#include <string_view>

namespace gparity::runtime {

std::string address_text(std::uintptr_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Violation::text() const {
  const std::string what =
      kind == Kind::ArgChanged || kind == Kind::ArgMissing ? "argument '" : "static input '";
  switch (kind) {
    case Kind::Moved:
      return what + input + "' moved: captured at " + captured + ", now at " + now +
             " (the graphs still read and write the old address)";
    case Kind::Resized: return what + input + "' changed shape: captured " + captured + ", now " + now;
    case Kind::Retyped: return what + input + "' changed dtype: captured " + captured + ", now " + now;
    case Kind::Missing: return what + input + "' is gone (captured at " + captured + ")";
    case Kind::Unexpected: return what + input + "' was not there at capture time (now at " + now + ")";
    case Kind::ArgChanged: return what + input + "' changed: captured " + captured + ", now " + now;
    case Kind::ArgMissing: return what + input + "' is gone (captured " + captured + ")";
  }
  return what + input + "' changed";
}

std::vector<Violation> check_signature(const GraphSignature& captured, const GraphSignature& now) {
  using K = Violation::Kind;
  std::vector<Violation> out;
  std::map<std::string_view, const StaticTensor*> current;
  for (const auto& t : now.tensors) current.emplace(t.name, &t);
  for (const auto& c : captured.tensors) {
    const auto it = current.find(c.name);
    if (it == current.end()) {
      out.push_back({K::Missing, c.name, address_text(c.address), ""});
      continue;
    }
    const StaticTensor& n = *it->second;
    current.erase(it);
    // All three are checked: a tensor reallocated with another shape is reported twice.
    if (n.address != c.address)
      out.push_back({K::Moved, c.name, address_text(c.address), address_text(n.address)});
    if (n.shape != c.shape || n.bytes != c.bytes)
      out.push_back({K::Resized, c.name, shape_text(c.shape), shape_text(n.shape)});
    if (n.dtype != c.dtype) out.push_back({K::Retyped, c.name, c.dtype, n.dtype});
  }
  for (const auto& t : now.tensors)
    if (current.contains(t.name)) out.push_back({K::Unexpected, t.name, "", address_text(t.address)});

  std::map<std::string_view, const NonTensorArg*> args;
  for (const auto& a : now.args) args.emplace(a.name, &a);
  for (const auto& c : captured.args) {
    const auto it = args.find(c.name);
    if (it == args.end()) {
      out.push_back({K::ArgMissing, c.name, c.value, ""});
    } else if (it->second->value != c.value) {
      out.push_back({K::ArgChanged, c.name, c.value, it->second->value});
    }
  }
  return out;
}

void require_unchanged(const GraphSignature& captured, const GraphSignature& now, std::int64_t step) {
  const auto v = check_signature(captured, now);
  if (v.empty()) return;
  std::string msg =
      "CUDA graph check failed before the replay of step " + std::to_string(step) + ": " + v[0].text();
  if (v.size() > 1) msg += " (and " + std::to_string(v.size() - 1) + " more)";
  throw CudaGraphCheckFailure(msg);
}

void CopyStats::copied(std::int64_t copy_bytes) {
  ++pending_copies_;
  pending_bytes_ += copy_bytes;
}

void CopyStats::replayed() {
  ++replays;
  copies += pending_copies_;
  bytes += pending_bytes_;
  last_replay_copies = pending_copies_;
  last_replay_bytes = pending_bytes_;
  pending_copies_ = pending_bytes_ = 0;
}

double CopyStats::copies_per_replay() const noexcept {
  return replays ? static_cast<double>(copies) / static_cast<double>(replays) : 0.0;
}
double CopyStats::bytes_per_replay() const noexcept {
  return replays ? static_cast<double>(bytes) / static_cast<double>(replays) : 0.0;
}

}  // namespace gparity::runtime
