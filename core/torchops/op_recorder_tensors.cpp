// The op recorder: tensor identity within a step, versions, views, and which tensors are hashed
// (op_recorder_state.hpp).

#include <algorithm>
#include <cctype>

#include "core/model/ops/op_log.hpp"
#include "core/runtime/cuda_graph.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

bool hashable(const at::Tensor& t) {
  return t.layout() == at::kStrided && (t.is_cpu() || t.is_cuda()) && dtype_name(t.scalar_type()) &&
         t.has_storage() && !t.key_set().has(c10::DispatchKey::Python);
}

std::int64_t version_of(c10::TensorImpl& impl) {  // version_counter() is not const
  return impl.is_inference() ? 0 : static_cast<std::int64_t>(impl.version_counter().current_version());
}

std::int64_t version_of(const at::Tensor& t) {
  return version_of(*t.unsafeGetTensorImpl());
}

/// The hashed tensor whose hash is `k`'s tensor's value now (itself, or a view's base: fresh, at
/// the version hashed), or null. A view whose base is gone (a gradient outliving the mm output it
/// is a transpose of) still holds it while `self` is at the version its base had (view ops and
/// detach share the base's counter, so a write through either shows).
const Known* fresh_hashed(State& s, const Known& k, const at::Tensor* self = nullptr) {
  const Known* h = &k;
  if (k.base) {
    const auto it = s.known.find(k.base);
    if (it == s.known.end() || it->second.id != k.base_id) return nullptr;
    h = &it->second;
  }
  if (!h->fresh) return nullptr;
  const auto impl = h->keep.lock();
  if (!impl) {
    const bool holds = h != &k && self && version_of(*self) == k.version;
    return holds ? h : nullptr;
  }
  return version_of(*impl) == h->version ? h : nullptr;
}

/// `written` was written: every other tensor of the step in its storage no longer holds what its
/// hash says (its next reader hashes it again).
void stale_aliases(State& s, const c10::StorageImpl* storage, const c10::TensorImpl* written) {
  const auto it = s.by_storage.find(storage);
  if (it == s.by_storage.end()) return;
  for (const auto* other : it->second.tensors) {
    if (other == written) continue;
    if (const auto k = s.known.find(other); k != s.known.end()) k->second.fresh = false;
  }
}

/// The hashed tensor a view input lies in: its autograd base (at::Tensor::_base), while that is
/// fresh; else null.
const Known* fresh_base_of(State& s, const at::Tensor& t) {
  if (!t.is_view()) return nullptr;
  const auto it = s.known.find(t._base().unsafeGetTensorImpl());
  return it == s.known.end() ? nullptr : fresh_hashed(s, it->second);
}

/// The storage elements [lo, hi) `t`'s elements fill exactly (non-overlapping and dense:
/// contiguous, or a permutation of its dims that is), or false.
bool dense_range(const at::Tensor& t, std::int64_t& lo, std::int64_t& hi) {
  const auto n = t.numel();
  if (n == 0) return false;
  c10::SmallVector<std::pair<std::int64_t, std::int64_t>, 6> dims;  // (stride, size) of dims > 1
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) dims.emplace_back(t.stride(d), t.size(d));
  std::sort(dims.begin(), dims.end());
  std::int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  lo = t.storage_offset();
  hi = lo + n;
  return true;
}

/// A fresh hashed tensor of the step in `t`'s storage, of `t`'s dtype, whose hashed elements
/// fill a range that includes every one `t` reaches (Known::covers): `t`, an alias autograd does
/// not know as a view (Inductor hands extern kernels reinterpret_tensor()s of buffers and
/// parameters), holds values it read there, and its record names it as a view of that tensor
/// instead of hashing the same bytes again (a transposed alias hashed on its own costs a strided
/// hash kernel). The covering tensor may be gone (the transposed alias of a weight the forward's
/// mm read, the weight read again by the backward): its range still holds what it hashed while
/// no write to the storage was seen (stale_aliases), the rule that keeps any alias fresh; a
/// live one must also be at the version hashed. Else null. `self`: t's own entry.
const Known* covering_hashed(State& s, const at::Tensor& t, const Known* self) {
  std::int64_t lo = 0, hi = 0;
  if (!t.has_storage() || !element_range(t, lo, hi)) return nullptr;
  const auto it = s.by_storage.find(t.storage().unsafeGetStorageImpl());
  if (it == s.by_storage.end()) return nullptr;
  for (const auto* impl : it->second.tensors) {
    const auto k = s.known.find(impl);
    if (k == s.known.end() || &k->second == self || k->second.base) continue;
    const Known& c = k->second;
    if (!c.fresh || !c.covers || c.cover_dtype != t.scalar_type() || lo < c.cover_lo || hi >= c.cover_hi)
      continue;
    if (const auto alive = c.keep.lock(); alive && version_of(*alive) != c.version) continue;
    return &c;
  }
  return nullptr;
}

