#include "core/model/formats/pickle/pickle_interpret.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/model/base/input_error.hpp"

namespace gparity::model::pickle {
namespace {

constexpr std::array<GlobalName, 22> kTorchSave{{
    {"torch._utils", "_rebuild_tensor_v2"},
    {"collections", "OrderedDict"},
    {"torch", "FloatStorage"},
    {"torch", "DoubleStorage"},
    {"torch", "HalfStorage"},
    {"torch", "BFloat16Storage"},
    {"torch", "LongStorage"},
    {"torch", "IntStorage"},
    {"torch", "ShortStorage"},
    {"torch", "CharStorage"},
    {"torch", "ByteStorage"},
    {"torch", "BoolStorage"},
    {"torch", "ComplexFloatStorage"},
    {"torch", "Float8_e4m3fnStorage"},
    {"torch", "Float8_e5m2Storage"},
    {"torch", "UInt16Storage"},
    {"torch", "UInt32Storage"},
    {"torch", "UInt64Storage"},
    {"torch", "Size"},
    {"torch", "float32"},
    {"torch", "bfloat16"},
    {"torch", "float16"},
}};

constexpr std::array<GlobalName, 16> kDcp{{
    {"torch.distributed.checkpoint.metadata", "Metadata"},
    {"torch.distributed.checkpoint.metadata", "TensorStorageMetadata"},
    {"torch.distributed.checkpoint.metadata", "BytesStorageMetadata"},
    {"torch.distributed.checkpoint.metadata", "TensorProperties"},
    {"torch.distributed.checkpoint.metadata", "ChunkStorageMetadata"},
    {"torch.distributed.checkpoint.metadata", "MetadataIndex"},
    {"torch.distributed.checkpoint.metadata", "StorageMeta"},
    {"torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING"},
    {"torch.distributed.checkpoint.filesystem", "_StorageInfo"},
    {"torch.distributed.checkpoint._extension", "ExtensionDescriptor"},
    {"torch.serialization", "_get_layout"},
    {"torch", "Size"},
    {"collections", "OrderedDict"},
    {"pathlib", "PosixPath"},
    {"pathlib", "WindowsPath"},
    {"pathlib", "PurePosixPath"},
}};

struct StorageName {
  std::string_view name;
  DType dtype;
};
constexpr std::array<StorageName, 16> kStorages{{
    {"FloatStorage", DType::F32},
    {"DoubleStorage", DType::F64},
    {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16},
    {"LongStorage", DType::I64},
    {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16},
    {"CharStorage", DType::I8},
    {"ByteStorage", DType::U8},
    {"BoolStorage", DType::Bool},
    {"ComplexFloatStorage", DType::C64},
    {"Float8_e4m3fnStorage", DType::F8E4M3},
    {"Float8_e5m2Storage", DType::F8E5M2},
    {"UInt16Storage", DType::U16},
    {"UInt32Storage", DType::U32},
    {"UInt64Storage", DType::U64},
}};

bool allowed_global(const Value& g, std::span<const GlobalName> allowed) noexcept {
  // Every torch dtype (torch.float32, torch.int64, ...) is a plain value, never a callable here.
  if (g.text == "torch" && as_dtype(g)) return true;
  for (const auto& a : allowed)
    if (g.text == a.module && g.text2 == a.name) return true;
  return false;
}

}  // namespace

std::span<const GlobalName> torch_save_allow_list() noexcept {
  return kTorchSave;
}
std::span<const GlobalName> dcp_metadata_allow_list() noexcept {
  return kDcp;
}

void fail_at(const Document& doc, const Value& v, const std::string& problem) {
  throw InputError(doc.source, "byte " + std::to_string(v.offset) + ": " + problem);
}

void require_allowed(const Document& doc, std::span<const GlobalName> allowed) {
  // The arena holds every value the pickle made, reachable or not: check them all.
  doc.arena.for_each([&](const Value& v) {
    if (v.kind != Kind::Global || allowed_global(v, allowed)) return;
    fail_at(doc, v,
            "refusing this pickle: it references " + v.text + "." + v.text2 +
                ", which is not on the allow-list of known shapes (nothing was imported or called)");
  });
}

std::optional<DType> as_dtype(const Value& v) noexcept {
  if (v.kind != Kind::Global || v.text != "torch") return std::nullopt;
  // Only the canonical names torch uses for dtype objects (not aliases like torch.float).
  const auto d = parse_dtype(v.text2);
  if (!d || dtype_name(*d) != v.text2) return std::nullopt;
  return d;
}

std::int64_t as_int(const Document& doc, const Value& v, std::string_view what) {
  if (v.kind != Kind::Int) fail_at(doc, v, std::string(what) + " is " + describe(v) + ", not an int");
  return v.i;
}

const std::string& as_str(const Document& doc, const Value& v, std::string_view what) {
  if (v.kind != Kind::Str) fail_at(doc, v, std::string(what) + " is " + describe(v) + ", not a str");
  return v.text;
}

std::vector<std::int64_t> as_shape(const Document& doc, const Value& v, std::string_view what) {
  const Value* seq = &v;
  if (v.is_call_of("torch", "Size")) {
    if (!v.args || v.args->kind != Kind::Tuple || v.args->items.size() != 1)
      fail_at(doc, v, std::string(what) + ": torch.Size takes one tuple");
    seq = v.args->items[0];
  }
  if (!seq->is_sequence()) fail_at(doc, *seq, std::string(what) + " is " + describe(*seq) + ", not a shape");
  std::vector<std::int64_t> out;
  out.reserve(seq->items.size());
  for (const Value* d : seq->items) out.push_back(as_int(doc, *d, what));
  return out;
}

const std::vector<std::pair<Value*, Value*>>* as_dict(const Value& v) noexcept {
  if (v.kind == Kind::Dict || v.is_call_of("collections", "OrderedDict")) return &v.pairs;
  return nullptr;
}

const Value* field(const Value& obj, std::string_view name) noexcept {
  if (obj.kind != Kind::Object || !obj.state || !as_dict(*obj.state)) return nullptr;
  return obj.state->get(name);
}

TensorRecord as_tensor(const Document& doc, const Value& v) {
  if (!v.is_call_of("torch._utils", "_rebuild_tensor_v2"))
    fail_at(doc, v, "expected a tensor (torch._utils._rebuild_tensor_v2), found " + describe(v));
  const Value* args = v.args;
  if (!args || args->kind != Kind::Tuple || args->items.size() < 4)
    fail_at(doc, v, "_rebuild_tensor_v2 needs (storage, storage_offset, size, stride, ...)");
  const Value& ref = *args->items[0];
  if (ref.kind != Kind::PersId || ref.items.size() != 1 || ref.items[0]->kind != Kind::Tuple)
    fail_at(doc, ref, "tensor storage is " + describe(ref) + ", not a persistent storage reference");
  const auto& id = ref.items[0]->items;
  // ('storage', torch.<Type>Storage, key, location, numel)
  if (id.size() != 5 || id[0]->kind != Kind::Str || id[0]->text != "storage")
    fail_at(doc, ref, "storage reference is not ('storage', type, key, location, numel)");
  TensorRecord t;
  const Value& type = *id[1];
  bool known = false;
  if (type.kind == Kind::Global && type.text == "torch") {
    for (const auto& s : kStorages) {
      if (type.text2 == s.name) {
        t.dtype = s.dtype;
        known = true;
      }
    }
  }
  if (!known) fail_at(doc, type, "storage type " + describe(type) + " is not a known typed storage");
  t.storage_key = as_str(doc, *id[2], "storage key");
  t.location = as_str(doc, *id[3], "storage location");
  t.storage_numel = as_int(doc, *id[4], "storage numel");
  t.storage_offset = as_int(doc, *args->items[1], "storage offset");
  t.size = as_shape(doc, *args->items[2], "tensor size");
  t.stride = as_shape(doc, *args->items[3], "tensor stride");
  if (t.size.size() != t.stride.size()) fail_at(doc, v, "tensor size and stride have different ranks");
  if (t.storage_key.empty() || t.storage_key.find('/') != std::string::npos ||
      t.storage_key.find("..") != std::string::npos)
    fail_at(doc, *id[2], "storage key \"" + t.storage_key + "\" is not a plain member name");
  return t;
}

namespace {

// Shared references can make a small pickle a huge tree (a list holding one list twice, thirty
// levels deep, is 2^30 nodes): the expansion is capped, not just the depth.
nlohmann::json to_json_capped(const Document& doc, const Value& v, int max_depth, std::size_t& budget) {
  if (budget == 0) fail_at(doc, v, "expands past the limit of values (shared references repeated too often)");
  --budget;
  if (max_depth <= 0) fail_at(doc, v, "nested deeper than " + std::to_string(kMaxInterpretDepth) + " levels");
  switch (v.kind) {
    case Kind::None: return nullptr;
    case Kind::Bool: return v.b;
    case Kind::Int: return v.i;
    case Kind::Float:
      if (!std::isfinite(v.f)) return nullptr;  // JSON has no NaN/inf; the JSON dumps write null too
      return v.f;
    case Kind::Str: return v.text;
    case Kind::Bytes: {
      std::string s;  // latin-1 to UTF-8, so the JSON stays valid
      for (const char c : v.text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80) {
          s += c;
        } else {
          s += static_cast<char>(0xC0 | (u >> 6));
          s += static_cast<char>(0x80 | (u & 0x3F));
        }
      }
      return s;
    }
    case Kind::Tuple:
    case Kind::List:
    case Kind::Set:
    case Kind::FrozenSet: {
      nlohmann::json a = nlohmann::json::array();
      for (const Value* x : v.items) a.push_back(to_json_capped(doc, *x, max_depth - 1, budget));
      return a;
    }
    case Kind::Object:
      // Protocols 0 to 2 have no bytes opcodes: bytes pickle as _codecs.encode(str, 'latin1'),
      // whose text is already the bytes as latin-1 code points.
      if (v.is_call_of("_codecs", "encode") && v.args && v.args->kind == Kind::Tuple &&
          v.args->items.size() == 2 && v.args->items[0]->is_str() && v.args->items[1]->is_str() &&
          v.args->items[1]->text == "latin1")
        return v.args->items[0]->text;
      if (!as_dict(v)) break;
      [[fallthrough]];  // an OrderedDict is a dict here
    case Kind::Dict: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [k, x] : v.pairs) {
        std::string key;
        if (k->kind == Kind::Str)
          key = k->text;
        else if (k->kind == Kind::Int)
          key = std::to_string(k->i);
        else
          fail_at(doc, *k, "dict key is " + describe(*k) + ", not a str or an int");
        o[key] = to_json_capped(doc, *x, max_depth - 1, budget);
      }
      return o;
    }
    default: break;
  }
  fail_at(doc, v, describe(v) + " is not plain data");
}

}  // namespace

nlohmann::json to_json(const Document& doc, const Value& v, int max_depth) {
  std::size_t budget = std::max<std::size_t>(doc.arena.size() * 4, std::size_t{1} << 16);
  return to_json_capped(doc, v, max_depth, budget);
}

}  // namespace gparity::model::pickle
