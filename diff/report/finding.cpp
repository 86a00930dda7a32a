#include "diff/report/finding.hpp"

namespace gparity::diff {

std::string_view severity_name(Severity s) noexcept {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Incomplete: return "incomplete";
    case Severity::Divergence: return "divergence";
    case Severity::Error: return "error";
  }
  return "info";
}

std::string_view outcome_name(Check::Outcome o) noexcept {
  switch (o) {
    case Check::Outcome::Pass: return "pass";
    case Check::Outcome::Fail: return "fail";
    case Check::Outcome::Skipped: return "skipped";
    case Check::Outcome::Error: return "error";
  }
  return "pass";
}

std::string Location::text() const {
  std::string out;
  const auto add = [&out](const std::string& part) {
    if (part.empty()) return;
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (!source.empty()) add(line > 0 ? source + ":" + std::to_string(line) : source);
  if (rank) add("rank " + std::to_string(*rank));
  if (step) add("step " + std::to_string(*step));
  add(parameter);
  add(graph);
  add(node);
  return out;
}

nlohmann::json Location::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  if (rank) j["rank"] = *rank;
  if (step) j["step"] = *step;
  if (!parameter.empty()) j["parameter"] = parameter;
  if (!graph.empty()) j["graph"] = graph;
  if (!node.empty()) j["node"] = node;
  if (!source.empty()) j["source"] = source;
  if (line > 0) j["line"] = line;
  return j;
}

void FanOutConsumer::begin(const ReportHeader& h) {
  for (auto* t : targets_) t->begin(h);
}
void FanOutConsumer::finding(const Finding& f) {
  for (auto* t : targets_) t->finding(f);
}
void FanOutConsumer::check(const Check& c) {
  for (auto* t : targets_) t->check(c);
}
void FanOutConsumer::end(const Verdict& v) {
  for (auto* t : targets_) t->end(v);
}

int exit_code_for(Severity worst) noexcept {
  switch (worst) {
    case Severity::Error: return 2;
    case Severity::Divergence:
    case Severity::Incomplete: return 1;
    default: return 0;
  }
}

}  // namespace gparity::diff
