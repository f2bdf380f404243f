// Copyright 2026 The Spindle Authors.
//
// ReadyBatch: collecting a thread's wake-ups and queueing them per group. The queueing
// itself (QueueReadyFibers) is the scheduler's, defined in scheduling_group.cc.

#include "runtime/internal/base/ready_batch.h"

#include <algorithm>

namespace spindle::internal {
namespace ready_batch_internal {

thread_local std::vector<FiberEntity*>* collecting = nullptr;

}  // namespace ready_batch_internal

namespace {

using ready_batch_internal::collecting;

// Where a thread's outermost ReadyBatch collects: one buffer per thread, kept with its
// capacity (a vector per batch cost a malloc per timer round, 272k of them in 500k
// sleeps).
std::vector<FiberEntity*>& ThisThreadReadyBuffer() {
  thread_local std::vector<FiberEntity*> buffer;
  return buffer;
}

}  // namespace

void ReadyBatch::PrepareThisThread() {
  std::vector<FiberEntity*>& buffer = ThisThreadReadyBuffer();
  if (buffer.capacity() < 64) buffer.reserve(64);
}

ReadyBatch::ReadyBatch(Source source) : source_(source) {
  if (collecting == nullptr) {  // else the outer one collects
    collecting = &ThisThreadReadyBuffer();
    outermost_ = true;
  }
}

ReadyBatch::~ReadyBatch() {
  if (!outermost_) return;  // nested: the outer scope flushes
  collecting = nullptr;
  // Taken out of the thread's buffer while queued: a batch that the queueing opens
  // finds it empty, not in use.
  std::vector<FiberEntity*> fibers;
  fibers.swap(ThisThreadReadyBuffer());
  const bool timer_round = source_ == Source::kTimerRound;
  // Usually all of one group: one batch, no partition (whose temporary buffer was a
  // malloc too).
  if (!fibers.empty()) {
    SchedulingGroup* group = fibers.front()->scheduling_group;
    if (std::all_of(fibers.begin(), fibers.end(),
                    [group](FiberEntity* f) { return f->scheduling_group == group; })) {
      QueueReadyFibers(group, fibers.data(), fibers.size(), timer_round);
      fibers.clear();
    }
  }
  // Else each group's share as one batch.
  while (!fibers.empty()) {
    SchedulingGroup* group = fibers.front()->scheduling_group;
    auto split = std::stable_partition(fibers.begin(), fibers.end(), [group](FiberEntity* f) {
      return f->scheduling_group != group;
    });
    QueueReadyFibers(group, &*split, static_cast<std::size_t>(fibers.end() - split),
                     timer_round);
    fibers.erase(split, fibers.end());
  }
  std::vector<FiberEntity*>& buffer = ThisThreadReadyBuffer();
  if (buffer.capacity() < fibers.capacity()) buffer.swap(fibers);
}

}  // namespace spindle::internal
