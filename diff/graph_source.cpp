#include "diff/graph_source.hpp"

#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"

namespace gparity::diff {

namespace {

bool is_trace_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return true;
  const auto name = fs::path(path).filename().string();
  return name.find("torch_trace") != std::string::npos || fs::path(path).extension() == ".log";
}

LoadedGraph from_trace(const GraphSelection& sel) {
  const auto trace = model::read_torch_trace_dir(sel.path);
  if (trace.ranks.empty()) throw model::InputError(sel.path, "no TORCH_TRACE rank logs found");
  const model::TorchTraceRank* rt = sel.rank ? trace.rank(*sel.rank) : &trace.ranks.front();
  if (rt == nullptr) throw model::InputError(sel.path, "no log for rank " + std::to_string(*sel.rank));
  const auto found = rt->find_graphs(sel.kind, sel.compile);
  if (found.empty()) {
    std::string kinds;
    for (const auto& g : rt->graphs) kinds += "\n  " + g.kind + " " + g.compile.text();
    throw model::InputError(sel.path, "no graph matches the selection; graphs of rank " +
                                          std::to_string(rt->rank) + ":" + (kinds.empty() ? " none" : kinds));
  }
  const auto* tg = found.front();
  return {tg->graph, rt->rank,
          sel.path + " rank " + std::to_string(rt->rank) + " " + tg->kind + " " + tg->compile.text()};
}

}  // namespace

LoadedGraph load_graph(const GraphSelection& sel) {
  if (is_trace_path(sel.path)) return from_trace(sel);
  const model::MappedFile file(sel.path);
  const auto text = file.text();
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    return {model::graph_from_json(model::parse_ordered_json(text, sel.path), sel.path), sel.rank, sel.path};
  }
  return {model::parse_fx_text(text, sel.path), sel.rank, sel.path};
}

}  // namespace gparity::diff
