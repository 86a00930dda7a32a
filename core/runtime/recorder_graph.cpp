#include "core/runtime/recorder_graph.hpp"

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/runtime/recorder_internal.hpp"

#if GPARITY_ASYNC_RECORDER
#include <cuda_runtime_api.h>

#include "hash/cuda/launch_plan.hpp"
#endif

namespace gparity::runtime::detail {

StepGraphMode step_graph_mode_from_env() {
  const char* v = std::getenv("GPARITY_RECORDER_GRAPH");
  if (v == nullptr) return StepGraphMode::Staging;
  const std::string_view s(v);
  if (s == "0" || s == "off" || s == "direct") return StepGraphMode::Direct;
  if (s == "slot") return StepGraphMode::PerSlot;
  return StepGraphMode::Staging;
}

const char* step_graph_mode_name(StepGraphMode mode) {
  switch (mode) {
    case StepGraphMode::Direct: return "direct";
    case StepGraphMode::PerSlot: return "slot";
    case StepGraphMode::Staging: return "staging";
  }
  return "?";
}

StepGraphs::StepGraphs(StepGraphMode mode, std::size_t slots)
    : mode_(mode), execs_(mode == StepGraphMode::Staging ? 1 : slots, nullptr) {
  if (mode == StepGraphMode::Direct) given_up_ = true;
}

StepGraphs::~StepGraphs() {
  drop();
}

void StepGraphs::drop() {
#if GPARITY_ASYNC_RECORDER
  for (void*& exec : execs_) {
    // A launch still in flight completes; CUDA frees the graph after it.
    if (exec != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
    exec = nullptr;
  }
#endif
}

void StepGraphs::reset() {
  drop();
  key_.clear();
}

bool StepGraphs::observe(std::span<const at::Tensor> tensors, std::span<const std::uintptr_t> buffers) {
  if (given_up_) return false;
  next_key_.clear();
  bool contiguous = true;
  for (const auto b : buffers) next_key_.push_back(static_cast<std::int64_t>(b));
  for (const auto& t : tensors) {
    contiguous = contiguous && t.is_contiguous();
    next_key_.push_back(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(t.data_ptr())));
    next_key_.push_back(static_cast<std::int64_t>(t.nbytes()));
    next_key_.push_back(static_cast<std::int64_t>(t.scalar_type()));
    next_key_.push_back(t.device().index());
    next_key_.push_back(t.dim());
    for (const auto d : t.sizes()) next_key_.push_back(d);
    for (const auto d : t.strides()) next_key_.push_back(d);
  }
  const bool same = next_key_ == key_;
  if (!same) {
    drop();  // they read or write where this step's tensors no longer are
    key_.swap(next_key_);
  }
  return same && contiguous;
}

bool StepGraphs::ready(std::size_t slot) const {
  return execs_[graph_index(slot)] != nullptr;
}

#if GPARITY_ASYNC_RECORDER
bool StepGraphs::fail(const std::string& why) {
  (void)cudaGetLastError();  // a failed capture's error is not the next call's
  std::fprintf(
      stderr,
      "gparity recorder: CUDA graph capture of a step's hashes failed (%s); hashing directly from now "
      "on\n",
      why.c_str());
  given_up_ = true;  // printed once: a given-up StepGraphs captures no more
  drop();
  return false;
}

bool StepGraphs::capture(std::size_t slot, void* stream, const std::function<void()>& body) {
  if (given_up_) return false;
  bool first_of_key = true;
  for (void* exec : execs_) first_of_key = first_of_key && exec == nullptr;
  if (first_of_key) {
    if (keys_captured_ == kMaxKeys) {  // the key keeps changing: captures would cost more than they save
      given_up_ = true;
      return false;
    }
    ++keys_captured_;
  }
  ++captures_;
  try {
    hash::cuda_detail::keep_pool_memory();  // what XXH3 does under capture, where this mode forbids it
  } catch (const std::exception& ex) {
    return fail(ex.what());
  }
  const auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) return fail(std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e));
  std::string why;
  try {
    body();
  } catch (const std::exception& ex) {
    why = ex.what();
  } catch (...) {
    why = "unknown exception";
  }
  cudaGraph_t graph = nullptr;
  e = cudaStreamEndCapture(s, &graph);  // always: the stream must leave capture mode
  if (why.empty() && e != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e);
  cudaGraphExec_t exec = nullptr;
  if (why.empty() && graph != nullptr) {
    e = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    if (e != cudaSuccess) why = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (why.empty() && exec != nullptr) {
    execs_[graph_index(slot)] = exec;
    return true;
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  return fail(why.empty() ? "empty graph" : why);
}

void StepGraphs::launch(std::size_t slot, void* stream) {
  const cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(execs_[graph_index(slot)]),
                                        static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) throw std::runtime_error(std::string("cudaGraphLaunch: ") + cudaGetErrorString(e));
}
#else
bool StepGraphs::capture(std::size_t /*slot*/, void* /*stream*/, const std::function<void()>& /*body*/) {
  given_up_ = true;
  return false;
}
void StepGraphs::launch(std::size_t /*slot*/, void* /*stream*/) {}
#endif

}  // namespace gparity::runtime::detail
