// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_
#define SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/internal/base/parker.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/group/idle_path.h"

namespace spindle::internal {

struct FiberWorkerOptions {
  // The CPUs the thread may run on; empty: left as inherited. Only those also in
  // `affinity_cpus` (the process's real mask) are applied, so a fake topology naming
  // CPUs this machine lacks still runs; with none of them real, the thread is left
  // unrestricted.
  std::vector<int> cpus;
  std::vector<int> affinity_cpus;
  std::vector<StealVictim> victims;
};

// One worker thread of a scheduling group. Its thread starts on the master fiber and
// loops: find a fiber (its IdlePath: timers, queues, stealing, sleeping; idle_path.cc),
// switch to it, and when the thread comes back to the master (the fiber finished, or
// parked with nothing else ready), find the next. Start()/Join() from the owning
// Runtime only; the rest of the state is the worker thread's own.
class FiberWorker final {
 public:
  FiberWorker(SchedulingGroup* group, std::size_t index, FiberWorkerOptions options = {});
  ~FiberWorker();
  FiberWorker(const FiberWorker&) = delete;
  FiberWorker& operator=(const FiberWorker&) = delete;

  void Start();
  // After Start(): returns once the thread has set itself up (its thread-locals built, its
  // master fiber made), so that a runtime whose start returned allocates nothing more
  // for its threads and every worker has its kernel id. A thread the OS starts late on a
  // busy machine would otherwise do it while the program runs (channel_allocation_test
  // counted it). Start() every worker first, then wait: they set up in parallel.
  void WaitUntilSetUp();
  // Returns once the group is stopping and the thread has left its loop.
  void Join();

  SchedulingGroup* group() const { return group_; }
  std::size_t index() const { return index_; }
  // The worker's thread, between Start() and Join() (the hog monitor signals it), and
  // its kernel id (0 until the thread has begun; the monitor reads its state).
  pthread_t thread_handle() { return thread_.native_handle(); }
  const std::atomic<int>& kernel_thread_id() const { return kernel_thread_id_; }

 private:
  void Run();

  SchedulingGroup* const group_;
  const std::size_t index_;
  const std::vector<int> cpus_;           // FiberWorkerOptions::cpus
  const std::vector<int> affinity_cpus_;  // FiberWorkerOptions::affinity_cpus
  IdlePath idle_;
  std::thread thread_;
  std::atomic<int> kernel_thread_id_{0};  // relaxed: a value for /proc look-ups only
  OneShotSignal set_up_;  // Run() has set the thread up (WaitUntilSetUp)
};

// The worker whose thread calls this, or nullptr on other threads. Out of line and never
// cached across a fiber switch (a fiber may resume on another worker).
FiberWorker* CurrentFiberWorker();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_
