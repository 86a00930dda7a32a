#include "core/model/ops/kernel_launch.hpp"

namespace gparity::model::ops {

std::string_view arg_role_name(ArgRole r) noexcept {
  switch (r) {
    case ArgRole::In: return "in";
    case ArgRole::Out: return "out";
    case ArgRole::InOut: return "in_out";
    case ArgRole::Unnamed: return "unnamed";
  }
  return "unnamed";
}

std::optional<ArgRole> arg_role_from_name(std::string_view name) noexcept {
  for (const auto r : {ArgRole::In, ArgRole::Out, ArgRole::InOut, ArgRole::Unnamed})
    if (arg_role_name(r) == name) return r;
  return std::nullopt;
}

ArgRole launch_arg_role(const OpLog& log, const TensorRef& t) noexcept {
  return t.role ? *t.role : kernel_arg_role(log.str(t.name));
}

ArgRole kernel_arg_role(std::string_view name) noexcept {
  if (name.starts_with("in_out_ptr")) return ArgRole::InOut;
  if (name.starts_with("out_ptr")) return ArgRole::Out;
  if (name.starts_with("in_ptr")) return ArgRole::In;
  return ArgRole::Unnamed;
}

std::string_view kernel_family(std::string_view name) noexcept {
  std::size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  if (end == name.size() || end < 2 || name[end - 1] != '_') return name;
  return name.substr(0, end - 1);
}

std::int64_t launch_line(const OpLog& log, const OpRecord& r) {
  if (r.source == 0 || r.source >= log.sources.size()) return 0;
  const SourceLoc& s = log.sources[r.source];
  const std::string_view code = log.str(s.code);
  const std::string_view name = log.op_name(r);
  if (!code.starts_with(name) || code.substr(name.size(), 5) != ".run(") return 0;
  return s.line;
}

}  // namespace gparity::model::ops
