#include "core/model/formats/dcp_checkpoint.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/dcp_record.hpp"

namespace gparity::model {
namespace fs = std::filesystem;
namespace {

// Brings a mapped range into memory in one call (page tables too) rather than a fault every few
// pages; a hint only: kernels without MADV_POPULATE_READ (< 5.14) get MADV_WILLNEED.
void prefetch(std::span<const std::byte> bytes) noexcept {
  if (bytes.empty()) return;
  static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data()) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(bytes.data() + bytes.size());
  void* p = reinterpret_cast<void*>(begin);
#ifdef MADV_POPULATE_READ
  if (madvise(p, end - begin, MADV_POPULATE_READ) == 0) return;
#else
  if (madvise(p, end - begin, 22) == 0) return;  // MADV_POPULATE_READ, older headers
#endif
  (void)madvise(p, end - begin, MADV_WILLNEED);
}

// Data files held open by every DcpCheckpoint of the process (kMaxOpenFiles).
std::atomic<std::size_t> g_open_files{0};

bool take_open_slot(std::size_t max) noexcept {
  for (std::size_t n = g_open_files.load(); n < max;)
    if (g_open_files.compare_exchange_weak(n, n + 1)) return true;
  return false;
}

}  // namespace

bool is_dcp_checkpoint(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / ".metadata", ec);
}

DcpCheckpoint::DcpCheckpoint(const std::string& dir) : dir_(dir) {
  const fs::path meta_path = fs::path(dir) / ".metadata";
  std::error_code ec;
  if (!fs::is_regular_file(meta_path, ec))
    throw InputError(dir, "not a DCP checkpoint folder: no .metadata file");
  meta_ = read_dcp_metadata(meta_path.string());
  for (const auto& e : meta_.entries) {
    const auto add = [&](const DcpLocation& l) {
      if (files_.contains(l.file)) return;
      const std::string p = (fs::path(dir) / l.file).string();
      if (!fs::is_regular_file(p, ec))
        throw InputError(p, "the checkpoint's .metadata names this data file, but it is missing");
      DataFile f;
      f.path = p;
      std::array<std::byte, 9> head{};
      std::span<const std::byte> first;
      if (take_open_slot(kMaxOpenFiles)) {
        ++open_files_.n;  // before the open, which can throw: OpenSlots gives it back
        f.file.emplace(p);
        if (f.file->size() > kReadChunkBytes) f.map.emplace(p);
        f.size = f.map ? f.map->bytes().size() : f.file->size();
        const std::span<std::byte> to = std::span(head).first(std::min<std::uint64_t>(f.size, head.size()));
        f.file->read_at(0, to);
        first = to;
      } else {
        f.map.emplace(p);
        f.size = f.map->bytes().size();
        first = f.map->bytes().first(std::min<std::size_t>(f.size, head.size()));
      }
      if (looks_like_safetensors(first)) {
        f.safetensors = std::make_unique<SafetensorsFile>(p);  // maps the file itself
        f.map.reset();
      }
      files_.emplace(l.file, std::move(f));
    };
    for (const auto& c : e.chunks) {
      if (!c.where) throw InputError(meta_path.string(), "\"" + e.fqn + "\": a chunk has no storage entry");
      add(*c.where);
    }
    if (e.bytes_where) add(*e.bytes_where);
  }
}

DcpCheckpoint::OpenSlots::~OpenSlots() {
  g_open_files.fetch_sub(n);
}

std::vector<std::pair<std::string, std::uint64_t>> DcpCheckpoint::files() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& [name, f] : files_) out.emplace_back(name, f.size);
  return out;
}

std::span<const std::byte> DcpCheckpoint::chunk_bytes(const DataFile& f, std::uint64_t offset,
                                                      std::uint64_t length, DcpChunkBuffer& buffer) const {
  if (f.file && (!f.map || length <= kReadChunkBytes)) {
    if (buffer.record_capacity < length) {
      buffer.record = std::make_unique_for_overwrite<std::byte[]>(length);
      buffer.record_capacity = length;
    }
    const std::span<std::byte> to(buffer.record.get(), length);
    f.file->read_at(offset, to);
    return to;
  }
  return f.map->bytes().subspan(offset, length);
}

DcpChunkView DcpCheckpoint::load(const DcpEntry& entry, const DcpChunk& chunk, DcpChunkBuffer& buffer,
                                 CrcCheck crc) const {
  const DcpLocation& l = *chunk.where;
  const DataFile& f = files_.at(l.file);
  const std::string where = f.path + " @ " + std::to_string(l.offset);
  const auto fail = [&](const std::string& problem) -> InputError {
    return InputError(where, "\"" + entry.fqn + "\": " + problem);
  };
  if (l.has_transforms)
    throw fail("chunk has transform descriptors (compressed or encrypted), which gparity does not read");
  DcpChunkView v;
  v.elem_size = dtype_size(entry.dtype);
  if (f.safetensors) {
    // Safetensors form: one blob per file, tensors named by FQN, shaped like the chunk.
    for (const auto& t : f.safetensors->tensors()) {
      if (t.name != entry.fqn) continue;
      if (t.dtype != entry.dtype) throw fail("dtype differs from the metadata's");
      if (t.shape != chunk.sizes) throw fail("tensor shape differs from the chunk's sizes");
      v.data = f.safetensors->bytes(t).data();
      prefetch(f.safetensors->bytes(t));
      v.shape = t.shape;
      return v;
    }
    throw fail("no tensor of this name in the safetensors data file");
  }
  const auto size = f.size;
  if (l.offset > size || l.length > size - l.offset)
    throw fail("byte range [" + std::to_string(l.offset) + ", +" + std::to_string(l.length) +
               ") lies outside the " + std::to_string(size) + "-byte file (truncated?)");
  const auto record = chunk_bytes(f, l.offset, l.length, buffer);
  auto t = read_torch_save_tensor(record, where, buffer.storage, crc);
  if (t.record.dtype != entry.dtype)
    throw fail(std::string("chunk dtype ") + std::string(dtype_name(t.record.dtype)) +
               " differs from the metadata's " + std::string(dtype_name(entry.dtype)));
  if (t.record.size != chunk.sizes) throw fail("chunk tensor size differs from the metadata's chunk sizes");
  bool empty = false;
  for (const auto d : t.record.size) empty = empty || d == 0;
  v.data = empty ? t.storage.data()
                 : t.storage.data() + static_cast<std::size_t>(t.record.storage_offset) * v.elem_size;
  v.shape = t.record.size;
  v.strides = t.record.stride;
  if (t.unchecked_crc32) {
    if (record.data() != buffer.record.get()) prefetch(t.storage);  // in the mapping
    v.storage = t.storage;
    v.unchecked_crc32 = t.unchecked_crc32;
    v.crc_where = where + " (\"" + entry.fqn + "\" storage)";
  }
  return v;
}

}  // namespace gparity::model
