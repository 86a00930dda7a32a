#pragma once
// Locates data the project does not ship (/work/shared): an environment variable when set, else
// `../shared/<relative>` beside the source root. Tests skip when neither exists.

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace gparity::testing {

inline std::optional<std::string> shared_data(const char* env, const std::string& relative) {
  if (const char* v = std::getenv(env); v != nullptr && *v != '\0') {
    if (std::filesystem::exists(v)) return std::string(v);
    return std::nullopt;
  }
  const auto p = std::filesystem::path(GPARITY_SOURCE_DIR).parent_path() / "shared" / relative;
  if (std::filesystem::exists(p)) return p.string();
  return std::nullopt;
}

/// The tlparse corpus (…/external/tlparse, holding inputs/): GPARITY_TLPARSE_CORPUS.
inline std::optional<std::string> tlparse_corpus() {
  return shared_data("GPARITY_TLPARSE_CORPUS", "external/tlparse");
}

/// The samples folder (…/samples): GPARITY_SAMPLES.
inline std::optional<std::string> samples_dir() {
  return shared_data("GPARITY_SAMPLES", "samples");
}

/// One folder of the samples (…/samples/<name>); empty when absent.
inline std::filesystem::path sample_folder(const std::string& name) {
  const auto dir = samples_dir();
  if (!dir) return {};
  auto p = std::filesystem::path(*dir) / name;
  return std::filesystem::exists(p) ? p : std::filesystem::path();
}

}  // namespace gparity::testing
