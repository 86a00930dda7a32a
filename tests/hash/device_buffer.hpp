#pragma once
// A device copy of a host buffer, owned (RAII), for the CUDA-vs-CPU hash tests. Throws
// hash::CudaError when the allocation or the copy fails.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hash/cuda/launch_plan.hpp"

namespace gparity::hash::testing {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(const std::vector<std::byte>& host) : size_(host.size()) {
    if (cudaMalloc(&ptr_, std::max<std::size_t>(size_, 1)) != cudaSuccess) throw CudaError("cudaMalloc");
    if (size_ && cudaMemcpy(ptr_, host.data(), size_, cudaMemcpyHostToDevice) != cudaSuccess) {
      cudaFree(ptr_);
      throw CudaError("cudaMemcpy");
    }
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] const std::byte* data() const { return static_cast<const std::byte*>(ptr_); }
  [[nodiscard]] std::uint64_t* words() const { return static_cast<std::uint64_t*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  std::size_t size_;
};

}  // namespace gparity::hash::testing
