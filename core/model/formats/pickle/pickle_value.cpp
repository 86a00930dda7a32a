#include "core/model/formats/pickle/pickle_value.hpp"

namespace gparity::model::pickle {

bool Value::is_call_of(std::string_view module, std::string_view name) const noexcept {
  return kind == Kind::Object && callable && callable->kind == Kind::Global && callable->text == module &&
         callable->text2 == name;
}

const Value* Value::get(std::string_view key) const noexcept {
  for (auto it = pairs.rbegin(); it != pairs.rend(); ++it)
    if (it->first->kind == Kind::Str && it->first->text == key) return it->second;
  return nullptr;
}

std::string describe(const Value& v) {
  switch (v.kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::BigInt: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Set: return "set";
    case Kind::FrozenSet: return "frozenset";
    case Kind::Global: return "global " + v.text + "." + v.text2;
    case Kind::Object:
      if (v.callable && v.callable->kind == Kind::Global)
        return v.callable->text + "." + v.callable->text2 + "(...)";
      return "object";
    case Kind::PersId: return "persistent id";
    case Kind::Buffer: return "out-of-band buffer";
  }
  return "value";
}

}  // namespace gparity::model::pickle
