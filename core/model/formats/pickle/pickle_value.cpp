#include "core/model/formats/pickle/pickle_value.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace gparity::model::pickle {

Arena::Arena(Arena&& other) noexcept
    : blocks_(std::exchange(other.blocks_, {})), size_(std::exchange(other.size_, 0)) {}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    blocks_ = std::exchange(other.blocks_, {});
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Arena::~Arena() {
  release();
}

void Arena::release() noexcept {
  std::allocator<Value> alloc;
  for (auto& b : blocks_) {
    std::destroy_n(b.values, b.used);
    alloc.deallocate(b.values, b.capacity);
  }
  blocks_.clear();
  size_ = 0;
}

Value& Arena::emplace_back() {
  if (blocks_.empty() || blocks_.back().used == blocks_.back().capacity) {
    // 64 values, then doubling up to 64 Ki values a block.
    const std::size_t capacity =
        blocks_.empty() ? 64 : std::min<std::size_t>(blocks_.back().capacity * 2, 1 << 16);
    std::allocator<Value> alloc;
    blocks_.reserve(blocks_.size() + 1);  // so that push_back cannot throw after the allocation
    blocks_.push_back({alloc.allocate(capacity), capacity, 0});
  }
  Block& b = blocks_.back();
  Value* v = std::construct_at(b.values + b.used);
  ++b.used;
  ++size_;
  return *v;
}

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
