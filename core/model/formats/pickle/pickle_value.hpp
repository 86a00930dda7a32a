#pragma once
// The value tree a pickle decodes to, without executing anything: containers and scalars as
// themselves, GLOBAL/STACK_GLOBAL as symbolic (module, name) references, REDUCE/NEWOBJ/OBJ/INST/
// BUILD as records of the referenced callable with its arguments and state, persistent ids as
// values. Values live in the Document's arena (stable addresses), so memo sharing and even
// self-referencing containers need no reference counting and free in one go.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gparity::model::pickle {

enum class Kind : std::uint8_t {
  None,
  Bool,
  Int,
  BigInt,  // wider than 64 bits: `text` holds its digits (decimal, or 0x-prefixed two's complement)
  Float,
  Str,
  Bytes,
  Tuple,
  List,
  Dict,
  Set,
  FrozenSet,
  Global,  // text = module, text2 = name
  Object,  // callable(args, kwargs) then state, appended items and set items, never run
  PersId,  // persistent id: items[0] is the id value
  Buffer,  // protocol-5 out-of-band buffer (not part of the stream)
};

/// How an Object came to be.
enum class Built : std::uint8_t { Reduce, NewObj, NewObjEx, Obj, Inst, Build };

struct Value {
  Kind kind = Kind::None;
  std::size_t offset = 0;  // byte offset of the opcode that made it
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string text, text2;
  std::vector<Value*> items;                     // Tuple, List, Set, FrozenSet, PersId; Object: appended
  std::vector<std::pair<Value*, Value*>> pairs;  // Dict; Object: SETITEM(S) on it
  // Object only.
  Built built = Built::Reduce;
  Value* callable = nullptr;  // a Global (or whatever the pickle put there); null for Build on a non-object
  Value* args = nullptr;
  Value* kwargs = nullptr;
  Value* state = nullptr;  // BUILD's argument

  [[nodiscard]] bool is_str() const noexcept { return kind == Kind::Str; }
  [[nodiscard]] bool is_int() const noexcept { return kind == Kind::Int; }
  [[nodiscard]] bool is_sequence() const noexcept { return kind == Kind::Tuple || kind == Kind::List; }
  /// For an Object whose callable is a Global: is it module.name?
  [[nodiscard]] bool is_call_of(std::string_view module, std::string_view name) const noexcept;
  /// The dict entry with this string key (Dict, or an Object's set items); null when absent.
  [[nodiscard]] const Value* get(std::string_view key) const noexcept;
};

/// Every Value a pickle made, at stable addresses, allocated in blocks that grow (a DCP chunk's
/// pickle makes a few dozen values: one allocation, not one per value or two).
class Arena {
 public:
  Arena() = default;
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  /// A new default Value.
  Value& emplace_back();
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Calls f(const Value&) on every value, in the order they were made.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& b : blocks_)
      for (std::size_t i = 0; i < b.used; ++i) f(b.values[i]);
  }

 private:
  struct Block {
    Value* values;
    std::size_t capacity, used;
  };
  void release() noexcept;
  std::vector<Block> blocks_;
  std::size_t size_ = 0;
};

/// A decoded pickle: the arena and the value STOP returned.
struct Document {
  std::string source;
  Arena arena;
  const Value* root = nullptr;
  int protocol = 0;
};

/// "None", "int", "str", "tuple", "torch._utils._rebuild_tensor_v2(...)", ...: for messages.
std::string describe(const Value& v);

}  // namespace gparity::model::pickle