/// `k` is `t`'s entry, hashed now (`hashed`) or not: whether and what it covers.
void set_cover(Known& k, const at::Tensor& t, bool hashed) {
  k.covers = hashed && dense_range(t, k.cover_lo, k.cover_hi);
  k.cover_dtype = t.scalar_type();
}

}  // namespace

bool element_range(const at::Tensor& t, std::int64_t& lo, std::int64_t& hi) {
  if (t.numel() == 0) return false;
  lo = hi = t.storage_offset();
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) < 0) return false;
    hi += (t.size(d) - 1) * t.stride(d);
  }
  return true;
}

const char* dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: return nullptr;  // not hashed (as the Python recorder's dtype table)
  }
}

std::string other_dtype_name(c10::ScalarType t) {
  std::string s = c10::toString(t);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void add_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    // A wrapped number is a Python scalar (`x * 2`, `g.div_(world)`), not a tensor of the
    // program: the Python backend's dispatch mode sees the scalar, and so records none.
    if (v.toTensor().defined() && !v.toTensor().unsafeGetTensorImpl()->is_wrapped_number())
      out.push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (t.defined()) out.push_back(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) add_tensors(e, out);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) add_tensors(e, out);
  }
}

std::vector<at::Tensor> flat_tensors(c10::ArrayRef<const c10::IValue> values) {
  std::vector<at::Tensor> out;
  for (const auto& v : values) add_tensors(v, out);
  return out;
}

