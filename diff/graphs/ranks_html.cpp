#include "diff/graphs/ranks_html.hpp"

#include "diff/graphs/report_html.hpp"

namespace gparity::diff {
namespace {

std::string cls_css(FindingClass c) {
  switch (c) {
    case FindingClass::DeviceParametric: return "dev";
    case FindingClass::RankParametric: return "rank";
    case FindingClass::ProcessGroupParametric: return "pg";
    case FindingClass::Divergent: return "div";
  }
  return "div";
}

void finding_row(std::string& h, const RankFinding& f) {
  std::string values;
  for (const auto& v : f.values) values += "r" + std::to_string(v.rank) + "=" + v.text + "\n";
  std::string fit = f.function ? f.function->text() : "";
  if (f.function && !f.function->inferred_mesh.empty()) fit += " (mesh " + f.function->inferred_mesh + ")";
  if (!f.note.empty()) fit += (fit.empty() ? "" : "; ") + f.note;
  h += "<tr><td class=\"" + cls_css(f.cls) + "\">" + html_escape(finding_class_name(f.cls)) + "</td><td>" +
       html_escape(f.compile) + "</td><td>" + html_escape(f.node) +
       (f.target.empty() ? "" : " <small>(" + html_escape(f.target) + ")</small>") + "</td><td>" +
       html_escape(f.field) + "</td><td><pre>" + html_escape(values) + "</pre></td><td>" + html_escape(fit) +
       "</td><td>" + (f.graph_line > 0 ? std::to_string(f.graph_line) : "") +
       (f.source.empty() ? "" : " " + html_escape(f.source)) + "</td></tr>\n";
}

const char* kHead =
    "<tr><th>class</th><th>compile</th><th>node / operation</th><th>field</th><th>per rank</th>"
    "<th>function / note</th><th>line</th></tr>\n";

}  // namespace

std::string ranks_html(const TraceRanksReport& r, const std::string& path) {
  std::string h =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gparity graph ranks</title><style>"
      "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1em}"
      "td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}pre{margin:0}"
      ".dev{background:#add0ff}.rank{background:#ffc478}.pg{background:#c8aaff}.div{background:#ff8c8c}"
      "</style></head><body>\n";
  h += "<h1>gparity graph ranks</h1>\n<p>" + html_escape(path) + ": " + std::to_string(r.ranks.size()) +
       " ranks, " + std::to_string(r.graphs.size()) + " graphs; verdict <b>" +
       html_escape(verdict_name(r.verdict)) + "</b></p>\n<p>mesh: " +
       html_escape(r.mesh.empty() ? "none found (world-size factorizations tried)" : r.mesh) + "</p>\n";
  if (!r.fact_groups.empty()) {
    h += "<h2>Rank groups</h2>\n<table><tr><th>fact</th><th>ranks</th><th>sequence</th></tr>\n";
    for (const auto& fg : r.fact_groups) {
      for (const auto& g : fg.groups) {
        std::string ranks;
        for (const auto x : g.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(x);
        h += "<tr><td>" + html_escape(fg.fact) + "</td><td>" + ranks + "</td><td>" + html_escape(g.sequence) +
             "</td></tr>\n";
      }
    }
    h += "</table>\n";
  }
  if (!r.findings.empty()) {
    h += "<h2>Trace facts</h2>\n<table>";
    h += kHead;
    for (const auto& f : r.findings) finding_row(h, f);
    h += "</table>\n";
  }
  h += "<h2>Graphs</h2>\n";
  for (const auto& g : r.graphs) {
    h += "<h3>" + html_escape(g.compile.text() + " " + g.kind) +
         (g.occurrence > 0 ? " #" + std::to_string(g.occurrence) : "") + ": " +
         html_escape(verdict_name(g.classification.verdict)) + "</h3>\n";
    if (g.classification.findings.empty()) continue;
    h += "<table>";
    h += kHead;
    for (const auto& f : g.classification.findings) finding_row(h, f);
    h += "</table>\n";
  }
  if (!r.problems.empty()) {
    h += "<h2>Problems</h2>\n<ul>\n";
    for (const auto& p : r.problems) h += "<li>" + html_escape(p) + "</li>\n";
    h += "</ul>\n";
  }
  return h + "</body></html>\n";
}

}  // namespace gparity::diff
