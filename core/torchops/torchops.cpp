// libgparity_torchops: `torch.ops.gparity.*` for Python training scripts, loaded with
// torch.ops.load_library by the PyTorch it was built against. Hashes stay where the tensors live
// (CPU through hash/, CUDA through the hash kernel); results come back as int64 tensors holding
// the unsigned 64-bit hashes' bits.

#include <ATen/ATen.h>
#include <torch/library.h>

#include <bit>
#include <stdexcept>

#include "core/runtime/recorder.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace {

std::int64_t as_signed(std::uint64_t v) {
  return std::bit_cast<std::int64_t>(v);
}

gparity::hash::ShardSpec spec_of(std::int64_t shard_spec) {
  if (shard_spec != 1 && shard_spec != 2) throw std::invalid_argument("gparity: shard_spec must be 1 or 2");
  return shard_spec == 2 ? gparity::hash::ShardSpec::V2 : gparity::hash::ShardSpec::V1;
}

/// [xxh3, shard] of one block at `offsets` inside `global_shape` (both empty: whole tensor); the
/// shard hash of spec `shard_spec` (docs/hashing.md).
at::Tensor hash_tensor(const at::Tensor& t, at::IntArrayRef offsets, at::IntArrayRef global_shape,
                       std::int64_t shard_spec) {
  const auto h = gparity::runtime::hash_block(t, offsets, global_shape, spec_of(shard_spec));
  auto out = at::empty({2}, at::kLong);
  out[0] = as_signed(h.xxh3);
  out[1] = as_signed(h.shard);
  return out;
}

/// [n, 2] hashes of n blocks; `offsets` and `global_shapes` hold each tensor's dim() values
/// back to back (or are empty: every tensor whole).
at::Tensor hash_tensors(at::TensorList tensors, at::IntArrayRef offsets, at::IntArrayRef global_shapes) {
  auto out = at::empty({static_cast<std::int64_t>(tensors.size()), 2}, at::kLong);
  auto* o = out.data_ptr<std::int64_t>();
  std::size_t pos = 0;
  for (const auto& t : tensors) {
    const auto d = static_cast<std::size_t>(t.dim());
    gparity::runtime::BlockHashes h;
    if (offsets.empty() && global_shapes.empty()) {
      h = gparity::runtime::hash_block(t);
    } else {
      if (pos + d > offsets.size() || pos + d > global_shapes.size())
        throw std::invalid_argument(
            "gparity::hash_tensors: offsets/global_shapes shorter than the tensors' dims");
      h = gparity::runtime::hash_block(t, offsets.slice(pos, d), global_shapes.slice(pos, d));
    }
    pos += d;
    *o++ = as_signed(h.xxh3);
    *o++ = as_signed(h.shard);
  }
  return out;
}

/// Both hashes of every tensor into `words` from slot `first` (2 int64 words a slot, zeroed, on the
/// tensors' device), without waiting for the device: the op recorder (python/gparity,
/// record_ops) hashes every op's outputs this way and reads the words back once a step. `xxh3`
/// false: the shard-invariant hash alone (its XXH3 words stay 0); `shard_spec`: 1 or 2
/// (docs/hashing.md).
void hash_into(const at::Tensor& words, std::int64_t first, at::TensorList tensors, bool xxh3,
               std::int64_t shard_spec) {
  gparity::runtime::hash_blocks_into(std::span<const at::Tensor>(tensors.data(), tensors.size()), words,
                                     first, xxh3, spec_of(shard_spec));
}

/// The op recorder's kernel records (python/gparity's Inductor launcher hook; op_recorder_kernels.cpp).
std::int64_t oprec_kernel_site(std::string kernel, std::string kernel_json, std::vector<std::string> names,
                               std::vector<std::string> roles, std::vector<std::int64_t> positions) {
  return gparity::torchops::oprec_detail::kernel_site(
      std::move(kernel), std::move(kernel_json), std::move(names), std::move(roles), std::move(positions));
}

std::int64_t oprec_kernel_begin(std::int64_t site, at::TensorList args) {
  return gparity::torchops::oprec_detail::kernel_begin(site, args.vec());
}

}  // namespace

TORCH_LIBRARY(gparity, m) {
  m.def("hash_tensor(Tensor t, int[] offsets, int[] global_shape, int shard_spec=1) -> Tensor", &hash_tensor);
  m.def("hash_tensors(Tensor[] tensors, int[] offsets, int[] global_shapes) -> Tensor", &hash_tensors);
  m.def("hash_into(Tensor(a!) words, int first, Tensor[] tensors, bool xxh3=True, int shard_spec=1) -> ()",
        &hash_into);
  m.def("oprec_kernel_site(str kernel, str kernel_json, str[] names, str[] roles, int[] positions=[]) -> int",
        &oprec_kernel_site);
  m.def("oprec_kernel_begin(int site, Tensor[] args) -> int", &oprec_kernel_begin);
}
