// Copyright 2026 The Spindle Authors.

#include "timer/timer.h"

#include "glog/logging.h"
#include "runtime/internal/runtime_impl.h"
#include "timer/internal/timer_worker.h"

namespace spindle {
namespace {

using internal::TimerEntry;

std::uint64_t Arm(TimerClock::time_point at, TimerClock::duration interval,
                  absl::AnyInvocable<void()> callback) {
  internal::Runtime& runtime = internal::Runtime::Get();
  internal::SchedulingGroup* group = runtime.NearestGroup();
  auto* entry = internal::NewTimerEntry();
  entry->refs.store(2, std::memory_order_relaxed);  // the user's and the worker's
  entry->expires = internal::MonotonicDeadline::At(at);  // the API's edge
  entry->interval = interval;
  entry->callback = std::move(callback);
  entry->group = group;
  // In this worker's own queue when called from a fiber (no lock but its own, nothing
  // allocated: the entry comes from a per-thread pool); from a plain thread, in the
  // group's timer thread's list.
  internal::ArmTimerEntry(entry);
  return reinterpret_cast<std::uint64_t>(entry);
}

}  // namespace

std::uint64_t SetTimer(TimerClock::time_point at, absl::AnyInvocable<void()> callback) {
  return Arm(at, TimerClock::duration::zero(), std::move(callback));
}

std::uint64_t SetTimer(TimerClock::time_point at, TimerClock::duration interval,
                       absl::AnyInvocable<void()> callback) {
  CHECK_GT(interval.count(), 0) << "SetTimer: a periodic timer needs interval > 0, not "
                                << std::chrono::nanoseconds(interval).count() << " ns";
  return Arm(at, interval, std::move(callback));
}

bool KillTimer(std::uint64_t id) {
  auto* entry = reinterpret_cast<TimerEntry*>(id);
  CHECK(entry != nullptr) << "KillTimer(0): not a timer id";
  bool prevented = false;
  // acquire: see the state the worker or the callback fiber last published.
  int state = entry->state.load(std::memory_order_acquire);
  while (state == TimerEntry::kPending || state == TimerEntry::kRunning) {
    // acq_rel: pairs with the worker's flip in TimerWorker::Fire() and the periodic
    // callback's flip back to pending; exactly one side wins each.
    if (entry->state.compare_exchange_weak(state, TimerEntry::kCancelled,
                                           std::memory_order_acq_rel)) {
      prevented = true;
      break;
    }
  }
  // Out of its worker's queue at once if it waits there (the queue's reference is
  // ours to drop); elsewhere (a plain thread's timer, or a periodic one between two
  // calls) whoever pops it finds it cancelled and drops it.
  if (prevented && internal::RemoveTimerEntryFromQueue(entry)) internal::ReleaseTimerEntry(entry);
  internal::ReleaseTimerEntry(entry);
  return prevented;
}

void DetachTimer(std::uint64_t id) {
  CHECK(id != 0) << "DetachTimer(0): not a timer id";
  internal::ReleaseTimerEntry(reinterpret_cast<TimerEntry*>(id));
}

void SetDetachedTimer(TimerClock::time_point at, absl::AnyInvocable<void()> callback) {
  DetachTimer(SetTimer(at, std::move(callback)));
}

void SetDetachedTimer(TimerClock::time_point at, TimerClock::duration interval,
                      absl::AnyInvocable<void()> callback) {
  DetachTimer(SetTimer(at, interval, std::move(callback)));
}

}  // namespace spindle