/// Refs of an op's tensors, with the Python recorder's rules: an input that is a fresh earlier
/// output of the step (same version), or a view of one, is not hashed; an output is hashed
/// unless it is a view of an input (a new tensor sharing an input's storage: issue 24; its
/// record names its base) or an incomplete collective's (then marked stale: its next reader
/// hashes it). `inputs`: for outputs, the op's inputs' storages.
std::vector<TensorRef> refs_of(
    State& s, const std::vector<at::Tensor>& tensors, bool as_input, bool hash_now,
    const std::vector<std::pair<const c10::StorageImpl*, const c10::TensorImpl*>>& inputs,
    const std::vector<const char*>& unhashed) {
  const SectionTimer timer(Section::tensor_refs);
  std::vector<TensorRef> refs;
  refs.reserve(tensors.size());
  std::vector<std::pair<std::size_t, at::Tensor>> todo;
  // Whether the current stream of a device is capturing, asked once per device and call (a
  // driver call; an op's tensors are on one device).
  int asked_device = -1;
  bool capturing = false;
  const auto capturing_on = [&](int device) {
    if (device != asked_device) {
      asked_device = device;
      capturing = runtime::current_stream_capturing(device);
    }
    return capturing;
  };
  for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
    const auto& t = tensors[ti];
    const auto version = version_of(t);
    auto* impl = t.unsafeGetTensorImpl();
    auto it = s.known.find(impl);
    TensorRef ref;
    ref.dtype = t.scalar_type();
    ref.shape.assign(t.sizes().begin(), t.sizes().end());
    const Known* base = nullptr;  // the fresh hashed tensor this one's value is in, if any
    if (as_input && it != s.known.end() && it->second.unhashed[0] != '\0' && it->second.version == version) {
      // An RNG state output read back (the attention backward): the same bytes, no value.
      ref.id = it->second.id;
      ref.unhashed = it->second.unhashed;
      refs.push_back(std::move(ref));
      continue;
    }
    if (as_input) {
      if (it != s.known.end()) {
        if (it->second.base || it->second.version == version) base = fresh_hashed(s, it->second, &t);
      }
      if (!base) base = fresh_base_of(s, t);
      if (!base) base = covering_hashed(s, t, it != s.known.end() ? &it->second : nullptr);
      if (base && it != s.known.end() && base == &it->second) {
        ref.id = it->second.id;  // a fresh earlier output (or input) of the step: its hash holds
        refs.push_back(std::move(ref));
        continue;
      }
    } else if (t.has_storage()) {
      const auto* storage = t.storage().unsafeGetStorageImpl();
      bool same = false;
      const c10::TensorImpl* aliased = nullptr;
      for (const auto& [st, in] : inputs) {
        same = same || in == impl;
        if (!aliased && st == storage) aliased = in;
      }
      if (!same && aliased) {
        const auto a = s.known.find(aliased);
        if (a != s.known.end()) base = fresh_hashed(s, a->second);
      }
    }
    if (it == s.known.end()) {
      Known k(t);
      k.id = s.next_id++;
      it = s.known.emplace(impl, std::move(k)).first;
      if (t.has_storage()) {
        const auto* storage = t.storage().unsafeGetStorageImpl();
        auto at = s.by_storage.find(storage);
        if (at == s.by_storage.end())
          at = s.by_storage.emplace(storage, StorageTensors{t.storage().getWeakStorageImpl(), {}}).first;
        at->second.tensors.push_back(impl);
      }
    }
    ref.id = it->second.id;
    it->second.version = version;
    it->second.unhashed = "";
    if (!as_input && ti < unhashed.size() && unhashed[ti][0] != '\0') {
      it->second.fresh = false;
      it->second.base = nullptr;
      it->second.base_id = -1;
      it->second.unhashed = ref.unhashed = unhashed[ti];
      refs.push_back(std::move(ref));
      continue;
    }
    if (base) {
      // A view of a fresh hashed tensor: not hashed, names its base; its version is the base's
      // (shared once autograd has made it a view).
      it->second.version = base->version;
      it->second.base = base->keep._unsafe_get_target();  // its key in `known` (alive or not)
      it->second.base_id = base->id;
      it->second.fresh = false;
      ref.view_base = base->id;
      refs.push_back(std::move(ref));
      continue;
    }
    bool want = hash_now && s.options.hash && hashable(t);
    it->second.base = nullptr;
    it->second.base_id = -1;
    if (want && t.is_cuda() && capturing_on(t.device().index())) {
      // Inside a CUDA graph capture the value does not exist yet, and a hash enqueued now would
      // run at every replay into memory the step has let go: recorded, never hashed.
      want = false;
      ref.unhashed = model::ops::unhashed_name(model::ops::Unhashed::Captured).data();
    }
    it->second.fresh = want;
    set_cover(it->second, t, want);
    if (!as_input && t.has_storage()) stale_aliases(s, t.storage().unsafeGetStorageImpl(), impl);
    if (want) {
      if (todo.empty()) todo.reserve(tensors.size() - ti);
      todo.emplace_back(refs.size(), t);
    }
    refs.push_back(std::move(ref));
  }
  if (!todo.empty()) hash_many(s, todo, refs, /*outputs=*/!as_input);
  return refs;
}

std::vector<TensorRef> input_refs(State& s, const std::vector<at::Tensor>& tensors,
                                  const std::vector<bool>& written_only) {
  std::vector<at::Tensor> read, written;
  std::vector<std::size_t> read_at, written_at;
  read.reserve(tensors.size());
  read_at.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const bool only_written = i < written_only.size() && written_only[i];
    (only_written ? written : read).push_back(tensors[i]);
    (only_written ? written_at : read_at).push_back(i);
  }
  auto read_refs = refs_of(s, read, /*as_input=*/true, /*hash_now=*/true);
  auto written_refs = refs_of(s, written, /*as_input=*/true, /*hash_now=*/false);
  std::vector<TensorRef> refs(tensors.size());
  for (std::size_t k = 0; k < read_at.size(); ++k) refs[read_at[k]] = std::move(read_refs[k]);
  for (std::size_t k = 0; k < written_at.size(); ++k) refs[written_at[k]] = std::move(written_refs[k]);
  return refs;
}

}  // namespace gparity::torchops::oprec_detail
