// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_TIMER_INTERNAL_TIMER_WORKER_H_
#define SPINDLE_TIMER_INTERNAL_TIMER_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "fiber/internal/atomic.h"
#include "fiber/internal/deadline.h"
#include "fiber/internal/os_mutex.h"
#include "fiber/internal/spinlock.h"
#include "runtime/internal/idle/group_timers.h"
#include "runtime/internal/base/parker.h"
#include "timer/internal/timer_queue.h"

namespace spindle::internal {

class SchedulingGroup;

using TimerClock = std::chrono::steady_clock;

// One timer. Shared by the TimerWorker (while the timer is in its heap or firing) and
// the user (until KillTimer/DetachTimer), counted in `refs`.
struct TimerEntry {
  enum State : int {
    kPending,    // waiting for its expiry (or, periodic, for its next one)
    kRunning,    // its callback runs (user timers: in a fiber)
    kCancelled,  // killed; will never start a call again
    kDone,       // a one-shot timer whose call has started
  };
  Atomic<int> state{kPending};
  Atomic<int> refs{0};
  MonotonicDeadline expires = MonotonicDeadline::Expired();
  TimerClock::duration interval{0};  // 0: one-shot
  // User timers: runs in a new fiber of `group`.
  absl::AnyInvocable<void()> callback;
  // Internal timers (fiber wake-ups): runs on the TimerWorker thread itself; must be
  // short and must not block.
  void (*inline_callback)(void*) = nullptr;
  void* inline_arg = nullptr;
  // What else the inline callback touches (a parked fiber's control block), so that a
  // firing round can prefetch it with `inline_arg`: both usually sit on the cold stack
  // page of a fiber that has slept a while. May be null.
  const void* inline_touches = nullptr;
  SchedulingGroup* group = nullptr;
  // The entry's place in a worker's TimerQueue, when armed there (ArmTimerEntry()).
  // Its `expires_ns` is `expires`' ns().
  TimerNode node;
};

// A TimerEntry in its initial state, from a per-thread pool (a sleep makes one; a
// malloc and a free on two threads for each would weigh on every sleep).
TimerEntry* NewTimerEntry();
// Drops one reference; the last one returns the entry to the pool.
void ReleaseTimerEntry(TimerEntry* entry);
// Cancels a timer that will not fire after all (its worker stopping) and drops that
// reference.
void CancelAndReleaseTimerEntry(TimerEntry* entry);

// The timers of one scheduling group and its timer thread. Each worker of the group arms
// its timers in a TimerQueue of its own (AddToQueue(): a sleep, a deadline wait, a
// timer set from a fiber), and fires them itself when they are due while it is busy
// (FireDue). Other threads (plain threads, SetTimer from outside the runtime) add
// timers to a list of their own, collected into the thread's min-heap. The thread fires
// what is due in both, for workers that sleep or are stuck in a long fiber, and sleeps
// until the earliest expiry, woken early when an earlier timer arrives. See
// timer_worker.cc for why that wake-up cannot be lost.
// Thread-safe: Add()/AddToQueue() from any thread; Start()/Stop() by the composition root.
class TimerWorker final : public GroupTimers {
 public:
  // `workers`: how many workers the group has, a TimerQueue each.
  TimerWorker(SchedulingGroup* group, std::size_t workers);
  ~TimerWorker() override;
  TimerWorker(const TimerWorker&) = delete;
  TimerWorker& operator=(const TimerWorker&) = delete;

  void Start();
  // After Start(): returns once the thread has set itself up (its thread-locals built),
  // as FiberWorker::WaitUntilSetUp() does for a worker.
  void WaitUntilSetUp();
  // Stops the thread; timers still pending are cancelled and released. After it returns
  // no callback of this worker starts.
  void Stop();

  // Hands `entry` (with one reference for the worker already counted) to the worker.
  void Add(TimerEntry* entry);

  // Arms `node` (in no queue; expires_ns and fire set) in worker `worker`'s queue: from
  // that worker's thread, the owner's path (no other thread's memory is written unless
  // the node becomes its queue's earliest). After Stop() the node is dropped at once:
  // it never fires, TimerQueue::Remove() says so, and this returns false.
  bool AddToQueue(std::size_t worker, TimerNode* node);

  // GroupTimers: a busy worker fires its own queue's due timers, and what else of the
  // group is due (see group_timers.h and "Assists" in timer_worker.cc).
  bool Due(std::size_t worker, std::int64_t now_ns) const override;
  void FireDue(std::size_t worker, std::int64_t now_ns) override;
  std::int64_t OwnFrontNs(std::size_t worker) const override;
  bool AnyPending(std::size_t worker) const override {
    return OwnFrontNs(worker) != INT64_MAX ||
           next_expiry_ns_.load(std::memory_order_relaxed) != INT64_MAX;  // relaxed: a hint
  }
  void NoteSleepingUntil(std::size_t worker, std::int64_t ns) override;

