#include "diff/graphs/graph_source.hpp"

#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/format_detect.hpp"
#include "core/model/graph/fx_text.hpp"
#include "core/model/graph/graph_json.hpp"

namespace gparity::diff {

namespace {

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
  // By content, not by name: a log named *.txt is still a trace, and a pickle named *.log is not.
  const auto d = model::detect_format(sel.path);
  switch (d.format) {
    case model::Format::Missing: throw model::InputError(sel.path, d.reason);
    case model::Format::Folder:
    case model::Format::TorchTrace: return from_trace(sel);
    case model::Format::GraphJson:
    case model::Format::Json: {
      const model::MappedFile file(sel.path);
      return {model::graph_from_json(model::parse_ordered_json(file.text(), sel.path), sel.path), sel.rank,
              sel.path};
    }
    case model::Format::Text: {
      const model::MappedFile file(sel.path);
      return {model::parse_fx_text(file.text(), sel.path), sel.rank, sel.path};
    }
    default: throw model::unrecognized_input(sel.path, d, kGraphSourceFormats);
  }
}

}  // namespace gparity::diff
