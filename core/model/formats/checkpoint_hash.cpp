#include "core/model/formats/checkpoint_hash.hpp"

#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/safetensors.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

namespace gparity::model {

FileDigest hash_file(const std::string& path) {
  FileDigest out{path, "raw", {}};
  bool is_st = path.ends_with(".safetensors");
  if (!is_st) {
    const MappedFile probe(path);
    is_st = looks_like_safetensors(probe.bytes().first(std::min<std::size_t>(probe.bytes().size(), 9)));
    if (!is_st) {
      const auto bytes = probe.bytes();
      out.tensors.push_back({path,
                             std::nullopt,
                             {static_cast<std::int64_t>(bytes.size())},
                             hash::xxh3_64(bytes),
                             hash::shard_hash_contiguous(bytes, 1)});
      return out;
    }
  }
  const SafetensorsFile st(path);
  out.format = "safetensors";
  for (const auto& t : st.tensors()) {
    const auto bytes = st.bytes(t);
    const hash::BlockView view{bytes.data(), dtype_size(t.dtype), t.shape, {}};
    out.tensors.push_back(
        {t.name, t.dtype, t.shape, hash::xxh3_64(bytes), hash::shard_hash(view, hash::GlobalPlacement{})});
  }
  return out;
}

}  // namespace gparity::model
