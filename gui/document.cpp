#include "gui/document.hpp"

#include <filesystem>

#include "core/model/base/input_error.hpp"

namespace gparity::gui {
namespace {

std::string entry_label(const model::GraphCollection& c, const model::GraphEntry& e) {
  std::string label;
  if (e.rank >= 0) label += "rank " + std::to_string(e.rank) + " · ";
  if (const auto id = e.compile.text(); id != "-") label += id + " · ";
  label += e.kind.empty() ? std::filesystem::path(c.path).filename().string() : e.kind;
  if (e.occurrence) label += " #" + std::to_string(e.occurrence + 1);
  return label + " (" + std::to_string(e.graph->nodes.size()) + " nodes)";
}

}  // namespace

std::vector<const GraphEntry*> Document::same_graph_on_ranks(const GraphEntry& e) const {
  std::vector<const GraphEntry*> out;
  for (const auto& g : graphs)
    if (g.compile == e.compile && g.kind == e.kind && g.occurrence == e.occurrence) out.push_back(&g);
  return out;
}

std::optional<std::size_t> Document::find(std::int32_t rank, std::string_view kind,
                                          std::string_view compile) const {
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const auto& g = graphs[i];
    if (g.rank == rank && g.kind == kind && (compile.empty() || g.compile == compile)) return i;
  }
  return std::nullopt;
}

std::shared_ptr<const Document> load_document(const std::string& path) {
  auto d = std::make_shared<Document>();
  d->path = path;
  d->collection = model::load_graphs(path);
  d->format = d->collection.format;
  for (const auto& p : d->collection.problems) d->problems.push_back(p.text());
  for (const auto& e : d->collection.entries) {
    GraphEntry g;
    g.rank = e.rank;
    g.compile = e.compile.text() == "-" ? "" : e.compile.text();
    g.kind = e.kind;
    g.occurrence = static_cast<int>(e.occurrence);
    g.graph = e.graph;
    g.label = entry_label(d->collection, e);
    d->graphs.push_back(std::move(g));
  }
  if (d->graphs.empty()) throw model::InputError(path, 0, "holds no graphs");
  return d;
}

}  // namespace gparity::gui
