#include "core/model/graph/process_groups.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/formats/flight_recorder.hpp"

namespace gparity::model {

namespace {

void normalize(std::vector<std::int64_t>& ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
}

std::vector<std::int64_t> strides(const std::vector<std::int64_t>& ranks) {
  std::vector<std::int64_t> d;
  for (std::size_t i = 1; i < ranks.size(); ++i) d.push_back(ranks[i] - ranks[i - 1]);
  return d;
}

bool contains(const ProcessGroup& g, std::int64_t rank) {
  return std::binary_search(g.ranks.begin(), g.ranks.end(), rank);
}

std::int64_t parse_rank(std::string_view t, std::string_view spec) {
  std::int64_t v = -1;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size() || v < 0)
    throw InputError("--group", "malformed rank '" + std::string(t) + "' in '" + std::string(spec) +
                                    "' (expected NAME=RANK,RANK,... e.g. 3=0,1)");
  return v;
}

}  // namespace

void ProcessGroupTable::add(ProcessGroup g) {
  normalize(g.ranks);
  for (auto& have : groups_) {
    if (have.name != g.name) continue;
    if (have.ranks != g.ranks) {
      throw InputError(g.origin, "process group '" + g.name + "' has ranks " + ranks_text(g.ranks) +
                                     " here but " + ranks_text(have.ranks) + " in " + have.origin);
    }
    if (have.desc.empty()) have.desc = g.desc;
    return;
  }
  groups_.push_back(std::move(g));
}

const ProcessGroup* ProcessGroupTable::find(std::string_view name) const noexcept {
  for (const auto& g : groups_) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

GroupResolution ProcessGroupTable::counterpart(std::string_view name, std::int64_t rank) const {
  const auto* g = find(name);
  if (g == nullptr) return {nullptr, "process group '" + std::string(name) + "' is not in the group table"};
  if (contains(*g, rank)) return {g, {}};
  const auto shape = strides(g->ranks);
  std::vector<const ProcessGroup*> same_shape;
  for (const auto& h : groups_) {
    if (&h != g && contains(h, rank) && h.ranks.size() == g->ranks.size() && strides(h.ranks) == shape)
      same_shape.push_back(&h);
  }
  // A description, when both sides have one, tells mesh dimensions of equal shape apart.
  std::vector<const ProcessGroup*> found;
  for (const auto* h : same_shape) {
    if (g->desc.empty() || h->desc.empty() || h->desc == g->desc) found.push_back(h);
  }
  if (found.size() == 1) return {found.front(), {}};
  const std::string what = "group '" + g->name + "' " + (g->desc.empty() ? "" : "(" + g->desc + ") ") +
                           ranks_text(g->ranks) + " for rank " + std::to_string(rank);
  if (found.empty()) {
    return {nullptr, "no counterpart of " + what +
                         ": no group of that rank with the same size and rank strides (give every rank's "
                         "Flight Recorder dump, or --group NAME=RANKS)"};
  }
  std::string names;
  for (const auto* h : found) names += (names.empty() ? "'" : ", '") + h->name + "'";
  return {nullptr, "ambiguous counterpart of " + what + ": " + names};
}

ProcessGroup parse_group_spec(std::string_view spec) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size())
    throw InputError("--group", "expected NAME=RANK,RANK,... (e.g. 3=0,1), got '" + std::string(spec) + "'");
  ProcessGroup g;
  g.name = std::string(spec.substr(0, eq));
  g.origin = "--group " + std::string(spec);
  auto rest = spec.substr(eq + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = rest.substr(0, comma);
    if (const auto dash = item.find('-'); dash != std::string_view::npos) {
      const auto lo = parse_rank(item.substr(0, dash), spec);
      const auto hi = parse_rank(item.substr(dash + 1), spec);
      if (hi < lo || hi - lo > 1'000'000)
        throw InputError("--group",
                         "bad rank range '" + std::string(item) + "' in '" + std::string(spec) + "'");
      for (auto r = lo; r <= hi; ++r) g.ranks.push_back(r);
    } else {
      g.ranks.push_back(parse_rank(item, spec));
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
    if (rest.empty()) parse_rank(rest, spec);  // trailing comma
  }
  normalize(g.ranks);
  return g;
}

void add_flight_recorder_groups(ProcessGroupTable& table, const FlightRecorderDump& dump) {
  for (const auto& c : dump.groups) {
    // Older dumps key pg_config by the name and leave "name" out.
    table.add({c.name.empty() ? c.id : c.name, c.desc, c.ranks, dump.source});
  }
}

std::vector<std::string> flight_recorder_dumps_near(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::string> out;
  for (const auto& d : {dir, dir.parent_path()}) {
    if (d.empty() || !fs::is_directory(d, ec)) continue;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (name.starts_with("rank") && name.ends_with("_flight_recorder.json") &&
          path_kind(it->path()) == PathKind::Regular)  // a looping link throws, naming it
        out.push_back(it->path().string());
    }
    if (!out.empty()) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

ProcessGroupTable load_group_table(const std::vector<std::string>& paths,
                                   const std::vector<std::string>& specs) {
  ProcessGroupTable t;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      const auto dumps = flight_recorder_dumps_near(p);
      if (dumps.empty()) throw InputError(p, "no rank<r>_flight_recorder.json here or in the parent folder");
      for (const auto& d : dumps) add_flight_recorder_groups(t, read_flight_recorder(d));
    } else {
      add_flight_recorder_groups(t, read_flight_recorder(p));
    }
  }
  for (const auto& s : specs) t.add(parse_group_spec(s));
  return t;
}

std::string ranks_text(const std::vector<std::int64_t>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace gparity::model
