#include "diff/gate/gate_policy.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"

namespace gparity::diff {
namespace {

using model::InputError;
using nlohmann::json;

std::string string_field(const json& j, const char* key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end()) return {};
  if (!it->is_string()) throw InputError(source, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

void check_keys(const json& j, std::initializer_list<std::string_view> known, const std::string& source,
                const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const auto k : known) ok = ok || it.key() == k;
    // A misspelt key would silently weaken the gate: refuse it.
    if (!ok) throw InputError(source, "unknown key \"" + it.key() + "\" in " + where);
  }
}

/// "baseline": "path" or {"command": ["prog", "arg", ...], "path": "path"}.
void run_field(const json& j, const char* key, const std::string& source, std::string& path,
               std::vector<std::string>& command) {
  const auto it = j.find(key);
  if (it == j.end()) return;
  if (it->is_string()) {
    path = it->get<std::string>();
    return;
  }
  const std::string where = std::string("\"") + key + "\"";
  if (!it->is_object()) {
    throw InputError(source, where + " must be a path or {\"command\": [...], \"path\": \"...\"}");
  }
  check_keys(*it, {"command", "path"}, source, where);
  path = string_field(*it, "path", source);
  if (path.empty()) throw InputError(source, where + " needs a \"path\": the run its command writes");
  const auto c = it->find("command");
  if (c == it->end()) return;
  if (!c->is_array() || c->empty()) {
    throw InputError(source, where + " \"command\" must be a non-empty list of strings (argv, no shell)");
  }
  for (const auto& arg : *c) {
    if (!arg.is_string())
      throw InputError(source, where + " \"command\" has a non-string argument " + arg.dump());
    command.push_back(arg.get<std::string>());
  }
}

std::string quoted_command(std::span<const std::string> argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t\"'") == std::string::npos && !a.empty() ? a : json(a).dump();
  }
  return out;
}

/// posix_spawn file actions, released on every path out.
class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&fa_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&fa_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() noexcept { return &fa_; }

 private:
  posix_spawn_file_actions_t fa_{};
};

}  // namespace