  SchedulingGroup* group() const { return group_; }

  // Statistics (relaxed snapshots).
  std::uint64_t fired() const { return fired_.load(std::memory_order_relaxed); }
  // Rounds fired by the group's workers instead of the thread.
  std::uint64_t assists() const { return assists_.load(std::memory_order_relaxed); }
  // Producers wake the thread every this many timers queued on one list, so that
  // timers armed and cancelled far ahead of the next expiry (a socket deadline per
  // request) are collected and compacted away instead of piling up until it wakes.
  static constexpr std::size_t kCollectEvery = 4096;
  // Timers held now, cancelled ones not yet dropped included: the heap's size after
  // the last round plus what producers queued since (a snapshot).
  std::size_t held();
  std::size_t queue_count() const { return queue_count_; }
  // Relaxed snapshots of the loop's state, for tests and debugging: whether Stop() was
  // called, and the wake-up sequence the thread waits on.
  bool stop_requested() const { return stopping_.load(std::memory_order_relaxed); }
  int wake_sequence() const { return wake_seq_.word().load(std::memory_order_relaxed); }

 private:
  struct ProducerList {
    Spinlock lock;
    std::vector<TimerEntry*> entries ABSL_GUARDED_BY(lock);
  };
  // The heap holds each entry's expiry beside its pointer: ordering the heap reads no
  // entry (100k sleeping fibers' entries are 100k cache lines).
  struct HeapItem {
    std::int64_t expires_ns;
    TimerEntry* entry;
  };
  struct HeapOrder {
    bool operator()(const HeapItem& a, const HeapItem& b) const {
      return a.expires_ns > b.expires_ns;
    }
  };

