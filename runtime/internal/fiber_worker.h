// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_
#define SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_

#include <cstddef>
#include <thread>

#include "runtime/internal/scheduling_group.h"

namespace spindle::internal {

// One worker thread of a scheduling group. Its thread starts on the master fiber and
// loops: take a fiber (pop, else spin, else sleep), switch to it, and when the thread
// comes back to the master (the fiber finished, or parked with nothing else ready),
// take the next. Start()/Join() from the owning Runtime only.
class FiberWorker {
 public:
  FiberWorker(SchedulingGroup* group, std::size_t index);
  ~FiberWorker();
  FiberWorker(const FiberWorker&) = delete;
  FiberWorker& operator=(const FiberWorker&) = delete;

  void Start();
  // Returns once the group is stopping and the thread has left its loop.
  void Join();

  SchedulingGroup* group() const { return group_; }
  std::size_t index() const { return index_; }

 private:
  void Run();

  SchedulingGroup* const group_;
  const std::size_t index_;
  std::thread thread_;
};

// The worker whose thread calls this, or nullptr on other threads. Out of line and never
// cached across a fiber switch (a fiber may resume on another worker).
FiberWorker* CurrentFiberWorker();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FIBER_WORKER_H_
