#include "core/runtime/rank_env.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gparity::runtime {
namespace {

/// The variable's value, nullptr when unset or empty.
const char* value_of(const EnvLookup& lookup, const char* name) {
  const char* v = lookup(name);
  return v && *v ? v : nullptr;
}

int env_int(const EnvLookup& lookup, const char* name, int fallback) {
  const char* v = value_of(lookup, name);
  if (!v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1'000'000)
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + v +
                                "' is not a valid number");
  return static_cast<int>(x);
}

/// A non-negative decimal number filling all of `text`, or -1.
long long whole_number(std::string_view text) {
  long long x = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  return ec == std::errc() && end == text.data() + text.size() && x >= 0 ? x : -1;
}

RankEnv from_slurm(const EnvLookup& lookup) {
  RankEnv e;
  e.rank = env_int(lookup, "SLURM_PROCID", 0);
  e.world_size = env_int(lookup, "SLURM_NTASKS", 1);
  e.local_rank = env_int(lookup, "SLURM_LOCALID", 0);
  e.node_rank = env_int(lookup, "SLURM_NODEID", -1);
  // The step's own lists first: an srun may run on part of the allocation.
  const char* per_node = value_of(lookup, "SLURM_STEP_TASKS_PER_NODE");
  if (!per_node) per_node = value_of(lookup, "SLURM_TASKS_PER_NODE");
  const int here = per_node && e.node_rank >= 0 ? slurm_tasks_on_node(per_node, e.node_rank) : 0;
  e.local_world_size = here > 0 ? here : e.world_size;
  if (const char* a = value_of(lookup, "MASTER_ADDR")) {
    e.master_addr = a;
  } else {
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      if (const char* list = value_of(lookup, name)) {
        try {
          e.master_addr = first_slurm_host(list);
        } catch (const std::invalid_argument& err) {
          throw std::invalid_argument(std::string("environment variable ") + name + ": " + err.what());
        }
        break;
      }
    }
  }
  e.master_port = env_int(lookup, "MASTER_PORT", 29500);
  return e;
}

RankEnv from_torchrun(const EnvLookup& lookup) {
  RankEnv e;
  e.rank = env_int(lookup, "RANK", 0);
  e.world_size = env_int(lookup, "WORLD_SIZE", 1);
  e.local_rank = env_int(lookup, "LOCAL_RANK", e.rank);
  e.local_world_size = env_int(lookup, "LOCAL_WORLD_SIZE", e.world_size);
  e.node_rank = env_int(lookup, "GROUP_RANK", -1);
  if (const char* a = value_of(lookup, "MASTER_ADDR")) e.master_addr = a;
  e.master_port = env_int(lookup, "MASTER_PORT", 29500);
  return e;
}

}  // namespace

RankEnv rank_env_from(const EnvLookup& lookup) {
  const bool slurm = !value_of(lookup, "RANK") && value_of(lookup, "SLURM_PROCID");
  RankEnv e = slurm ? from_slurm(lookup) : from_torchrun(lookup);
  const std::string rank_var = slurm ? "SLURM_PROCID" : "RANK";
  const std::string world_var = slurm ? "SLURM_NTASKS" : "WORLD_SIZE";
  if (e.world_size < 1 || e.rank >= e.world_size)
    throw std::invalid_argument(rank_var + "=" + std::to_string(e.rank) + " is outside " + world_var + "=" +
                                std::to_string(e.world_size));
  if (e.master_port < 1 || e.master_port > 65535) throw std::invalid_argument("MASTER_PORT out of range");
  return e;
}

RankEnv rank_env_from_environment() {
  return rank_env_from([](const char* name) { return std::getenv(name); });
}

std::string first_slurm_host(std::string_view list) {
  while (!list.empty() && (list.front() == ' ' || list.front() == '\t')) list.remove_prefix(1);
  std::string host;
  int depth = 0;
  bool skipping = false;  // inside brackets, past the first number
  for (const char c : list) {
    if (c == '[') {
      if (depth++ > 0) throw std::invalid_argument("host list '" + std::string(list) + "' nests brackets");
      skipping = false;
    } else if (c == ']') {
      if (--depth < 0)
        throw std::invalid_argument("host list '" + std::string(list) + "' has an unopened ']'");
    } else if (depth == 0 && (c == ',' || c == ' ')) {
      break;
    } else if (depth > 0) {
      if (c == ',' || c == '-') skipping = true;
      if (!skipping) host += c;
    } else {
      host += c;
    }
  }
  if (depth != 0) throw std::invalid_argument("host list '" + std::string(list) + "' has an unclosed '['");
  if (host.empty()) throw std::invalid_argument("host list '" + std::string(list) + "' names no host");
  return host;
}

int slurm_tasks_on_node(std::string_view list, int node) {
  int first = 0;  // the first node the current item covers
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    long long repeat = 1;
    if (const auto paren = item.find("(x"); paren != std::string_view::npos) {
      if (!item.ends_with(')')) return 0;
      repeat = whole_number(item.substr(paren + 2, item.size() - paren - 3));
      item = item.substr(0, paren);
    }
    const long long tasks = whole_number(item);
    if (tasks < 0 || repeat < 1) return 0;
    if (node < first + repeat) return static_cast<int>(tasks);
    first += static_cast<int>(repeat);
  }
  return 0;
}

std::string this_host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

model::RankInfo own_rank_info(const RankEnv& env, const std::string& device) {
  model::RankInfo info{env.rank, env.local_rank, this_host(), device};
  info.node = env.node_rank;
  return info;
}

std::string rank_info_text(const model::RankInfo& info) {
  return nlohmann::json{{"rank", info.rank},
                        {"local_rank", info.local_rank},
                        {"host", info.host},
                        {"device", info.device},
                        {"node", info.node}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

model::RankInfo rank_info_from_text(std::string_view text, int rank) {
  model::RankInfo info{rank, rank, "", ""};
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return info;
  const auto get_int = [&j](const char* key, int fallback) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int>() : fallback;
  };
  const auto get_text = [&j](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  info.local_rank = get_int("local_rank", rank);
  info.host = get_text("host");
  info.device = get_text("device");
  info.node = std::max(get_int("node", -1), -1);
  return info;
}

}  // namespace gparity::runtime
