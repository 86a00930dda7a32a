#include "core/model/formats/zip_archive.hpp"

#include <minizip/unzip.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/model/base/input_error.hpp"
#include "core/model/base/mapped_file.hpp"

namespace gparity::model {
// minizip reads through these callbacks: the archive is a span in memory (a mapped file, or a
// byte range of one), so no stdio stream is opened and nothing can be written. Outside the
// anonymous namespace: ZipArchive::Handle (a member of a class with linkage) holds one.
namespace zip_detail {
struct Cursor {
  std::span<const std::byte> bytes;
  std::uint64_t pos = 0;
};
}  // namespace zip_detail
using zip_detail::Cursor;

namespace {

voidpf ZCALLBACK cursor_open(voidpf opaque, const void*, int mode) {
  return (mode & ZLIB_FILEFUNC_MODE_WRITE) != 0 ? nullptr : opaque;
}

uLong ZCALLBACK cursor_read(voidpf, voidpf stream, void* buf, uLong size) {
  auto* c = static_cast<Cursor*>(stream);
  const std::uint64_t n = std::min<std::uint64_t>(size, c->bytes.size() - c->pos);
  if (n > 0) std::memcpy(buf, c->bytes.data() + c->pos, n);
  c->pos += n;
  return static_cast<uLong>(n);
}

uLong ZCALLBACK cursor_write(voidpf, voidpf, const void*, uLong) {
  return 0;
}

ZPOS64_T ZCALLBACK cursor_tell(voidpf, voidpf stream) {
  return static_cast<Cursor*>(stream)->pos;
}

long ZCALLBACK cursor_seek(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
  auto* c = static_cast<Cursor*>(stream);
  std::uint64_t base = 0;
  switch (origin) {
    case ZLIB_FILEFUNC_SEEK_SET: base = 0; break;
    case ZLIB_FILEFUNC_SEEK_CUR: base = c->pos; break;
    case ZLIB_FILEFUNC_SEEK_END: base = c->bytes.size(); break;
    default: return -1;
  }
  if (offset > c->bytes.size() || base > c->bytes.size() - offset) return -1;
  c->pos = base + offset;
  return 0;
}

int ZCALLBACK cursor_close(voidpf, voidpf) {
  return 0;
}
int ZCALLBACK cursor_error(voidpf, voidpf) {
  return 0;
}

std::string unz_message(int code) {
  switch (code) {
    case UNZ_ERRNO: return "read error";
    case UNZ_PARAMERROR: return "invalid argument";
    case UNZ_BADZIPFILE: return "damaged zip structure";
    case UNZ_INTERNALERROR: return "internal error";
    case UNZ_CRCERROR: return "CRC-32 mismatch";
    case Z_DATA_ERROR: return "the deflate stream is corrupt";
    case Z_BUF_ERROR: return "the deflate stream ends early";
    case Z_MEM_ERROR: return "out of memory";
    default: return "error " + std::to_string(code);
  }
}

}  // namespace

struct ZipArchive::Handle {
  std::optional<MappedFile> file;  // when opened by path
  Cursor cursor;
  unzFile z = nullptr;
  ~Handle() {
    if (z) unzClose(z);
  }
};

struct ZipArchive::Member {
  ZipMemberInfo info;
  unz64_file_pos pos{};
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
  zip_->file.emplace(path);
  zip_->cursor.bytes = zip_->file->bytes();
  list_members();
}

ZipArchive::ZipArchive(std::span<const std::byte> bytes, std::string name, ZipLimits limits)
    : path_(std::move(name)), limits_(limits), zip_(std::make_unique<Handle>()) {
  zip_->cursor.bytes = bytes;
  list_members();
}

ZipArchive::~ZipArchive() = default;

void ZipArchive::list_members() {
  zlib_filefunc64_def io{};
  io.zopen64_file = cursor_open;
  io.zread_file = cursor_read;
  io.zwrite_file = cursor_write;
  io.ztell64_file = cursor_tell;
  io.zseek64_file = cursor_seek;
  io.zclose_file = cursor_close;
  io.zerror_file = cursor_error;
  io.opaque = &zip_->cursor;
  zip_->z = unzOpen2_64(path_.c_str(), &io);
  if (!zip_->z) throw InputError(path_, "not a readable zip archive: no valid end of central directory");
  unz_global_info64 global{};
  if (const int rc = unzGetGlobalInfo64(zip_->z, &global); rc != UNZ_OK)
    throw InputError(path_, "not a readable zip archive: " + unz_message(rc));
  if (global.number_entry > limits_.max_members) {
    throw InputError(path_, "zip archive has " + std::to_string(global.number_entry) +
                                " members, more than the limit of " + std::to_string(limits_.max_members));
  }
  // Each central entry is at least 46 bytes: a count the archive cannot hold is a lie.
  if (global.number_entry > zip_->cursor.bytes.size() / 46)
    throw InputError(path_, "not a readable zip archive: the directory claims " +
                                std::to_string(global.number_entry) + " members");
  members_.reserve(global.number_entry);
  entries_.reserve(global.number_entry);
  std::string name(0xFFFF, '\0');
  int rc = global.number_entry == 0 ? UNZ_END_OF_LIST_OF_FILE : unzGoToFirstFile(zip_->z);
  for (std::uint64_t i = 0; rc == UNZ_OK; ++i, rc = unzGoToNextFile(zip_->z)) {
    unz_file_info64 fi{};
    if (const int r = unzGetCurrentFileInfo64(zip_->z, &fi, name.data(), name.size(), nullptr, 0, nullptr, 0);
        r != UNZ_OK)
      throw InputError(path_, "zip member " + std::to_string(i) + ": " + unz_message(r));
    std::string member = name.substr(0, std::min<std::size_t>(fi.size_filename, name.size()));
    if (const auto why = unsafe_member_reason(member); !why.empty())
      throw InputError(path_ + "!" + member, why);
    Member m;
    m.info = {fi.uncompressed_size, fi.compressed_size, static_cast<std::uint32_t>(fi.crc),
              static_cast<std::uint16_t>(fi.compression_method), (fi.flag & 1U) != 0};
    if (unzGetFilePos64(zip_->z, &m.pos) != UNZ_OK)
      throw InputError(path_ + "!" + member, "cannot locate member");
    if (!index_.emplace(member, members_.size()).second)
      throw InputError(path_ + "!" + member, "duplicate member name");
    members_.push_back(std::move(member));
    entries_.push_back(m);
  }
  if (rc != UNZ_END_OF_LIST_OF_FILE)
    throw InputError(path_, "zip member " + std::to_string(members_.size()) + ": " + unz_message(rc));
  if (members_.size() != global.number_entry)
    throw InputError(path_, "zip directory lists " + std::to_string(members_.size()) +
                                " members, the end record " + std::to_string(global.number_entry));
}

const ZipMemberInfo* ZipArchive::info(const std::string& member) const {
  const auto it = index_.find(member);
  return it == index_.end() ? nullptr : &entries_[it->second].info;
}

template <class Sink>
void ZipArchive::read_member(const std::string& member, std::uint64_t cap, Sink&& sink) const {
  const std::string where = path_ + "!" + member;
  const auto it = index_.find(member);
  if (it == index_.end()) throw InputError(where, "no such member");
  const Member& m = entries_[it->second];
  if (m.info.size > cap)
    throw InputError(where, "member declares " + std::to_string(m.info.size) +
                                " bytes, more than the limit of " + std::to_string(cap));
  if (m.info.encrypted) throw InputError(where, "encrypted member");
  if (m.info.method != 0 && m.info.method != Z_DEFLATED)
    throw InputError(where,
                     "compression method " + std::to_string(m.info.method) + " (only stored and deflate)");
  unz64_file_pos pos = m.pos;
  if (const int rc = unzGoToFilePos64(zip_->z, &pos); rc != UNZ_OK)
    throw InputError(where, "cannot locate member: " + unz_message(rc));
  if (const int rc = unzOpenCurrentFile(zip_->z); rc != UNZ_OK)
    throw InputError(where, "cannot open member: " + unz_message(rc));
  struct Closer {
    unzFile z;
    bool open = true;
    ~Closer() {
      if (open) unzCloseCurrentFile(z);
    }
  } closer{zip_->z};
  char buf[1 << 16];
  std::uint64_t total = 0;
  // Read no more than the cap plus one byte, whatever the header claims: a lying header or a
  // zip bomb stops here.
  while (true) {
    const int got = unzReadCurrentFile(zip_->z, buf, sizeof buf);
    if (got < 0) throw InputError(where, "corrupt member data: " + unz_message(got));
    if (got == 0) break;
    total += static_cast<std::uint64_t>(got);
    if (total > cap)
      throw InputError(where, "member inflates past the limit of " + std::to_string(cap) + " bytes");
    sink(buf, static_cast<std::size_t>(got));
  }
  if (total != m.info.size)
    throw InputError(where, "member ends after " + std::to_string(total) + " of " +
                                std::to_string(m.info.size) + " bytes");
  closer.open = false;
  // The CRC is checked here, once the whole member has been read.
  if (const int rc = unzCloseCurrentFile(zip_->z); rc != UNZ_OK)
    throw InputError(where, "corrupt member data: " + unz_message(rc));
}

std::string ZipArchive::read(const std::string& member) const {
  std::string out;
  read_member(member, limits_.max_member_bytes, [&](const char* p, std::size_t n) { out.append(p, n); });
  return out;
}

void ZipArchive::read_into(const std::string& member, std::uint64_t cap, std::vector<std::byte>& out) const {
  out.clear();
  if (const auto* i = info(member); i && i->size <= cap) out.reserve(static_cast<std::size_t>(i->size));
  read_member(member, std::min(cap, limits_.max_member_bytes), [&](const char* p, std::size_t n) {
    const auto* b = reinterpret_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  });
}

}  // namespace gparity::model
