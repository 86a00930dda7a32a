#pragma once
// Private to the recorder's sources: where the Recorder's host time goes, per phase and step
// (GPARITY_RECORDER_PROFILE=1; printed by its destructor on stderr).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/runtime/clock.hpp"
#include "core/runtime/recorder.hpp"

namespace gparity::runtime {

namespace detail {

enum class Phase : std::size_t {
  Poll,      // cudaEventQuery of pending steps' "done" events
  Wait,      // blocking on a step's "done" (a full queue, flush, a synchronous step after async ones)
  Read,      // the pinned words and scalars into the step record
  Write,     // step(): TraceWriter::write_step (JSON line, write, flush); async: the hand-off to its thread
  Release,   // dropping the tensors a collected step kept alive
  Prepare,   // device and alignment checks, placements, buffers (first step: their allocation)
  Order,     // the side stream waits for the training stream (event record + stream wait)
  Zero,      // cudaMemsetAsync of the step's device words
  Hash,      // enqueue_cuda: the hash kernels' launches
  Copy,      // cudaMemcpyAsync of the words and scalars into pinned memory
  Done,      // the step's "done" event record
  Fence,     // before_update: the training stream waits for the newest step's "done"
  SyncHash,  // step(): hash_blocks on the calling thread (waits for the device)
  Graph,     // cudaGraphLaunch of the step's captured hashing (memset, kernels, copy; recorder_graph.hpp)
  Capture,   // capturing and instantiating that graph (a step whose tensors' key is new)
  Count
};
constexpr std::size_t kPhases = static_cast<std::size_t>(Phase::Count);
constexpr std::array<const char*, kPhases> kPhaseNames = {
    "poll", "wait", "read", "write", "release",   "prepare", "order",  "zero",
    "hash", "copy", "done", "fence", "sync_hash", "graph",   "capture"};

inline bool profile_requested() {
  const char* v = std::getenv("GPARITY_RECORDER_PROFILE");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

}  // namespace detail

struct Recorder::Profile {
  using Phase = detail::Phase;
  static constexpr std::size_t kPhases = detail::kPhases;
  using Phases = std::array<std::int64_t, kPhases>;
  Phases current{};                // phases since the last step ended
  std::int64_t current_total = 0;  // time inside the recorder's public calls since then
  std::vector<Phases> steps;
  std::vector<std::int64_t> totals;
  std::int64_t async_steps = 0, sync_steps = 0, full_queue_waits = 0;
  std::size_t max_pending = 0;
  std::string graphs;  // how asynchronous steps launched their hashes (recorder_graph.hpp)

  void add(Phase phase, std::int64_t ns) { current[static_cast<std::size_t>(phase)] += ns; }
  void end_step(bool async) {
    steps.push_back(current);
    totals.push_back(current_total);
    current = {};
    current_total = 0;
    ++(async ? async_steps : sync_steps);
  }
  /// `thread_ns` / `thread_records`: the step writer's own time and records (async steps).
  void print(int rank, std::int64_t thread_ns, std::int64_t thread_records) const {
    std::fprintf(
        stderr,
        "gparity recorder profile, rank %d: %zu steps (%lld async, %lld sync), %lld waits for a full "
        "queue, at most %zu pending\n"
        "  step writer thread (JSON line, write, flush; off the training thread): %.1f us a record, "
        "%lld records\n"
        "  hash launches: %s\n"
        "  host us in the recorder per step: median of steps 2.., first step, after the last step\n",
        rank, steps.size(), static_cast<long long>(async_steps), static_cast<long long>(sync_steps),
        static_cast<long long>(full_queue_waits), max_pending,
        thread_records > 0 ? static_cast<double>(thread_ns) / 1e3 / static_cast<double>(thread_records) : 0.0,
        static_cast<long long>(thread_records), graphs.empty() ? "direct" : graphs.c_str());
    const auto row = [&](const char* name, const auto& value_of, std::int64_t tail) {
      std::vector<double> later;
      for (std::size_t s = 1; s < steps.size(); ++s) later.push_back(static_cast<double>(value_of(s)) / 1e3);
      const double first = steps.empty() ? 0.0 : static_cast<double>(value_of(0)) / 1e3;
      std::fprintf(stderr, "  %-10s %10.1f %10.1f %10.1f\n", name, median(later), first,
                   static_cast<double>(tail) / 1e3);
    };
    row(
        "total", [&](std::size_t s) { return totals[s]; }, current_total);
    for (std::size_t p = 0; p < kPhases; ++p) {
      std::int64_t sum = current[p];
      for (const auto& s : steps) sum += s[p];
      if (sum == 0) continue;
      row(
          detail::kPhaseNames[p], [&](std::size_t s) { return steps[s][p]; }, current[p]);
    }
    std::fflush(stderr);
  }
};

namespace detail {

/// Adds the time from construction to destruction (or stop()) to one phase of the profile, if
/// any (a template: Recorder::Profile is private to the recorder).
template <class Profile>
class PhaseTimer {
 public:
  PhaseTimer(Profile* profile, Phase phase)
      : profile_(profile), phase_(phase), start_(profile ? now_ns() : 0) {}
  ~PhaseTimer() { stop(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  void stop() {
    if (profile_) profile_->add(phase_, now_ns() - start_);
    profile_ = nullptr;
  }

 private:
  Profile* profile_;
  Phase phase_;
  std::int64_t start_;
};

}  // namespace detail
}  // namespace gparity::runtime
