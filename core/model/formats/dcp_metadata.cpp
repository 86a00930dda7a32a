#include "core/model/formats/dcp_metadata.hpp"

#include <map>

#include "core/model/base/input_error.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/pickle/pickle_interpret.hpp"
#include "core/model/formats/pickle/pickle_machine.hpp"

namespace gparity::model {
namespace {

using pickle::Document;
using pickle::Kind;
// Not `using pickle::Value`: model::Value (graph.hpp) is the IR's, and both meet in a unity build.
using PickleValue = pickle::Value;
constexpr std::string_view kMeta = "torch.distributed.checkpoint.metadata";

const PickleValue& need(const Document& doc, const PickleValue& obj, std::string_view name,
                        std::string_view what) {
  const PickleValue* f = pickle::field(obj, name);
  if (!f) pickle::fail_at(doc, obj, std::string(what) + " has no \"" + std::string(name) + "\"");
  return *f;
}

std::uint64_t as_size(const Document& doc, const PickleValue& v, std::string_view what) {
  const auto i = pickle::as_int(doc, v, what);
  if (i < 0) pickle::fail_at(doc, v, std::string(what) + " is negative");
  return static_cast<std::uint64_t>(i);
}

DType tensor_dtype(const Document& doc, const PickleValue& props) {
  if (!props.is_call_of(kMeta, "TensorProperties"))
    pickle::fail_at(doc, props,
                    "tensor properties are " + pickle::describe(props) + ", not TensorProperties");
  // TensorProperties.__getstate__ is a tuple (dtype, layout, requires_grad, memory_format,
  // pin_memory); older releases pickled the dataclass dict.
  const PickleValue* dt = nullptr;
  if (props.state && props.state->kind == Kind::Tuple && !props.state->items.empty())
    dt = props.state->items[0];
  if (!dt) dt = pickle::field(props, "dtype");
  if (!dt) pickle::fail_at(doc, props, "TensorProperties without a dtype");
  const auto d = pickle::as_dtype(*dt);
  if (!d) pickle::fail_at(doc, *dt, "dtype " + pickle::describe(*dt) + " is not one gparity knows");
  return *d;
}

void check_shape(const Document& doc, const PickleValue& at, const std::vector<std::int64_t>& s,
                 std::string_view what) {
  for (const auto d : s)
    if (d < 0) pickle::fail_at(doc, at, std::string(what) + " has a negative extent");
}

DcpEntry tensor_entry(const Document& doc, const std::string& fqn, const PickleValue& m) {
  DcpEntry e;
  e.fqn = fqn;
  const std::string what = "\"" + fqn + "\"";
  e.dtype = tensor_dtype(doc, need(doc, m, "properties", what));
  const PickleValue& size = need(doc, m, "size", what);
  e.size = pickle::as_shape(doc, size, what + " size");
  check_shape(doc, size, e.size, what + " size");
  const PickleValue& chunks = need(doc, m, "chunks", what);
  if (!chunks.is_sequence()) pickle::fail_at(doc, chunks, what + " chunks is not a list");
  for (const PickleValue* c : chunks.items) {
    if (!c->is_call_of(kMeta, "ChunkStorageMetadata"))
      pickle::fail_at(doc, *c, what + ": chunk is " + pickle::describe(*c));
    DcpChunk chunk;
    chunk.offsets = pickle::as_shape(doc, need(doc, *c, "offsets", what), what + " chunk offsets");
    chunk.sizes = pickle::as_shape(doc, need(doc, *c, "sizes", what), what + " chunk sizes");
    check_shape(doc, *c, chunk.offsets, what + " chunk offsets");
    check_shape(doc, *c, chunk.sizes, what + " chunk sizes");
    if (chunk.offsets.size() != e.size.size() || chunk.sizes.size() != e.size.size())
      pickle::fail_at(doc, *c, what + ": chunk rank differs from the tensor's");
    for (std::size_t d = 0; d < e.size.size(); ++d) {
      if (chunk.offsets[d] > e.size[d] || chunk.sizes[d] > e.size[d] - chunk.offsets[d])
        pickle::fail_at(doc, *c,
                        what + ": chunk at offsets [" + std::to_string(chunk.offsets[d]) + " ...] of size " +
                            std::to_string(chunk.sizes[d]) + " leaves dim " + std::to_string(d) +
                            " of extent " + std::to_string(e.size[d]));
    }
    e.chunks.push_back(std::move(chunk));
  }
  return e;
}

DcpLocation location(const Document& doc, const PickleValue& info) {
  if (!info.is_call_of("torch.distributed.checkpoint.filesystem", "_StorageInfo"))
    pickle::fail_at(doc, info, "storage entry is " + pickle::describe(info) + ", not _StorageInfo");
  DcpLocation l;
  const PickleValue& path = need(doc, info, "relative_path", "_StorageInfo");
  l.file = pickle::as_str(doc, path, "relative_path");
  if (l.file.empty() || l.file.find('/') != std::string::npos || l.file.find('\\') != std::string::npos ||
      l.file == "." || l.file == "..")
    pickle::fail_at(doc, path, "relative_path \"" + l.file + "\" is not a plain file name in the folder");
  l.offset = as_size(doc, need(doc, info, "offset", "_StorageInfo"), "storage offset");
  l.length = as_size(doc, need(doc, info, "length", "_StorageInfo"), "storage length");
  const PickleValue* t = pickle::field(info, "transform_descriptors");
  l.has_transforms = t && t->is_sequence() && !t->items.empty();
  return l;
}

}  // namespace

DcpMetadata parse_dcp_metadata(std::span<const std::byte> bytes, const std::string& source) {
  const Document doc = pickle::decode(bytes, source);
  pickle::require_allowed(doc, pickle::dcp_metadata_allow_list());
  const PickleValue& root = *doc.root;
  if (!root.is_call_of(kMeta, "Metadata"))
    pickle::fail_at(doc, root, "not DCP metadata: the pickle holds " + pickle::describe(root));
  DcpMetadata out;
  out.path = source;
  if (const PickleValue* v = pickle::field(root, "version"); v && v->kind == Kind::Str) out.version = v->text;

  const PickleValue& sdm = need(doc, root, "state_dict_metadata", "Metadata");
  const auto* sdm_items = pickle::as_dict(sdm);
  if (!sdm_items) pickle::fail_at(doc, sdm, "state_dict_metadata is not a dict");
  std::map<std::string, std::size_t> by_fqn;
  for (const auto& [k, m] : *sdm_items) {
    const std::string& fqn = pickle::as_str(doc, *k, "state_dict_metadata key");
    if (by_fqn.contains(fqn)) pickle::fail_at(doc, *k, "\"" + fqn + "\" appears twice");
    if (m->is_call_of(kMeta, "TensorStorageMetadata")) {
      out.entries.push_back(tensor_entry(doc, fqn, *m));
    } else if (m->is_call_of(kMeta, "BytesStorageMetadata")) {
      DcpEntry e;
      e.fqn = fqn;
      e.is_tensor = false;
      out.entries.push_back(std::move(e));
    } else {
      pickle::fail_at(doc, *m, "\"" + fqn + "\" has metadata " + pickle::describe(*m));
    }
    by_fqn[fqn] = out.entries.size() - 1;
  }

  const PickleValue& sd = need(doc, root, "storage_data", "Metadata");
  const auto* sd_items = pickle::as_dict(sd);
  if (!sd_items) pickle::fail_at(doc, sd, "storage_data is not a dict");
  for (const auto& [k, info] : *sd_items) {
    if (!k->is_call_of(kMeta, "MetadataIndex"))
      pickle::fail_at(doc, *k, "storage_data key is " + pickle::describe(*k) + ", not MetadataIndex");
    const std::string& fqn = pickle::as_str(doc, need(doc, *k, "fqn", "MetadataIndex"), "fqn");
    const auto it = by_fqn.find(fqn);
    if (it == by_fqn.end())
      pickle::fail_at(doc, *k, "storage_data names \"" + fqn + "\", which has no metadata");
    DcpEntry& e = out.entries[it->second];
    DcpLocation where = location(doc, *info);
    if (!e.is_tensor) {
      e.bytes_where = std::move(where);
      continue;
    }
    const PickleValue* off = pickle::field(*k, "offset");
    if (!off || off->kind == Kind::None)
      pickle::fail_at(doc, *k, "\"" + fqn + "\": tensor chunk without offsets");
    const auto offsets = pickle::as_shape(doc, *off, "chunk offset");
    bool found = false;
    for (auto& c : e.chunks) {
      if (c.offsets != offsets) continue;
      if (c.where) pickle::fail_at(doc, *k, "\"" + fqn + "\": two storage entries for one chunk");
      c.where = std::move(where);
      found = true;
      break;
    }
    if (!found)
      pickle::fail_at(doc, *k, "\"" + fqn + "\": storage entry for a chunk the metadata does not list");
  }
  return out;
}

DcpMetadata read_dcp_metadata(const std::string& path) {
  const MappedFile file(path);
  return parse_dcp_metadata(file.bytes(), path);
}

}  // namespace gparity::model