  ProducerList* ThisThreadList();
  bool CollectNewTimers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(heap_lock_);
  // Whether a producer list holds a timer not yet collected.
  bool AnyProducerListNonEmpty();
  // Lowers next_expiry_ns_ to `expires_ns` unless it is already as low.
  void LowerPublishedExpiry(std::int64_t expires_ns);
  // One round, under heap_lock_: collects the producers' lists, then fires what is due
  // at `now_ns` (the thread's step 2, or an assist).
  void FireRound(std::int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(heap_lock_);
  // The earliest expiry in the heap (INT64_MAX: none).
  std::int64_t HeapFrontNs() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(heap_lock_) {
    return heap_.empty() ? INT64_MAX : heap_.front().expires_ns;
  }
  void Fire(TimerEntry* entry);
  // A TimerEntry's TimerNode::fire: Fire() by the entry's group's TimerWorker.
  static void FireEntryNode(TimerNode* node);
  friend void ArmTimerEntry(TimerEntry* entry);
  // Pops what is due at `now_ns` in `queue` and fires it, in chunks; with
  // `only_if_free`, leaves a queue whose lock another thread holds. Returns how many.
  std::size_t FireQueue(TimerQueue& queue, std::int64_t now_ns, bool only_if_free);
  // The earliest front of the workers' queues (INT64_MAX: none).
  std::int64_t QueuesFrontNs() const;
  // Whether some worker's queue has a front below `ns` (step 4, for the queues).
  bool AnyQueueFrontBelow(std::int64_t ns) const;
  // The earliest of the heap's front and the queues' fronts.
  std::int64_t EarliestNs() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(heap_lock_) {
    return std::min(HeapFrontNs(), QueuesFrontNs());
  }
  // Wakes the thread if `expires_ns` is earlier than the expiry it sleeps for, after a
  // StoreLoad fence that pairs with step 3's (the producers' half of the protocol).
  void WakeIfEarlier(std::int64_t expires_ns);
  void CompactIfMostlyCancelled() ABSL_EXCLUSIVE_LOCKS_REQUIRED(heap_lock_);
  // The thread's loop (the steps in timer_worker.cc), until Stop().
  void Run();
  // Stop() is these two around the join of the thread: the flag and the wake-up the
  // loop must not lose, then the cancellation of what is left.
  void RequestStop();
  // Only once the thread has ended (or never started): collects what producers left
  // and cancels every pending timer, waiting for an assist that may be firing.
  void CancelPendingAfterStop();
  void WakeUp();

  // The model (timer_worker_model_test.cc) runs the loop on a thread of its own.
  friend struct TimerWorkerModelAccess;

  SchedulingGroup* const group_;
  const std::size_t queue_count_;
  const std::unique_ptr<TimerQueue[]> queues_;  // one per worker of the group
  const std::uint64_t serial_;  // unique per TimerWorker, see ThisThreadList()
  std::thread thread_;
  OneShotSignal set_up_;  // Run() has set its thread up (WaitUntilSetUp)
  Atomic<bool> stopping_{false};

  OsMutex producers_lock_;
  std::vector<std::unique_ptr<ProducerList>> producers_ ABSL_GUARDED_BY(producers_lock_);
#ifdef SPINDLE_MODEL_CHECK
  // Model builds: each model thread's list (in producers_ too), by thread index.
  std::vector<ProducerList*> model_lists_;
#endif

  // Expiry the worker sleeps until, in ns since the clock's epoch (max: none).
  alignas(64) Atomic<std::int64_t> next_expiry_ns_{INT64_MAX};
  // Bumped by producers that need the worker awake; the worker futex-waits on it.
  alignas(64) Parker wake_seq_;

  // The heap and what a round uses: the thread's, or an assisting worker's, whoever
  // holds heap_lock_ (the thread blocks on it, a worker only tries it).
  OsMutex heap_lock_;
  std::vector<HeapItem> heap_ ABSL_GUARDED_BY(heap_lock_);
  // The heap's size after the last compaction check: the next check comes when it has
  // doubled (so a heap of live sleepers is not rescanned every round).
  std::size_t checked_size_ ABSL_GUARDED_BY(heap_lock_) = 0;
  std::atomic<std::size_t> heap_size_{0};  // relaxed: held()'s snapshot
  std::vector<TimerEntry*> collected_ ABSL_GUARDED_BY(heap_lock_);
  std::vector<TimerEntry*> due_ ABSL_GUARDED_BY(heap_lock_);  // a round's expired entries
  Atomic<std::uint64_t> fired_{0};
  Atomic<std::uint64_t> assists_{0};
  // When a worker last fired a round (FireDue); the thread then holds back (Run()).
  Atomic<std::int64_t> last_assist_ns_{INT64_MIN / 2};
  static constexpr std::int64_t kAssistWindowNs = 1'000'000;
  static constexpr std::int64_t kAssistGraceNs = 100'000;
  // Collections an assist makes while producers keep adding, before it leaves the rest.
  static constexpr int kMaxAssistRounds = 4;
};

// Test seams (runtime/internal/seams/test_seams.h), defined only in builds with them.
// Tests only: `hook` (nullptr removes it) runs on every TimerWorker's thread at the top
// of each round of its loop, between reading the wake-up sequence (step 1 in
// timer_worker.cc) and checking for Stop(), the window in which a Stop() must not be
// lost. Costs one relaxed load of a global per round while none is installed.
void SetTimerWorkerTestHook(void (*hook)(TimerWorker* worker));
// Tests only: `hook` (nullptr removes it) runs inside every assist (FireDue), under the
// heap's lock, after a round's collection and firing and before its publication of the
// heap's new front: the window in which a producer's new timer must not be lost.
void SetTimerWorkerAssistTestHook(void (*hook)(TimerWorker* worker));

// Arms `node` in this thread's worker's queue (TimerWorker::AddToQueue). The thread
// must be a worker of the running runtime (a fiber's thread): CHECK-fails otherwise.
void ArmTimerNodeOnThisWorker(TimerNode* node);
// Arms `entry` (its references counted, expires set): in this thread's worker's
// queue if it is a worker, else in the list of the group `entry->group` (which then
// becomes the group whose fibers run its callback).
void ArmTimerEntry(TimerEntry* entry);
// Cancels a pending entry's place in a worker's queue at once (KillTimer): true if it
// was taken out there, so the queue's reference is the caller's to release.
bool RemoveTimerEntryFromQueue(TimerEntry* entry);

// The running runtime's timer threads, one per scheduling group. The composition root
// (runtime/runtime.cc) creates them after the groups and destroys them after the groups
// stopped; the scheduler below knows nothing of them.
//
// StartTimerWorkers() creates and starts one TimerWorker per group (`groups` in index
// order) and publishes them; StopTimerWorkers() stops their threads (pending timers are
// cancelled; no callback starts afterwards) and keeps the objects, so a late Add() still
// finds one; DestroyTimerWorkers() frees them. Called in that order, by one thread. The
// composition root also gives each group its TimerWorker as the timers its busy workers
// fire (BusyPoll::SetTimers) after the start, and takes them back before the stop.
void StartTimerWorkers(const std::vector<SchedulingGroup*>& groups);
void StopTimerWorkers();
void DestroyTimerWorkers();
// The timer thread of `group`, a group of the running runtime (CHECK-fails, naming the
// problem, when no runtime runs). Thread-safe while the runtime runs.
TimerWorker* TimerWorkerFor(const SchedulingGroup* group);

}  // namespace spindle::internal

#endif  // SPINDLE_TIMER_INTERNAL_TIMER_WORKER_H_
