#include "diff/graphs/rank_findings.hpp"

namespace gparity::diff {

std::string_view finding_class_name(FindingClass c) noexcept {
  switch (c) {
    case FindingClass::DeviceParametric: return "device-parametric";
    case FindingClass::RankParametric: return "rank-parametric";
    case FindingClass::ProcessGroupParametric: return "process-group-parametric";
    case FindingClass::Divergent: return "divergent";
  }
  return "divergent";
}

std::string_view verdict_name(GraphVerdict v) noexcept {
  switch (v) {
    case GraphVerdict::Identical: return "identical";
    case GraphVerdict::DeviceParametric: return "device-parametric";
    case GraphVerdict::RankParametric: return "rank-parametric";
    case GraphVerdict::ProcessGroupParametric: return "process-group-parametric";
    case GraphVerdict::Divergent: return "divergent";
  }
  return "divergent";
}

GraphVerdict verdict_of(FindingClass c) noexcept {
  switch (c) {
    case FindingClass::DeviceParametric: return GraphVerdict::DeviceParametric;
    case FindingClass::RankParametric: return GraphVerdict::RankParametric;
    case FindingClass::ProcessGroupParametric: return GraphVerdict::ProcessGroupParametric;
    case FindingClass::Divergent: return GraphVerdict::Divergent;
  }
  return GraphVerdict::Divergent;
}

}  // namespace gparity::diff
