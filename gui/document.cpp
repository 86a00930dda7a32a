#include "gui/document.hpp"

#include <filesystem>
#include <map>
#include <tuple>

#include "core/model/fx_text.hpp"
#include "core/model/input_error.hpp"
#include "core/model/mapped_file.hpp"

namespace gparity::gui {
namespace {

namespace fs = std::filesystem;

void index_trace(Document& d) {
  std::map<std::tuple<std::int32_t, std::string, std::string>, int> seen;
  for (const auto& rank : d.trace->ranks) {
    for (const auto& p : rank.problems) d.problems.push_back(p.text());
    for (const auto& tg : rank.graphs) {
      GraphEntry e;
      e.rank = rank.rank;
      e.compile = tg.compile.text();
      e.kind = tg.kind;
      e.occurrence = seen[{e.rank, e.compile, e.kind}]++;
      e.graph = &tg.graph;
      e.label = "rank " + std::to_string(e.rank) + " · " + e.compile + " · " + e.kind +
                (e.occurrence ? " #" + std::to_string(e.occurrence + 1) : "") + " (" +
                std::to_string(tg.graph.nodes.size()) + " nodes)";
      d.graphs.push_back(std::move(e));
    }
  }
}

bool is_trace_log(const fs::path& p) {
  const auto name = p.filename().string();
  return p.extension() == ".log" || name.find("torch_trace") != std::string::npos;
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
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) throw model::InputError(path, 0, "no such file or directory");
  if (p.extension() == ".pt2")
    throw model::InputError(path, 0, ".pt2 archives are not readable yet (graph-import issue)");
  if (fs::is_directory(p, ec) || is_trace_log(p)) {
    d->format = "TORCH_TRACE";
    d->trace = model::read_torch_trace_dir(path);
    if (d->trace->ranks.empty())
      throw model::InputError(path, 0, "no dedicated_log_torch_trace_rank_*.log files here");
    index_trace(*d);
    if (d->graphs.empty()) throw model::InputError(path, 0, "the trace holds no graph payloads");
    return d;
  }
  const model::MappedFile file(path);
  if (!model::looks_like_fx_text(file.text()))
    throw model::InputError(path, 1, "neither a TORCH_TRACE log nor FX print_readable() text");
  d->format = "FX text";
  d->fx = model::parse_fx_text(file.text(), path);
  GraphEntry e;
  e.kind = "fx_text";
  e.graph = &*d->fx;
  e.label = fs::path(path).filename().string() + " (" + std::to_string(d->fx->nodes.size()) + " nodes)";
  d->graphs.push_back(std::move(e));
  return d;
}

}  // namespace gparity::gui
