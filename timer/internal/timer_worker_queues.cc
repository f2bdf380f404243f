// Copyright 2026 The Spindle Authors.
//
// The timers of one scheduling group, the workers' side: each worker's TimerQueue
// (arming, firing, the fronts the thread and the idle path read), the assists by which
// busy workers fire what is due (Due, FireDue), and ArmTimerEntry(). The group's timer
// thread, the producers' lists and the protocol's steps are in timer_worker.cc.
//
// Workers' queues (timer_queue.h). A fiber's sleep or deadline wait, and a SetTimer()
// from a fiber, arm in the queue of the worker the fiber runs on (AddToQueue), under
// that queue's lock, which another thread takes only to fire or cancel one of its
// timers; the timer lives in its waiter (a TimerNode) or in the pooled TimerEntry, so
// arming allocates nothing, and a cancel (TimerQueue::Remove) takes it out at once,
// from whichever worker the fiber resumed on. Who fires a queue:
//   - its worker, while busy: at every BusyPoll::kPollEvery-th switch that finds its
//     front due (FireDue: its own queue first, under no other lock), so the fibers it
//     wakes are queued where they ran;
//   - its worker, when idle: it sleeps until its queue's front at the latest
//     (idle_path.cc, W4) and fires at its next pass; nothing earlier can arrive while
//     it sleeps, since only a queue's worker arms in it;
//   - a busy sibling whose poll finds the group's published expiry due (FireDue, with
//     try-locks), so a worker stuck in a long fiber does not hold its timers;
//   - the thread (step 2), the fallback, kAssistGraceNs after a front whose owner sleeps
//     until it (TimerQueue::owner_sleeps_until), at the front itself otherwise.
// An arming that lowers its queue's front (PushResult::kAddedEarliest) takes the
// producers' half of timer_worker.cc's protocol (WakeIfEarlier): StoreLoad fence, read
// next_expiry_ns_, wake the thread if the timer is earlier. Step 3 publishes the
// earliest of the heap's front and the queues' fronts, and step 4 re-reads the fronts
// after its fence; a front falls only by an arming (a store under the queue's lock,
// before the arming's fence), so the store-buffering argument for the lists covers the
// queues (models: QueueArmsAgainstTheLoop, AssistAgainstQueueArmWithTheThreadHeld). A
// cancel racing the fire is decided under the queue's lock: removed (never fires) or
// already popped (the caller waits for the call if it must; QueueCancelAgainstTheFire).
// Stop() closes the queues and waits for firings under way (TimerQueue::DropAll).

#include "timer/internal/timer_worker.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {

// The assist's test hook (defined in timer_worker.cc, in builds with the test seams).
namespace timer_internal {
extern std::atomic<void (*)(TimerWorker*)> g_assist_test_hook;
}  // namespace timer_internal
using timer_internal::g_assist_test_hook;

bool TimerWorker::AddToQueue(std::size_t worker, TimerNode* node) {
  CHECK_LT(worker, queue_count_) << "no worker " << worker << " in this timer group";
  const std::int64_t expires_ns = node->expires_ns;
  switch (queues_[worker].Push(node)) {
    case TimerQueue::PushResult::kAdded:
      // Not earlier than the queue's published front, which the thread already sleeps
      // for (or earlier): whoever fires that front sees this one.
      return true;
    case TimerQueue::PushResult::kAddedEarliest:
      // The queue's front fell (a store): the producers' half of the protocol, as for a
      // list (step 3-4 of the loop read the queues' fronts after their fence). Read
      // before: once queued, the node may fire and its owner end at any moment.
      WakeIfEarlier(expires_ns);
      return true;
    case TimerQueue::PushResult::kClosed:
      return false;  // stopped: dropped (Remove() says so)
  }
  return false;
}

std::size_t TimerWorker::FireQueue(TimerQueue& queue, std::int64_t now_ns,
                                   bool only_if_free) {
  // Popped in chunks and fired outside the queue's lock, prefetching what a call
  // touches (a parked fiber's control block, cold after a long sleep) a few ahead.
  constexpr std::size_t kChunk = 64;
  constexpr std::size_t kAhead = 4;
  TimerNode* due[kChunk];
  std::size_t total = 0;
  for (;;) {
    const std::size_t n = queue.PopDue(now_ns, due, kChunk, only_if_free);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n && due[i + kAhead]->touches != nullptr) {
        // A FiberEntity: see FireRound().
        __builtin_prefetch(due[i + kAhead]->touches, 1);
        __builtin_prefetch(static_cast<const char*>(due[i + kAhead]->touches) + 128, 1);
      }
      due[i]->fire(due[i]);  // may end the node's owner: not touched again
    }
    if (n != 0) queue.DoneFiring();
    total += n;
    if (n < kChunk) break;
  }
  if (total != 0) {
    fired_.fetch_add(total, std::memory_order_relaxed);  // relaxed: statistic
    Trace(TraceKind::kTimers, 0, total);
  }
  return total;
}

std::int64_t TimerWorker::QueuesFrontNs() const {
  std::int64_t front = INT64_MAX;
  for (std::size_t w = 0; w < queue_count_; ++w) front = std::min(front, queues_[w].front_ns());
  return front;
}

std::int64_t TimerWorker::OwnFrontNs(std::size_t worker) const {
  return worker < queue_count_ ? queues_[worker].front_ns() : INT64_MAX;
}

void TimerWorker::NoteSleepingUntil(std::size_t worker, std::int64_t ns) {
  if (worker < queue_count_) queues_[worker].set_owner_sleeps_until(ns);
}

