#pragma once
// Interpretation of a decoded pickle (pickle_machine) for an allow-list of known shapes only:
// dtypes, torch.Size, torch._utils._rebuild_tensor_v2 with torch.save's storage references, the
// DCP metadata classes, and plain data (to JSON). A pickle that references any callable outside
// the allow-list is refused as a whole, naming the reference and its byte offset; nothing is ever
// imported or called. Traversals are depth-capped, so hostile nesting cannot exhaust the stack.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/base/dtype.hpp"
#include "core/model/formats/pickle/pickle_value.hpp"

namespace gparity::model::pickle {

inline constexpr int kMaxInterpretDepth = 200;

struct GlobalName {
  std::string_view module, name;
};

/// What torch.save writes for tensors (rebuild functions, storage classes, OrderedDict).
std::span<const GlobalName> torch_save_allow_list() noexcept;
/// What DCP's .metadata holds (its dataclasses, torch.Size, dtypes, layouts, memory formats, paths).
std::span<const GlobalName> dcp_metadata_allow_list() noexcept;

/// Throws InputError (source, byte offset) naming the first global reference outside `allowed`
/// (an empty list allows none: plain data only).
void require_allowed(const Document& doc, std::span<const GlobalName> allowed);

/// InputError "<source>: byte <v.offset>: <problem>".
[[noreturn]] void fail_at(const Document& doc, const Value& v, const std::string& problem);

/// torch.float32 and friends (a Global in module torch).
std::optional<DType> as_dtype(const Value& v) noexcept;
/// A tuple/list of ints, or torch.Size(tuple of ints).
std::vector<std::int64_t> as_shape(const Document& doc, const Value& v, std::string_view what);
/// An int (throws otherwise).
std::int64_t as_int(const Document& doc, const Value& v, std::string_view what);
/// A str (throws otherwise).
const std::string& as_str(const Document& doc, const Value& v, std::string_view what);

/// A tensor as torch.save pickles it: _rebuild_tensor_v2(storage_ref, offset, size, stride, ...).
struct TensorRecord {
  std::string storage_key;  // member data/<key> of the archive
  DType dtype{};
  std::string location;             // "cpu", "cuda:0"
  std::int64_t storage_numel = 0;   // elements in the storage
  std::int64_t storage_offset = 0;  // elements
  std::vector<std::int64_t> size, stride;
};
TensorRecord as_tensor(const Document& doc, const Value& v);

/// The items of a dict or of a collections.OrderedDict record; null for anything else.
const std::vector<std::pair<Value*, Value*>>* as_dict(const Value& v) noexcept;

/// An allow-listed object's field: the BUILD state dict's entry (dataclasses), or null.
const Value* field(const Value& obj, std::string_view name) noexcept;

/// Plain data as JSON: None, bool, int, float, str, bytes (as a latin-1 string), tuple/list/set
/// (arrays), dicts with str or int keys (objects). Anything else is refused.
nlohmann::json to_json(const Document& doc, const Value& v, int max_depth = kMaxInterpretDepth);

}  // namespace gparity::model::pickle
