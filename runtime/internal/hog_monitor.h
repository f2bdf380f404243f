// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_HOG_MONITOR_H_
#define SPINDLE_RUNTIME_INTERNAL_HOG_MONITOR_H_

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/internal/base/parker.h"
#include "runtime/internal/group/scheduling_group.h"

namespace spindle::internal {

// What the monitor does, from the flags (runtime_options.h); a zero turns that part off.
struct HogMonitorOptions {
  std::chrono::milliseconds report{1000};  // --fiber_hog_report_ms
  std::chrono::milliseconds rescue{10};    // --fiber_hog_rescue_ms
};

// One worker the monitor watches: worker `index` of `group`, whose thread is `thread`.
struct MonitoredWorker {
  SchedulingGroup* group = nullptr;
  std::size_t index = 0;
  pthread_t thread{};
  const std::atomic<int>* kernel_thread_id = nullptr;  // its gettid(), once it began
};

// Finds fibers that hold their worker (a hog: a fiber that computes for long, or blocks
// its thread in a system call) and works around them; it never preempts one. Spindle
// has no safe point at which to take a worker from a running fiber: a fiber may hold a
// Spinlock, an OS mutex or a thread-local's state, and a signal-driven switch would move
// it to another thread in the middle of them (Go can, because its compiler tells the
// runtime where every pointer is and its code keeps no thread-local state).
//
// One thread per runtime ("spindle-hogmon"), in rounds: every busy_period() while any
// worker runs a fiber, every idle_period() while all are in their idle path. A round
// reads each worker's progress (GroupStats::RunProgress: the fibers it made Running,
// the yields after which it kept running and the children run inline by a join; and
// BusyPoll::InIdlePath): relaxed loads of
// lines the worker writes anyway, so the workers' paths gain nothing but a count on a
// yield that finds nothing else ready. A worker that is not idle and whose progress has
// not moved since the round that first saw it has run one fiber, without a yield, at least that
// long:
//   - past `rescue`: SchedulingStrategy::RescueStalledWorker() moves the fibers queued
//     behind it where its siblings take them (every round while it lasts: the hog may
//     start or wake more);
//   - past `report`: reported once for that run (a glog WARNING: fiber id, group,
//     worker, how long, its stack), counted in GroupStats.
// The stack of a running fiber cannot be read from another thread (it changes under
// the reader), so the report sends SIGURG with a value of ours (pthread_sigqueue) to
// the worker's thread; the handler, on that thread, walks the running fiber's frame
// pointers from the interrupted context into a fixed buffer, within the fiber's stack
// only, allocating nothing, and says whether the worker's count is still the one the
// monitor saw (the same run). SIGURG is ignored by default and otherwise rare (Go
// preempts with it for the same reason); a handler installed before ours gets every
// SIGURG that is not ours. A system call the fiber was blocked in may return EINTR
// once, as with any signal.
//
// Bound: a fiber that holds its worker from time t has the fibers queued behind it moved
// by t + rescue + busy_period() + (after an all-idle stretch) idle_period(); an idle
// sibling then takes them at once (the move's Notify), a busy one at its next look at
// the shared queue (v2: every --fiber_v2_global_check_interval-th take).
//
// Thread-safety: built and destroyed by the runtime (runtime_impl.cc), after its workers
// started and before they stop; nothing else is called on it. The groups outlive it.
class HogMonitor {
 public:
  HogMonitor(const HogMonitorOptions& options, std::vector<MonitoredWorker> workers);
  ~HogMonitor();  // stops the thread (the SIGURG handler stays: see hog_monitor.cc)
  HogMonitor(const HogMonitor&) = delete;
  HogMonitor& operator=(const HogMonitor&) = delete;

  // The rounds' spacing: half the shorter nonzero threshold, in [1 ms, 100 ms]; four
  // times that (at most 100 ms) while every worker is idle.
  std::chrono::milliseconds busy_period() const { return busy_period_; }
  std::chrono::milliseconds idle_period() const { return idle_period_; }

 private:
  // What the monitor knows of one worker: the count it saw and since when.
  struct Watch {
    std::uint64_t runs = ~std::uint64_t{0};  // RunProgress
    std::chrono::steady_clock::time_point since;
    bool reported = false;  // this run was reported
  };

  void Run();
  // One round at `now`; whether any worker was running a fiber.
  bool Round(std::chrono::steady_clock::time_point now);
  void Report(const MonitoredWorker& worker, std::uint64_t runs,
              std::chrono::steady_clock::duration held);

  const HogMonitorOptions options_;
  const std::vector<MonitoredWorker> workers_;
  std::vector<Watch> watches_;  // the monitor thread's own, one per worker
  std::vector<std::size_t> to_report_;  // Round()'s, reserved for every worker
  std::chrono::milliseconds busy_period_;
  std::chrono::milliseconds idle_period_;
  std::chrono::steady_clock::time_point last_round_{};  // the monitor thread's
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  OneShotSignal set_up_;   // the thread has prepared itself
  std::thread thread_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_HOG_MONITOR_H_