bool TimerWorker::AnyQueueFrontBelow(std::int64_t ns) const {
  for (std::size_t w = 0; w < queue_count_; ++w) {
    if (queues_[w].front_ns() < ns) return true;
  }
  return false;
}

bool TimerWorker::Due(std::size_t worker, std::int64_t now_ns) const {
  if (worker < queue_count_ && queues_[worker].front_ns() <= now_ns) return true;
  // relaxed: a hint (group_timers.h); FireDue() decides under the heap's lock.
  return next_expiry_ns_.load(std::memory_order_relaxed) <= now_ns;
}

void TimerWorker::FireDue(std::size_t worker, std::int64_t now_ns) {
  bool wake = false;
  {
    ReadyBatch batch(ReadyBatch::Source::kTimerRound);
    // The worker's own timers first, under their queue's lock alone (the fibers they
    // wake are queued from this worker: they stay where they ran).
    if (worker < queue_count_ && queues_[worker].front_ns() <= now_ns) {
      if (FireQueue(queues_[worker], now_ns, /*only_if_free=*/false) != 0) {
        last_assist_ns_.store(now_ns, std::memory_order_relaxed);  // relaxed: a heuristic
      }
    }
    // relaxed: a hint; what else of the group is due is decided under the heap's lock.
    if (next_expiry_ns_.load(std::memory_order_relaxed) > now_ns) return;
    if (!heap_lock_.try_lock()) return;  // the thread or another worker is at it
    OsMutexGuard heap_lock(heap_lock_, std::adopt_lock);
    // acquire: pairs with the release store in RequestStop(); after it, nothing fires.
    if (stopping_.load(std::memory_order_acquire)) return;
    // relaxed: written under the heap's lock (which we hold) or lowered by producers.
    const std::int64_t found = next_expiry_ns_.load(std::memory_order_relaxed);
    std::int64_t published = found;
    for (int round = 0;; ++round) {
      FireRound(now_ns);
      // Other workers' due timers too, when their queues are free: a worker stuck in a
      // long fiber, or asleep, does not fire its own.
      for (std::size_t w = 0; w < queue_count_; ++w) {
        if (w != worker && queues_[w].front_ns() <= now_ns) {
          FireQueue(queues_[w], now_ns, /*only_if_free=*/true);
        }
      }
      if constexpr (kTestSeams) {
        if (auto hook = g_assist_test_hook.load(std::memory_order_relaxed)) hook(this);
      }
      ChaosPause();  // between the collection and the publication (chaos.h)
      // Publish the heap's new front, so Due() stops saying yes for what we fired. A
      // compare-and-swap: a producer that lowered the value meanwhile keeps it (its
      // timer is in its list and it woke the thread); the re-check below collects it.
      // relaxed: ordered for the producers by the fence below.
      const std::int64_t earliest = EarliestNs();
      next_expiry_ns_.compare_exchange_strong(published, earliest, std::memory_order_relaxed);
      // Step 4 of the thread's loop, for the same reason: a producer that appended
      // after our collection but read the expiry before our publication saw an earlier
      // expiry than its own and neither lowered it nor woke anyone. Without this
      // re-check its timer waits, uncollected, behind a published front that does not
      // include it (the heap's next, or none at all: lost while the thread waits for a
      // CPU). Either we see
      // its entry here, or it sees our front and lowers it (store buffering, a fence
      // on each side).
      StoreLoadFence();  // pairs with the producer's fence in Add()
      // The same for a worker whose queue's front fell below what we published.
      if (!AnyProducerListNonEmpty() && !AnyQueueFrontBelow(earliest)) break;
      if (round == kMaxAssistRounds) {
        // Producers keep adding: leave the rest to the next poll, which sees the
        // lowered expiry due, and to the thread.
        LowerPublishedExpiry(now_ns);
        wake = true;
        break;
      }
      // relaxed: as above.
      published = next_expiry_ns_.load(std::memory_order_relaxed);
    }
    // The thread sleeps until the expiry it published last (step 3); if we collected a
    // timer due before the one we found published, wake it so it sleeps again until
    // then: that timer is no longer in a producer list, where step 4 would see it. (The
    // front only falls from pass to pass: each collects more, and the first fired all
    // that was due at now_ns.)
    wake = wake || EarliestNs() < found;
    assists_.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
    last_assist_ns_.store(now_ns, std::memory_order_relaxed);  // relaxed: a heuristic
  }
  if (wake) WakeUp();
}

void ArmTimerNodeOnThisWorker(TimerNode* node) {
  std::size_t worker = 0;
  SchedulingGroup* group = ThisThreadWorkerGroup(&worker);
  CHECK(group != nullptr) << "a timer node armed on a thread that is no worker";
  TimerWorkerFor(group)->AddToQueue(worker, node);
}

void ArmTimerEntry(TimerEntry* entry) {
  std::size_t worker = 0;
  SchedulingGroup* group = ThisThreadWorkerGroup(&worker);
  if (group == nullptr) {
    TimerWorkerFor(entry->group)->Add(entry);
    return;
  }
  entry->group = group;  // its callbacks run here, where its queue is
  entry->node.expires_ns = entry->expires.ns();
  entry->node.fire = &TimerWorker::FireEntryNode;
  // Refused after Stop(): the queue's reference goes, as Add() does with a list's.
  if (!TimerWorkerFor(group)->AddToQueue(worker, &entry->node)) CancelAndReleaseTimerEntry(entry);
}

bool RemoveTimerEntryFromQueue(TimerEntry* entry) {
  return TimerQueue::Remove(&entry->node) == TimerQueue::RemoveResult::kRemoved;
}

}  // namespace spindle::internal
