#include "diff/graphs/report_html.hpp"

#include <vector>

#include "diff/report/reporters.hpp"

namespace gparity::diff {

using model::Graph;
using model::NodeId;

// HTML5 reads every XML entity, so the JUnit reporter's escaping serves both.
std::string html_escape(std::string_view text) {
  return xml_escape(text);
}

namespace {

std::string node_line(const Graph& g, NodeId n) {
  const auto& node = g.node(n);
  std::string s = std::string(g.str(node.name));
  const auto m = meta_text(g, node.meta);
  if (!m.empty()) s += ": \"" + m + "\"";
  s += " = " + std::string(g.str(node.target)) + "(";
  for (std::size_t i = 0; i < node.args.size(); ++i) s += (i ? ", " : "") + value_text(g, node.args[i]);
  for (std::size_t i = 0; i < node.kwargs.size(); ++i)
    s += ((i || !node.args.empty()) ? ", " : "") + std::string(g.str(node.kwargs[i].name)) + " = " +
         value_text(g, node.kwargs[i].value);
  return s + ")";
}

void column(std::string& out, const Graph& g, char side, const std::vector<std::string>& cls) {
  out += "<td><table class=g>";
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const auto n = static_cast<NodeId>(i);
    out += "<tr id=" + std::string(1, side) + std::to_string(i) + " class='" + cls[i] + "'><td class=n>" +
           std::to_string(i) + "</td><td>" + html_escape(node_line(g, n)) + "</td></tr>";
  }
  out += "</table></td>";
}

}  // namespace

std::string graph_diff_html(const GraphDiffResult& r, const Graph& a, std::string_view a_label,
                            const Graph& b, std::string_view b_label) {
  std::vector<std::string> ca(a.nodes.size()), cb(b.nodes.size());
  for (const auto& c : r.changes) {
    const std::string k = c.added() ? "add" : c.removed() ? "rem" : !c.fields.empty() ? "chg" : "mov";
    if (!c.added()) ca[c.a] = k;
    if (!c.removed()) cb[c.b] = k;
  }
  const auto& s = r.summary;
  std::string out =
      "<!DOCTYPE html><html><head><meta charset=utf-8><title>gparity graph diff</title><style>"
      "body{font:13px monospace;margin:1em}table{border-collapse:collapse}td{vertical-align:top}"
      ".g td{padding:0 .5em;white-space:pre}.n{color:#888;text-align:right}"
      ".add{background:#dfd}.rem{background:#fdd}.chg{background:#ffd}.mov{background:#def}"
      ":target{outline:2px solid #06c}.side{width:50%}ul{padding-left:1.2em}</style></head><body>";
  out += "<h1>graph diff</h1><p>A: " + html_escape(a_label) + " (" + std::to_string(s.nodes_a) +
         " nodes)<br>B: " + html_escape(b_label) + " (" + std::to_string(s.nodes_b) + " nodes)</p>";
  out += "<p>" + std::to_string(s.unchanged) + " unchanged, " + std::to_string(s.changed) + " changed, " +
         std::to_string(s.moved) + " moved, " + std::to_string(s.added) + " added, " +
         std::to_string(s.removed) + " removed. Normalizations:";
  for (const auto& n : r.normalizations) out += " " + html_escape(n);
  out += "</p><h2>Findings</h2><ul>";
  for (const auto& c : r.changes) {
    out += "<li>";
    if (c.added()) {
      out += "added <a href='#b" + std::to_string(c.b) + "'>" + html_escape(b.node_name(c.b)) + "</a>";
    } else if (c.removed()) {
      out += "removed <a href='#a" + std::to_string(c.a) + "'>" + html_escape(a.node_name(c.a)) + "</a>";
    } else {
      out += std::string(c.fields.empty() ? "moved "
                         : c.moved        ? "changed and moved "
                                          : "changed ") +
             "<a href='#a" + std::to_string(c.a) + "'>" + html_escape(a.node_name(c.a)) +
             "</a> / <a href='#b" + std::to_string(c.b) + "'>" + html_escape(b.node_name(c.b)) + "</a>";
      for (const auto& f : c.fields)
        out += "<br>&nbsp;&nbsp;" + html_escape(f.path) + ": " + html_escape(f.a_text) + " &rarr; " +
               html_escape(f.b_text);
    }
    out += "</li>";
  }
  out += "</ul><h2>Graphs</h2><table><tr><th class=side>A</th><th class=side>B</th></tr><tr>";
  column(out, a, 'a', ca);
  column(out, b, 'b', cb);
  out += "</tr></table></body></html>\n";
  return out;
}

}  // namespace gparity::diff
