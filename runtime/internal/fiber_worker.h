// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_
#define SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/internal/scheduling_group.h"

namespace spindle::internal {

// Another group this worker may steal from: one attempt every `every_n` idle rounds.
struct StealVictim {
  SchedulingGroup* group = nullptr;
  std::uint64_t every_n = 1;  // >= 1
};

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
// loops: take a fiber (pop, else steal when due, else spin, else sleep), switch to it,
// and when the thread comes back to the master (the fiber finished, or parked with
// nothing else ready), take the next. The stealing policy is described at the top of
// fiber_worker.cc. Start()/Join() from the owning Runtime only; the rest of the state is
// the worker thread's own.
class FiberWorker final : private IdleHooks {
 public:
  FiberWorker(SchedulingGroup* group, std::size_t index, FiberWorkerOptions options = {});
  ~FiberWorker();
  FiberWorker(const FiberWorker&) = delete;
  FiberWorker& operator=(const FiberWorker&) = delete;

  void Start();
  // Returns once the group is stopping and the thread has left its loop.
  void Join();

  SchedulingGroup* group() const { return group_; }
  std::size_t index() const { return index_; }

 private:
  struct Victim {
    SchedulingGroup* group;
    std::uint64_t every_n;
    std::uint64_t next_round;  // the idle round of the next attempt
  };

  void Run();
  // IdleHooks, asked by the strategy's idle path (see the top of fiber_worker.cc).
  // L2, one idle round: an attempt on each victim whose turn it is.
  std::uintptr_t TryOtherSources() override;
  // L4: whether to poll again instead of sleeping: some victim has queued fibers and
  // our recent attempts were not all fruitless.
  bool ShouldPoll() override;
  void PausePolling() override;
  // L5's choice once marked sleeping: poll victims, or sleep (bounded while a victim's
  // queue is not empty but stealing from it keeps failing).
  IdlePlan PlanWhenMarkedSleeping() override;
  bool VictimsHaveFibers() const;  // a racy hint

  SchedulingGroup* const group_;
  const std::size_t index_;
  const std::vector<int> cpus_;           // FiberWorkerOptions::cpus
  const std::vector<int> affinity_cpus_;  // FiberWorkerOptions::affinity_cpus
  std::vector<Victim> victims_;
  std::uint64_t idle_rounds_ = 0;
  std::uint64_t fruitless_steals_ = 0;  // failed attempts since the last fiber we ran
  std::uint64_t fruitless_at_last_pause_ = 0;
  std::thread thread_;
};

// The worker whose thread calls this, or nullptr on other threads. Out of line and never
// cached across a fiber switch (a fiber may resume on another worker).
FiberWorker* CurrentFiberWorker();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_
