#include "core/model/base/path_kind.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/model/base/input_error.hpp"

namespace gparity::model {

PathKind path_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return PathKind::Missing;
    if (err == ELOOP)
      throw InputError(path.string(), std::string("symbolic link loop (") + std::strerror(err) + ")");
    throw InputError(path.string(), std::string("cannot read: ") + std::strerror(err));
  }
  if (S_ISREG(st.st_mode)) return PathKind::Regular;
  if (S_ISDIR(st.st_mode)) return PathKind::Directory;
  return PathKind::Other;
}

}  // namespace gparity::model
