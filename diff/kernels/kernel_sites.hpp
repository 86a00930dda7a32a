#pragma once
// Where each launch of a step came from (docs/ops.md, "Inductor kernels"): the output code's
// call site (model::ops::LaunchSite) that launched it, and through it the kernel's source, launch
// config and provenance (post-grad nodes, pre-grad nodes, user frames). A launch whose `# File:`
// line names an output code and a call site there is that site; the others (DebugMode prints a
// source line only when it changes: a backward's launches show none) follow the call sites in
// order: per output code a cursor, a kernel matched by name from it (wrapping round for the
// graph's next run), an op (extern kernel, fallback op) only when it is the next call site or
// one of the few after it, so that eager code around the compiled region never takes one.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/ops/inductor_provenance.hpp"
#include "diff/ops/op_align.hpp"

namespace gparity::diff::kernels {

struct KernelSite {
  const model::ops::OutputCode* code = nullptr;
  const model::ops::LaunchSite* site = nullptr;
  [[nodiscard]] bool known() const noexcept { return site != nullptr; }
  [[nodiscard]] const model::ops::KernelOrigin* origin() const {
    return site ? code->origin_of(*site) : nullptr;
  }
  [[nodiscard]] const model::ops::KernelSource* source() const {
    return site ? code->source_of(site->kernel) : nullptr;
  }
  [[nodiscard]] const std::string* config() const { return site ? code->config_of(site->kernel) : nullptr; }
};

/// The call site of each launch (`launches`: slice positions, in order); unknown where the rank
/// has no provenance or nothing matches.
std::vector<KernelSite> map_sites(const ops::OpSlice& s, const std::vector<std::uint32_t>& launches,
                                  const model::ops::RankProvenance* rank);

}  // namespace gparity::diff::kernels
