#include "diff/kernels/kernel_sites.hpp"

#include <map>

#include "core/model/ops/kernel_launch.hpp"

namespace gparity::diff::kernels {

using model::ops::LaunchSite;
using model::ops::OutputCode;

namespace {

/// How a call site names what it launches, in the DebugMode record's terms: a Triton kernel by
/// its name; `extern_kernels.addmm` and `torch.ops.aten.addmm.default` as the op `addmm`.
std::string site_key(const LaunchSite& s) {
  std::string_view k = s.kernel;
  if (k.starts_with("extern_kernels.")) return std::string(ops::op_base_name(k.substr(15)));
  if (k.starts_with("torch.ops.")) {
    k.remove_prefix(10);
    const auto dot = k.find('.');
    if (dot == std::string_view::npos) return std::string(k);
    return std::string(ops::op_base_name(k.substr(dot + 1)));
  }
  return std::string(k);
}

std::string record_key(const model::ops::OpLog& log, const model::ops::OpRecord& r) {
  return model::ops::is_kernel(r) ? std::string(log.op_name(r))
                                  : std::string(ops::op_base_name(log.op_name(r)));
}

/// How many call sites past the cursor an op may match (a kernel may match any).
constexpr std::size_t kOpLookahead = 3;

class Mapper {
 public:
  explicit Mapper(const model::ops::RankProvenance& rank) : rank_(rank) {
    for (const auto& c : rank_.codes) {
      auto& keys = keys_[&c];
      for (const auto& s : c.launches) keys.push_back(site_key(s));
    }
  }

  KernelSite map(const model::ops::OpLog& log, const model::ops::OpRecord& r) {
    const std::string key = record_key(log, r);
    if (auto exact = by_source(log, r, key); exact.known()) return exact;
    const bool kernel = model::ops::is_kernel(r);
    if (current_ != nullptr)
      if (auto s = search(*current_, key, kernel ? SIZE_MAX : kOpLookahead); s.known()) return s;
    if (!kernel) return {};
    for (const auto& c : rank_.codes)
      if (auto s = search(c, key, SIZE_MAX); s.known()) return s;
    return {};
  }

 private:
  /// The site the record's `# File:` line names, when it launches this record.
  KernelSite by_source(const model::ops::OpLog& log, const model::ops::OpRecord& r, const std::string& key) {
    if (r.source == 0 || r.source >= log.sources.size()) return {};
    const auto& src = log.sources[r.source];
    const std::string_view file = log.str(src.file);
    for (const auto& c : rank_.codes) {
      if (c.path != file) continue;
      const auto& keys = keys_[&c];
      for (std::size_t i = 0; i < c.launches.size(); ++i) {
        if (c.launches[i].line != src.line || keys[i] != key) continue;
        return take(c, i);
      }
    }
    return {};
  }

  /// The first site of `key` at or after the code's cursor (at most `ahead` sites on), wrapping
  /// round to its start for a kernel (the graph ran again).
  KernelSite search(const OutputCode& c, const std::string& key, std::size_t ahead) {
    const auto& keys = keys_[&c];
    const std::size_t n = keys.size(), from = cursor_[&c];
    const std::size_t span = ahead == SIZE_MAX ? n : std::min(n, ahead + 1);
    for (std::size_t k = 0; k < span; ++k) {
      std::size_t i = from + k;
      if (i >= n) {
        if (ahead != SIZE_MAX) break;  // an op never wraps round
        i -= n;
      }
      if (keys[i] == key) return take(c, i);
    }
    return {};
  }

  KernelSite take(const OutputCode& c, std::size_t i) {
    cursor_[&c] = i + 1;
    current_ = &c;
    return {&c, &c.launches[i]};
  }

  const model::ops::RankProvenance& rank_;
  std::map<const OutputCode*, std::vector<std::string>> keys_;
  std::map<const OutputCode*, std::size_t> cursor_;
  const OutputCode* current_ = nullptr;
};

}  // namespace

std::vector<KernelSite> map_sites(const ops::OpSlice& s, const std::vector<std::uint32_t>& launches,
                                  const model::ops::RankProvenance* rank) {
  std::vector<KernelSite> out(launches.size());
  if (rank == nullptr) return out;
  Mapper m(*rank);
  for (std::size_t i = 0; i < launches.size(); ++i) out[i] = m.map(*s.log, s.at(launches[i]));
  return out;
}

}  // namespace gparity::diff::kernels
