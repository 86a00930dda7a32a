#include "hash/cuda/xxh3_cuda.hpp"

#define XXH_STATIC_LINKING_ONLY
#include <cuda_runtime.h>
#include <xxhash.h>

#include <string>
#include <vector>

#include "hash/cuda/xxh3_plan.hpp"

namespace gparity::hash {

namespace cuda_detail {
const Xxh3Secret& xxh3_default_secret() {
  static const Xxh3Secret secret = [] {
    static_assert(sizeof(Xxh3Secret) == XXH3_SECRET_DEFAULT_SIZE);
    Xxh3Secret s{};
    XXH3_generateSecret_fromSeed(s.bytes, 0);
    return s;
  }();
  return secret;
}
}  // namespace cuda_detail

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

void xxh3_64_cuda_batch(std::span<const DeviceBytes> buffers, std::uint64_t* device_out,
                        std::size_t out_stride, void* stream, bool check_pointers, void* chain_stream) {
  if (buffers.empty()) return;
  if (check_pointers) cuda_detail::require_device_pointer(device_out);
  std::vector<cuda_detail::Xxh3Segment> segments;
  segments.reserve(buffers.size());
  std::uint64_t blocks = 0;
  for (const auto& b : buffers) {
    if (check_pointers && b.size > 0) cuda_detail::require_device_pointer(b.data);
    const std::uint64_t full = cuda_detail::xxh3_full_blocks(b.size);
    segments.push_back({static_cast<const unsigned char*>(b.data), b.size, blocks, full});
    blocks += full;
  }
  cuda_detail::launch_xxh3(segments.data(), segments.size(), blocks, cuda_detail::xxh3_default_secret(),
                           device_out, out_stride, stream, chain_stream);
}

std::uint64_t xxh3_64_cuda(DeviceBytes bytes, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  void* out = nullptr;
  check(cudaMallocAsync(&out, sizeof(std::uint64_t), s), "cudaMallocAsync");
  std::uint64_t host = 0;
  try {
    xxh3_64_cuda_batch(std::span<const DeviceBytes>(&bytes, 1), static_cast<std::uint64_t*>(out), 1, stream);
    check(cudaMemcpyAsync(&host, out, sizeof host, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  } catch (...) {
    cudaFreeAsync(out, s);
    throw;
  }
  cudaFreeAsync(out, s);
  return host;
}

}  // namespace gparity::hash
