#pragma once
// What a path from an untrusted folder is, with symbolic links followed, for folder walks and
// input checks. std::filesystem's status queries either throw filesystem_error (a link that
// loops: "internal error" in front ends) or, given an error_code, answer "does not exist" for
// a loop too; here a loop or an unreadable entry is an InputError naming the path, and a
// dangling link is Missing (it holds nothing to read).

#include <cstdint>
#include <filesystem>

namespace gparity::model {

enum class PathKind : std::uint8_t { Missing, Regular, Directory, Other };

/// The kind of `path`, links followed. Throws InputError naming `path` when a link loops
/// ("symbolic link loop") or its status cannot be read (the OS error).
PathKind path_kind(const std::filesystem::path& path);

}  // namespace gparity::model