void run_gate_command(std::span<const std::string> argv, const std::string& dir, const std::string& what) {
  if (argv.empty()) throw InputError(what, "empty command");
  const std::string shown = quoted_command(argv);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  FileActions fa;
  ::posix_spawn_file_actions_adddup2(fa.get(), STDERR_FILENO, STDOUT_FILENO);
  if (!dir.empty()) ::posix_spawn_file_actions_addchdir_np(fa.get(), dir.c_str());
  pid_t pid = 0;
  if (const int err = ::posix_spawnp(&pid, args[0], fa.get(), nullptr, args.data(), environ); err != 0) {
    throw InputError(what,
                     "cannot run " + shown + (dir.empty() ? "" : " in " + dir) + ": " + std::strerror(err));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InputError(what, "lost " + shown + ": " + std::strerror(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                            : "was killed by signal " + std::to_string(WTERMSIG(status));
  throw InputError(what, shown + " " + how + ": the gate compares nothing it produced");
}

GatePolicy parse_gate_policy(std::string_view text, const std::string& source) {
  const json j = model::parse_json(text, source);
  if (!j.is_object()) throw InputError(source, "policy is not a JSON object");
  check_keys(j,
             {"baseline", "candidate", "checks", "steps", "tolerance", "reports", "description", "require",
              "allow_incomplete", "ops"},
             source, "the policy");
  GatePolicy p;
  run_field(j, "baseline", source, p.baseline, p.baseline_command);
  run_field(j, "candidate", source, p.candidate, p.candidate_command);
  if (const auto it = j.find("checks"); it != j.end()) {
    if (!it->is_array()) throw InputError(source, "\"checks\" must be a list");
    auto& o = p.options;
    o.loss = o.grad_norm = o.weights = o.grads = o.optimizer = false;
    for (const auto& c : *it) {
      const auto name = c.is_string() ? c.get<std::string>() : c.dump();
      if (name == "loss") {
        o.loss = true;
      } else if (name == "grad_norm") {
        o.grad_norm = true;
      } else if (name == "weights") {
        o.weights = true;
      } else if (name == "grads") {
        o.grads = true;
      } else if (name == "optimizer") {
        o.optimizer = true;
      } else {
        throw InputError(source, "unknown check " + name + " (loss, grad_norm, weights, grads, optimizer)");
      }
    }
  }
  if (const auto it = j.find("steps"); it != j.end()) {
    if (!it->is_object()) throw InputError(source, "\"steps\" must be an object {\"first\": N, \"last\": M}");
    check_keys(*it, {"first", "last"}, source, "\"steps\"");
    try {
      if (it->contains("first")) p.options.first_step = it->at("first").get<std::int64_t>();
      if (it->contains("last")) p.options.last_step = it->at("last").get<std::int64_t>();
    } catch (const json::exception&) {
      throw InputError(source, "\"steps\" bounds must be integers");
    }
  }
  if (const auto it = j.find("tolerance"); it != j.end()) {
    if (it->is_string() && it->get<std::string>() == "bitwise") {
      // the default
    } else if (it->is_object()) {
      check_keys(*it, {"ulp", "rtol", "atol"}, source, "\"tolerance\"");
      try {
        if (it->contains("ulp")) p.options.tolerance.ulp = it->at("ulp").get<std::uint64_t>();
        if (it->contains("rtol")) p.options.tolerance.rtol = it->at("rtol").get<double>();
        if (it->contains("atol")) p.options.tolerance.atol = it->at("atol").get<double>();
      } catch (const json::exception&) {
        throw InputError(source, "\"tolerance\" values must be numbers (ulp: a non-negative integer)");
      }
    } else {
      throw InputError(source, "\"tolerance\" must be \"bitwise\" or {\"ulp\": N, \"rtol\": X, \"atol\": X}");
    }
  }
  if (const auto it = j.find("require"); it != j.end()) {
    if (!it->is_object()) {
      throw InputError(source,
                       "\"require\" must be an object {\"steps\": N, \"ranks\": N, \"parameters\": N}");
    }
    check_keys(*it, {"steps", "ranks", "parameters"}, source, "\"require\"");
    for (const auto& [key, slot] :
         {std::pair{"steps", &p.options.require.steps}, std::pair{"ranks", &p.options.require.ranks},
          std::pair{"parameters", &p.options.require.parameters}}) {
      const auto v = it->find(key);
      if (v == it->end()) continue;
      if (!v->is_number_unsigned()) {
        throw InputError(source, std::string("\"require\" \"") + key + "\" must be a non-negative integer");
      }
      *slot = v->get<std::size_t>();
    }
  }
  if (const auto it = j.find("ops"); it != j.end()) {
    if (!it->is_object())
      throw InputError(source,
                       "\"ops\" must be an object {\"baseline\": \"eager op run\", \"candidate\": \"...\"}");
    check_keys(*it, {"baseline", "candidate", "kernels"}, source, "\"ops\"");
    p.ops_baseline = string_field(*it, "baseline", source);
    p.ops_candidate = string_field(*it, "candidate", source);
    if (const auto k = it->find("kernels"); k != it->end()) {
      if (!k->is_boolean()) throw InputError(source, "\"ops\" \"kernels\" must be true or false");
      p.ops_kernels = k->get<bool>();
    }
    if (p.ops_baseline.empty() || p.ops_candidate.empty())
      throw InputError(source,
                       "\"ops\" needs both \"baseline\" and \"candidate\" (op-record or DebugMode runs)");
  }
  if (const auto it = j.find("allow_incomplete"); it != j.end()) {
    if (!it->is_boolean()) throw InputError(source, "\"allow_incomplete\" must be true or false");
    p.options.allow_incomplete = it->get<bool>();
  }
  if (const auto it = j.find("reports"); it != j.end()) {
    if (!it->is_object()) throw InputError(source, "\"reports\" must be an object");
    check_keys(*it, {"junit", "markdown", "json", "html"}, source, "\"reports\"");
    p.junit = string_field(*it, "junit", source);
    p.markdown = string_field(*it, "markdown", source);
    p.json = string_field(*it, "json", source);
    p.html = string_field(*it, "html", source);
  }
  return p;
}

GatePolicy load_gate_policy(const std::string& path) {
  const model::MappedFile file(path);
  GatePolicy p = parse_gate_policy(file.text(), path);
  const auto dir = std::filesystem::path(path).parent_path();
  p.command_dir = dir.string();
  for (auto* s : {&p.baseline, &p.candidate, &p.junit, &p.markdown, &p.json, &p.html, &p.ops_baseline,
                  &p.ops_candidate}) {
    if (!s->empty() && std::filesystem::path(*s).is_relative()) *s = (dir / *s).lexically_normal().string();
  }
  return p;
}

}  // namespace gparity::diff
