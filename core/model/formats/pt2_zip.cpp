#include "core/model/formats/pt2_zip.hpp"

#include <zip.h>

#include <algorithm>
#include <set>

#include "core/model/base/input_error.hpp"

namespace gparity::model {

struct ZipArchive::Handle {
  zip_t* z = nullptr;
  ~Handle() {
    if (z) zip_discard(z);  // read-only: never write anything back
  }
};

std::string unsafe_member_reason(const std::string& name) {
  if (name.empty()) return "empty member name";
  if (name.find('\0') != std::string::npos) return "member name contains NUL";
  if (name.front() == '/') return "absolute member path";
  if (name.find('\\') != std::string::npos) return "backslash in member path";
  if (name.size() >= 2 && name[1] == ':') return "drive letter in member path";
  std::size_t b = 0;
  while (b <= name.size()) {
    const auto e = std::min(name.find('/', b), name.size());
    if (name.compare(b, e - b, "..") == 0 && e - b == 2) return "'..' in member path";
    b = e + 1;
  }
  return "";
}

ZipArchive::ZipArchive(const std::string& path, ZipLimits limits)
    : path_(path), limits_(limits), zip_(std::make_unique<Handle>()) {
  int err = 0;
  zip_->z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!zip_->z) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    const std::string msg = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw InputError(path, "not a readable zip archive: " + msg);
  }
  const zip_int64_t n = zip_get_num_entries(zip_->z, 0);
  if (n < 0 || static_cast<std::uint64_t>(n) > limits_.max_members) {
    throw InputError(path, "zip archive has " + std::to_string(n) + " members, more than the limit of " +
                               std::to_string(limits_.max_members));
  }
  std::set<std::string> seen;
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* raw = zip_get_name(zip_->z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    if (!raw) throw InputError(path, "zip member " + std::to_string(i) + " has no readable name");
    std::string name(raw);
    if (const auto why = unsafe_member_reason(name); !why.empty()) throw InputError(path + "!" + name, why);
    if (!seen.insert(name).second) throw InputError(path + "!" + name, "duplicate member name");
    members_.push_back(std::move(name));
  }
}

ZipArchive::~ZipArchive() = default;

bool ZipArchive::contains(const std::string& member) const {
  return std::find(members_.begin(), members_.end(), member) != members_.end();
}

std::string ZipArchive::read(const std::string& member) const {
  const std::string where = path_ + "!" + member;
  const zip_int64_t idx = zip_name_locate(zip_->z, member.c_str(), ZIP_FL_ENC_RAW);
  if (idx < 0) throw InputError(where, "no such member");
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(zip_->z, static_cast<zip_uint64_t>(idx), 0, &st) != 0)
    throw InputError(where, "cannot stat member");
  if ((st.valid & ZIP_STAT_SIZE) && st.size > limits_.max_member_bytes) {
    throw InputError(where, "member declares " + std::to_string(st.size) + " bytes, more than the limit of " +
                                std::to_string(limits_.max_member_bytes));
  }
  zip_file_t* f = zip_fopen_index(zip_->z, static_cast<zip_uint64_t>(idx), 0);
  if (!f) throw InputError(where, std::string("cannot open member: ") + zip_strerror(zip_->z));
  std::string out;
  char buf[1 << 16];
  // Read no more than the cap plus one byte, whatever the header claims: a lying header or a
  // zip bomb stops here.
  while (true) {
    const zip_int64_t got = zip_fread(f, buf, sizeof buf);
    if (got < 0) {
      const std::string msg = zip_error_strerror(zip_file_get_error(f));
      zip_fclose(f);
      throw InputError(where, "corrupt member data: " + msg);
    }
    if (got == 0) break;
    out.append(buf, static_cast<std::size_t>(got));
    if (out.size() > limits_.max_member_bytes) {
      zip_fclose(f);
      throw InputError(
          where, "member inflates past the limit of " + std::to_string(limits_.max_member_bytes) + " bytes");
    }
  }
  zip_fclose(f);
  return out;
}

}  // namespace gparity::model
