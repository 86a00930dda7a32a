#include "core/model/formats/dcp_record.hpp"

#include <zip.h>

#include <memory>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/pickle/pickle_machine.hpp"

namespace gparity::model {
namespace {

constexpr std::uint64_t kMaxPickleBytes = 64ULL << 20;

struct ZipCloser {
  void operator()(zip_t* z) const noexcept { zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t* f) const noexcept { zip_fclose(f); }
};

class Record {
 public:
  Record(std::span<const std::byte> bytes, const std::string& where) : where_(where) {
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
    if (!src) fail("cannot open the byte range as a zip: " + message(err));
    zip_.reset(zip_open_from_source(src, ZIP_RDONLY, &err));
    if (!zip_) {
      zip_source_free(src);
      fail("not a torch.save zip record: " + message(err));
    }
    zip_error_fini(&err);
  }

  [[noreturn]] void fail(const std::string& problem) const { throw InputError(where_, problem); }

  /// The archive's folder prefix ("archive/" or "<name>/"), found from its data.pkl.
  std::string prefix() const {
    const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* raw = zip_get_name(zip_.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
      if (!raw) continue;
      const std::string name(raw);
      if (name == "data.pkl") return "";
      if (name.ends_with("/data.pkl") && name.find('/') == name.size() - 9)
        return name.substr(0, name.size() - 8);
    }
    fail("torch.save record without a data.pkl member");
  }

  std::uint64_t size_of(const std::string& member, zip_int64_t& index) const {
    index = zip_name_locate(zip_.get(), member.c_str(), ZIP_FL_ENC_RAW);
    if (index < 0) fail("no member \"" + member + "\"");
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_.get(), static_cast<zip_uint64_t>(index), 0, &st) != 0 ||
        !(st.valid & ZIP_STAT_SIZE))
      fail("cannot stat member \"" + member + "\"");
    return st.size;
  }

  /// Reads a member whose size is at most `cap` into `out` (resized to the member's size).
  void read(const std::string& member, std::uint64_t cap, std::vector<std::byte>& out) const {
    zip_int64_t index = 0;
    const std::uint64_t size = size_of(member, index);
    if (size > cap)
      fail("member \"" + member + "\" declares " + std::to_string(size) + " bytes, more than the " +
           std::to_string(cap) + " that can hold");
    std::unique_ptr<zip_file_t, FileCloser> f(
        zip_fopen_index(zip_.get(), static_cast<zip_uint64_t>(index), 0));
    if (!f) fail("cannot open member \"" + member + "\": " + zip_strerror(zip_.get()));
    out.resize(static_cast<std::size_t>(size));
    std::size_t got = 0;
    while (got < out.size()) {
      const zip_int64_t r = zip_fread(f.get(), out.data() + got, out.size() - got);
      if (r < 0)
        fail("corrupt member \"" + member + "\": " + zip_error_strerror(zip_file_get_error(f.get())));
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    if (got != out.size())
      fail("member \"" + member + "\" ends after " + std::to_string(got) + " of " + std::to_string(size) +
           " bytes");
  }

  bool has(const std::string& member) const {
    return zip_name_locate(zip_.get(), member.c_str(), ZIP_FL_ENC_RAW) >= 0;
  }

 private:
  static std::string message(zip_error_t& err) {
    std::string m = zip_error_strerror(&err);
    zip_error_fini(&err);
    return m;
  }
  std::string where_;
  std::unique_ptr<zip_t, ZipCloser> zip_;
};

// Highest element offset the view touches past storage_offset, or -1 for an empty view.
std::int64_t view_extent(const pickle::TensorRecord& t) {
  std::int64_t last = 0;
  for (std::size_t d = 0; d < t.size.size(); ++d) {
    if (t.size[d] == 0) return -1;
    if (t.size[d] < 0 || t.stride[d] < 0) return -2;
    if (t.size[d] > 1 && t.stride[d] > (INT64_MAX - last) / (t.size[d] - 1)) return -2;
    last += (t.size[d] - 1) * t.stride[d];
  }
  return last;
}

}  // namespace

TorchSaveTensor read_torch_save_tensor(std::span<const std::byte> bytes, const std::string& where,
                                       std::vector<std::byte>& buffer) {
  const Record rec(bytes, where);
  const std::string prefix = rec.prefix();
  if (rec.has(prefix + "byteorder")) {
    std::vector<std::byte> bo;
    rec.read(prefix + "byteorder", 16, bo);
    const std::string order(reinterpret_cast<const char*>(bo.data()), bo.size());
    if (order != "little") rec.fail("storage byte order \"" + order + "\" is not little-endian");
  }
  std::vector<std::byte> pkl;
  rec.read(prefix + "data.pkl", kMaxPickleBytes, pkl);
  const auto doc = pickle::decode(pkl, where + "!" + prefix + "data.pkl");
  pickle::require_allowed(doc, pickle::torch_save_allow_list());
  TorchSaveTensor out;
  out.record = pickle::as_tensor(doc, *doc.root);
  const auto& t = out.record;
  const std::size_t elem = dtype_size(t.dtype);
  const std::int64_t last = view_extent(t);
  if (last == -2) rec.fail("tensor size/stride are negative or overflow");
  if (t.storage_offset < 0 || t.storage_numel < 0) rec.fail("negative storage offset or numel");
  if (last >= 0 && (t.storage_offset > t.storage_numel - 1 || last > t.storage_numel - 1 - t.storage_offset))
    rec.fail("tensor view (offset " + std::to_string(t.storage_offset) + ", size/stride) reaches past its " +
             std::to_string(t.storage_numel) + "-element storage");
  if (static_cast<std::uint64_t>(t.storage_numel) > bytes.size() / elem)
    rec.fail("storage of " + std::to_string(t.storage_numel) + " elements is larger than the record");
  const auto need = static_cast<std::uint64_t>(t.storage_numel) * elem;
  rec.read(prefix + "data/" + t.storage_key, bytes.size(), buffer);
  if (buffer.size() < need)
    rec.fail("storage \"" + t.storage_key + "\" holds " + std::to_string(buffer.size()) + " bytes, " +
             std::to_string(t.storage_numel) + " elements need " + std::to_string(need));
  out.storage = std::span<const std::byte>(buffer);
  return out;
}

}  // namespace gparity::model
