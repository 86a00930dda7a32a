#include "core/model/formats/pickle/pickle_machine.hpp"

#include <unordered_map>
#include <vector>

#include "core/model/formats/pickle/pickle_ops.hpp"

namespace gparity::model::pickle {
namespace {

class Machine {
 public:
  Machine(std::span<const std::byte> bytes, const std::string& source, const Limits& limits)
      : ops_(bytes, source), limits_(limits) {
    doc_.source = source;
    if (bytes.size() > limits.max_bytes)
      ops_.fail(0, "pickle of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                       std::to_string(limits.max_bytes));
  }

  Document run() {
    while (true) {
      Op op = ops_.next();
      at_ = op.offset;
      if (step(op)) break;
    }
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { ops_.fail(at_, problem); }

  Value* make(Kind k) {
    if (doc_.arena.size() >= limits_.max_values)
      fail("more than " + std::to_string(limits_.max_values) + " values (limit)");
    Value& v = doc_.arena.emplace_back();
    v.kind = k;
    v.offset = at_;
    return &v;
  }
  void push(Value* v) {
    if (stack_.size() + marks_.size() >= limits_.max_stack)
      fail("stack deeper than " + std::to_string(limits_.max_stack) + " (limit)");
    stack_.push_back(v);
  }
  std::size_t base() const noexcept { return marks_.empty() ? 0 : marks_.back(); }
  Value* pop(const char* what) {
    if (stack_.size() <= base()) fail(std::string(what) + ": stack underflow");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top(const char* what) {
    if (stack_.size() <= base()) fail(std::string(what) + ": stack underflow");
    return stack_.back();
  }
  std::vector<Value*> pop_mark(const char* what) {
    if (marks_.empty()) fail(std::string(what) + ": no MARK on the stack");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> out(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return out;
  }
  Value* sequence(Kind k, std::vector<Value*> items) {
    Value* v = make(k);
    v->items = std::move(items);
    return v;
  }
  void add_items(Value* target, std::vector<Value*>& items, const char* what) {
    if (target->kind != Kind::List && target->kind != Kind::Object && target->kind != Kind::Set)
      fail(std::string(what) + " on " + describe(*target));
    if (target->items.size() + items.size() > limits_.max_container)
      fail(std::string(what) + ": container grows past " + std::to_string(limits_.max_container) +
           " items (limit)");
    target->items.insert(target->items.end(), items.begin(), items.end());
  }
  void set_items(Value* target, const std::vector<Value*>& kv, const char* what) {
    if (kv.size() % 2) fail(std::string(what) + ": odd number of items (a key without a value)");
    if (target->kind != Kind::Dict && target->kind != Kind::Object)
      fail(std::string(what) + " on " + describe(*target));
    if (target->pairs.size() + kv.size() / 2 > limits_.max_container)
      fail(std::string(what) + ": dict grows past " + std::to_string(limits_.max_container) +
           " items (limit)");
    // Duplicate keys are kept; Value::get returns the last, as Python's dict would hold it.
    for (std::size_t i = 0; i < kv.size(); i += 2) target->pairs.emplace_back(kv[i], kv[i + 1]);
  }
  Value* global(std::string&& module, std::string&& name) {
    Value* g = make(Kind::Global);
    g->text = std::move(module);
    g->text2 = std::move(name);
    return g;
  }
  Value* object(Built how, Value* callable, Value* args, Value* kwargs = nullptr) {
    Value* o = make(Kind::Object);
    o->built = how;
    o->callable = callable;
    o->args = args;
    o->kwargs = kwargs;
    return o;
  }
  // The memo: indices are dense in what pickle writes (0, 1, 2, ... by MEMOIZE or PUT), so they
  // index a vector; one far beyond the entries so far (only a hand-made pickle) goes to a map,
  // so that a single large index cannot allocate a huge vector.
  void memo_put(std::int64_t index, Value* v) {
    if (index < 0 || static_cast<std::uint64_t>(index) >= limits_.max_memo)
      fail("memo index " + std::to_string(index) + " beyond the limit of " +
           std::to_string(limits_.max_memo));
    Value** slot = memo_find(index);
    if (!slot) {
      if (memo_count_ >= limits_.max_memo)
        fail("more than " + std::to_string(limits_.max_memo) + " memo entries (limit)");
      const auto at = static_cast<std::size_t>(index);
      if (at < memo_dense_.size()) {
        slot = &memo_dense_[at];
      } else if (at < 2 * memo_count_ + 1024) {
        memo_dense_.resize(at + 1, nullptr);
        slot = &memo_dense_[at];
      } else {
        slot = &memo_sparse_[index];
      }
      ++memo_count_;
    }
    *slot = v;
  }
  // The entry's slot, null when the index was never stored (an index lives in one of the two).
  Value** memo_find(std::int64_t index) {
    const auto at = static_cast<std::size_t>(index);
    if (at < memo_dense_.size() && memo_dense_[at]) return &memo_dense_[at];
    if (memo_sparse_.empty()) return nullptr;
    const auto it = memo_sparse_.find(index);
    return it == memo_sparse_.end() ? nullptr : &it->second;
  }
  Value* memo_get(std::int64_t index) {
    Value** slot = index < 0 ? nullptr : memo_find(index);
    if (!slot) fail("memo entry " + std::to_string(index) + " was never stored");
    return *slot;
  }
  Value* scalar(Op& op) {
    Value* v = nullptr;
    switch (op.kind) {
      case ArgKind::Int:
        v = make(Kind::Int);
        v->i = op.i;
        break;
      case ArgKind::Bool:
        v = make(Kind::Bool);
        v->b = op.i != 0;
        break;
      case ArgKind::BigInt:
        v = make(Kind::BigInt);
        v->text = std::move(op.text);
        break;
      case ArgKind::Float:
        v = make(Kind::Float);
        v->f = op.f;
        break;
      case ArgKind::Text:
        v = make(Kind::Str);
        v->text = std::move(op.text);
        break;
      default:
        v = make(Kind::Bytes);
        v->text = std::move(op.text);
        break;
    }
    return v;
  }

  // Returns true at STOP.
  bool step(Op& op) {
    switch (op.code) {
      case '\x80':
        if (op.i > 5) fail("unsupported pickle protocol " + std::to_string(op.i));
        doc_.protocol = static_cast<int>(op.i);
        break;
      case '\x95':
      case '\x98': break;  // FRAME, READONLY_BUFFER: nothing to build
      case '.': {
        if (stack_.empty()) fail("STOP with an empty stack");
        doc_.root = stack_.back();
        return true;
      }
      case '(':
        if (stack_.size() + marks_.size() >= limits_.max_stack) fail("too many MARKs (limit)");
        marks_.push_back(stack_.size());
        break;
      case '0':
        if (stack_.size() > base())
          stack_.pop_back();
        else if (!marks_.empty())
          marks_.pop_back();
        else
          fail("POP: stack underflow");
        break;
      case '1': pop_mark("POP_MARK"); break;
      case '2': push(top("DUP")); break;
      case 'F':
      case 'I':
      case 'J':
      case 'K':
      case 'M':
      case 'L':
      case '\x8a':
      case '\x8b':
      case 'S':
      case 'T':
      case 'U':
      case 'B':
      case 'C':
      case '\x8e':
      case '\x96':
      case 'V':
      case '\x8c':
      case 'X':
      case '\x8d':
      case 'G': push(scalar(op)); break;
      case 'N': push(make(Kind::None)); break;
      case '\x88':
      case '\x89': {
        Value* v = make(Kind::Bool);
        v->b = op.code == '\x88';
        push(v);
        break;
      }
      case ']': push(make(Kind::List)); break;
      case ')': push(make(Kind::Tuple)); break;
      case '}': push(make(Kind::Dict)); break;
      case '\x8f': push(make(Kind::Set)); break;
      case 'l': push(sequence(Kind::List, pop_mark("LIST"))); break;
      case 't': push(sequence(Kind::Tuple, pop_mark("TUPLE"))); break;
      case '\x91': push(sequence(Kind::FrozenSet, pop_mark("FROZENSET"))); break;
      case '\x85':
      case '\x86':
      case '\x87': {
        const std::size_t n = static_cast<std::size_t>(op.code - '\x85') + 1;
        if (stack_.size() < base() + n) fail("TUPLE" + std::to_string(n) + ": stack underflow");
        std::vector<Value*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(sequence(Kind::Tuple, std::move(items)));
        break;
      }
      case 'd': {
        Value* d = make(Kind::Dict);
        set_items(d, pop_mark("DICT"), "DICT");
        push(d);
        break;
      }
      case 'a': {
        std::vector<Value*> one{pop("APPEND")};
        add_items(top("APPEND"), one, "APPEND");
        break;
      }
      case 'e': {
        auto items = pop_mark("APPENDS");
        add_items(top("APPENDS"), items, "APPENDS");
        break;
      }
      case '\x90': {
        auto items = pop_mark("ADDITEMS");
        Value* s = top("ADDITEMS");
        if (s->kind != Kind::Set) fail("ADDITEMS on " + describe(*s));
        add_items(s, items, "ADDITEMS");
        break;
      }
      case 's': {
        Value* v = pop("SETITEM");
        Value* k = pop("SETITEM");
        set_items(top("SETITEM"), {k, v}, "SETITEM");
        break;
      }
      case 'u': {
        const auto kv = pop_mark("SETITEMS");
        set_items(top("SETITEMS"), kv, "SETITEMS");
        break;
      }
      case 'g':
      case 'h':
      case 'j': push(memo_get(op.i)); break;
      case 'p':
      case 'q':
      case 'r': memo_put(op.i, top("PUT")); break;
      case '\x94': memo_put(static_cast<std::int64_t>(memo_count_), top("MEMOIZE")); break;
      case '\x82':
      case '\x83':
      case '\x84': push(global("copyreg extension", std::to_string(op.i))); break;
      case 'c': push(global(std::move(op.text), std::move(op.text2))); break;
      case '\x93': {
        Value* name = pop("STACK_GLOBAL");
        Value* module = pop("STACK_GLOBAL");
        if (!module->is_str() || !name->is_str())
          fail("STACK_GLOBAL needs two strings, got " + describe(*module) + " and " + describe(*name));
        push(global(std::string(module->text), std::string(name->text)));
        break;
      }
      case 'R': {
        Value* args = pop("REDUCE");
        Value* callable = pop("REDUCE");
        push(object(Built::Reduce, callable, args));
        break;
      }
      case '\x81': {
        Value* args = pop("NEWOBJ");
        Value* cls = pop("NEWOBJ");
        push(object(Built::NewObj, cls, args));
        break;
      }
      case '\x92': {
        Value* kwargs = pop("NEWOBJ_EX");
        Value* args = pop("NEWOBJ_EX");
        Value* cls = pop("NEWOBJ_EX");
        push(object(Built::NewObjEx, cls, args, kwargs));
        break;
      }
      case 'o': {
        auto items = pop_mark("OBJ");
        if (items.empty()) fail("OBJ without a class");
        Value* cls = items.front();
        items.erase(items.begin());
        push(object(Built::Obj, cls, sequence(Kind::Tuple, std::move(items))));
        break;
      }
      case 'i': {
        auto items = pop_mark("INST");
        Value* cls = global(std::move(op.text), std::move(op.text2));
        push(object(Built::Inst, cls, sequence(Kind::Tuple, std::move(items))));
        break;
      }
      case 'b': {
        Value* state = pop("BUILD");
        Value* target = top("BUILD");
        if (target->kind != Kind::Object || target->state != nullptr) {
          // BUILD on something that is not a fresh record: keep the original as the args of a
          // Build record, in place, so memo references see the state too.
          Value* original = make(Kind::None);
          *original = std::move(*target);
          *target = Value{};
          target->kind = Kind::Object;
          target->offset = at_;
          target->built = Built::Build;
          target->args = original;
        }
        target->state = state;
        break;
      }
      case 'P': {
        Value* id = make(Kind::Str);
        id->text = std::move(op.text);
        push(sequence(Kind::PersId, {id}));
        break;
      }
      case 'Q': push(sequence(Kind::PersId, {pop("BINPERSID")})); break;
      case '\x97': push(make(Kind::Buffer)); break;
      default: fail("unhandled opcode");
    }
    return false;
  }

  OpReader ops_;
  const Limits& limits_;
  Document doc_;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Value*> memo_dense_;
  std::unordered_map<std::int64_t, Value*> memo_sparse_;
  std::size_t memo_count_ = 0;  // entries in both
  std::size_t at_ = 0;
};

}  // namespace

Document decode(std::span<const std::byte> bytes, const std::string& source, const Limits& limits) {
  return Machine(bytes, source, limits).run();
}

}  // namespace gparity::model::pickle
