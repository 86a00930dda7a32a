#include "core/model/base/path_kind.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::model {
namespace {

namespace fs = std::filesystem;
using gparity::testing::TempDir;

TEST(PathKind, FollowsLinksAndNamesALoop) {
  TempDir dir;
  const auto file = fs::path(dir.write("f.txt", "x"));
  fs::create_symlink(file, dir.path() / "to_file");
  fs::create_symlink(dir.path() / "nowhere", dir.path() / "dangling");
  fs::create_symlink(dir.path() / "loop_b", dir.path() / "loop_a");
  fs::create_symlink(dir.path() / "loop_a", dir.path() / "loop_b");
  EXPECT_EQ(path_kind(file), PathKind::Regular);
  EXPECT_EQ(path_kind(dir.path()), PathKind::Directory);
  EXPECT_EQ(path_kind(dir.path() / "to_file"), PathKind::Regular);
  EXPECT_EQ(path_kind(dir.path() / "dangling"), PathKind::Missing);
  EXPECT_EQ(path_kind(dir.path() / "absent"), PathKind::Missing);
  EXPECT_EQ(path_kind(file / "under_a_file"), PathKind::Missing);
  EXPECT_EQ(path_kind("/dev/null"), PathKind::Other);
  try {
    path_kind(dir.path() / "loop_a");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), (dir.path() / "loop_a").string());
    EXPECT_NE(e.problem().find("symbolic link loop"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gparity::model
