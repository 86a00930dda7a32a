#pragma once
// Host time of the C++ recorder's parts, for bench/ops_recorder_gpu_profile.py (docs/ops.md,
// "Where the time goes"): opt-in with GPARITY_OPREC_SECTIONS=1 in the environment the library
// loads in; otherwise a section costs one load of a flag. Totals of every thread, read and reset
// through gparity_oprec_sections (op_recorder.cpp). Sections nest: a section's time includes the
// sections it calls. Internal to core/torchops.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>

namespace gparity::torchops::oprec_detail {

enum class Section : std::uint8_t {
  callback_start,  // RecordFunction's start callback, every call (nested and skipped ones too)
  callback_end,
  op_record_start,  // an op's record: its inputs (hashed before it)
  op_record_end,    // its outputs
  python_frames,    // the walk to the innermost user frame
  launch_begin,     // a Triton launch's record: what it reads
  launch_end,       // what it wrote
  tensor_refs,      // refs_of: identity, views, what gets hashed (hash_many inside)
  hashes_asked,     // hash_many: slots taken (hashes_sent inside when they go at once)
  hashes_sent,      // flush_hashes: the hash launches
  step_text,        // end of step: the records as JSON lines
  read_back,        // end of step: the wait for the hashes and their copy
  count
};

inline constexpr std::array<const char*, static_cast<std::size_t>(Section::count)> kSectionNames = {
    "callback_start", "callback_end", "op_record_start", "op_record_end", "python_frames", "launch_begin",
    "launch_end",     "tensor_refs",  "hashes_asked",    "hashes_sent",   "step_text",     "read_back"};

struct SectionTotals {
  std::array<std::atomic<std::int64_t>, static_cast<std::size_t>(Section::count)> ns{}, calls{};
};

inline bool sections_on() {
  static const bool on = [] {
    const char* v = std::getenv("GPARITY_OPREC_SECTIONS");
    return v && v[0] == '1';
  }();
  return on;
}

inline SectionTotals& section_totals() {
  static SectionTotals totals;
  return totals;
}

/// Adds the time from its construction to its destruction to `section` (when sections are on).
class SectionTimer {
 public:
  explicit SectionTimer(Section section) : section_(section), on_(sections_on()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~SectionTimer() {
    if (!on_) return;
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
            .count();
    auto& t = section_totals();
    t.ns[static_cast<std::size_t>(section_)].fetch_add(ns, std::memory_order_relaxed);
    t.calls[static_cast<std::size_t>(section_)].fetch_add(1, std::memory_order_relaxed);
  }
  SectionTimer(const SectionTimer&) = delete;
  SectionTimer& operator=(const SectionTimer&) = delete;

 private:
  Section section_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gparity::torchops::oprec_detail
