// Copyright 2026 The Spindle Authors.
//
// The timer thread of one scheduling group.
//
// Adding a timer. A producer appends the entry to a list of its own (a per-thread list
// per TimerWorker, guarded by a spinlock only the producer and the worker ever take),
// so producers never contend with each other. It then wakes the worker only if the new
// timer expires before the one the worker sleeps for.
//
// The worker loop:
//   1. seq = wake_seq_ (acquire); then leave if Stop() was called. Stop() sets its flag
//      before bumping wake_seq_, so the flag is seen here or step 5 returns at once. (The
//      reverse order lost the stop: flag checked, Stop() sets it and bumps the sequence,
//      the new sequence read, and step 5 waited on it with no timer left to wake it.)
//   2. Move every producer list into the heap; fire what has expired.
//   3. Publish the next expiry in next_expiry_ns_ (a relaxed store), then a StoreLoad fence.
//   4. If any producer list is non-empty again, go to 1.
//   5. futex-wait on wake_seq_ while it still equals seq, until the next expiry.
// A producer: append (under its list's lock), StoreLoad fence, read next_expiry_ns_; if
// the new timer is earlier, bump wake_seq_ and futex-wake.
//
// No lost wake-up: (append; fence; read next_expiry) against (publish next_expiry;
// fence; read lists) is the store-buffering pattern with a fence on each side, so
// either the worker sees the new entry in step 4, or the producer sees the published
// expiry and wakes the worker if it must. A bump of wake_seq_ after step 1 makes step 5
// return at once, so a wake between 4 and 5 is not lost either.
//
// Cancelling is O(1): KillTimer() flips the entry's state; the heap drops cancelled
// entries when they reach the top, and is rebuilt without them once more than half of
// it is cancelled (RPC timeouts are mostly set and cancelled long before they expire).
//
// Periodic timers never overlap: the next expiry is armed only when a call returns, at
// previous expiry + interval (so lateness does not accumulate as drift); a call that
// overran its period is followed at once by the next, so none is lost.

#include "timer/internal/timer_worker.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <climits>
#include <ctime>

#include "runtime/internal/chaos.h"
#include "runtime/internal/live_fibers.h"
#include "runtime/internal/ready_batch.h"
#include "runtime/internal/futex.h"
#include "glog/logging.h"
#include "runtime/internal/global_run_queue.h"
#include "runtime/internal/scheduling_group.h"

namespace spindle::internal {
namespace {

std::int64_t ToNanos(TimerClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::atomic<std::uint64_t> g_next_worker_serial{1};

// relaxed: a test installs the hook before it starts the worker it should affect.
std::atomic<void (*)(TimerWorker*)> g_test_hook{nullptr};

// Cancels a timer the worker will not fire after all (stopping) and drops the worker's
// reference to it.
void CancelAndRelease(TimerEntry* entry) {
  int expected = TimerEntry::kPending;
  // acq_rel: as in KillTimer().
  entry->state.compare_exchange_strong(expected, TimerEntry::kCancelled,
                                       std::memory_order_acq_rel);
  ReleaseTimerEntry(entry);
}

}  // namespace

void SetTimerWorkerTestHook(void (*hook)(TimerWorker* worker)) {
  g_test_hook.store(hook, std::memory_order_relaxed);  // relaxed: see g_test_hook
}

void ReleaseTimerEntry(TimerEntry* entry) {
  // acq_rel: the last owner sees every other owner's writes before it deletes.
  if (entry->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete entry;
}

namespace {

// The running runtime's timer threads, indexed like its groups. acquire/release: Start
// publishes the vector fully built; readers acquire it.
std::atomic<std::vector<std::unique_ptr<TimerWorker>>*> g_timer_workers{nullptr};

}  // namespace

void StartTimerWorkers(const std::vector<SchedulingGroup*>& groups) {
  CHECK(g_timer_workers.load(std::memory_order_acquire) == nullptr)
      << "timer workers started twice";
  auto* workers = new std::vector<std::unique_ptr<TimerWorker>>;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    CHECK_EQ(groups[g]->index(), g) << "groups must come in index order";
    workers->push_back(std::make_unique<TimerWorker>(groups[g]));
  }
  for (auto& worker : *workers) worker->Start();
  g_timer_workers.store(workers, std::memory_order_release);
}

void StopTimerWorkers() {
  auto* workers = g_timer_workers.load(std::memory_order_acquire);
  CHECK(workers != nullptr) << "no timer workers to stop";
  for (auto& worker : *workers) worker->Stop();
}

void DestroyTimerWorkers() {
  delete g_timer_workers.exchange(nullptr, std::memory_order_acq_rel);
}

TimerWorker* TimerWorkerFor(const SchedulingGroup* group) {
  auto* workers = g_timer_workers.load(std::memory_order_acquire);
  CHECK(workers != nullptr)
      << "no timer workers: the Spindle runtime is not running (call "
         "spindle::StartRuntime() first)";
  return (*workers)[group->index()].get();
}

TimerWorker::TimerWorker(SchedulingGroup* group)
    : group_(group),
      // relaxed: only uniqueness matters.
      serial_(g_next_worker_serial.fetch_add(1, std::memory_order_relaxed)) {}

TimerWorker::~TimerWorker() {
  CHECK(!thread_.joinable()) << "TimerWorker destroyed while running";
}

void TimerWorker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void TimerWorker::Stop() {
  stopping_.store(true, std::memory_order_release);  // release: pairs with Run()'s loads
  WakeUp();
  thread_.join();
  CollectNewTimers();
  for (TimerEntry* entry : heap_) CancelAndRelease(entry);
  heap_.clear();
}

TimerWorker::ProducerList* TimerWorker::ThisThreadList() {
  // Keyed by a serial number, never by address: a later TimerWorker may reuse the
  // address of a stopped one, whose lists are gone.
  struct Cached {
    std::uint64_t serial;
    ProducerList* list;
  };
  thread_local std::vector<Cached> cache;
  for (const Cached& c : cache) {
    if (c.serial == serial_) return c.list;
  }
  auto list = std::make_unique<ProducerList>();
  ProducerList* raw = list.get();
  {
    std::lock_guard<std::mutex> lock(producers_lock_);
    producers_.push_back(std::move(list));
  }
  cache.push_back(Cached{serial_, raw});
  return raw;
}

void TimerWorker::Add(TimerEntry* entry) {
  // Read before publishing: once the entry is in the list, the worker may fire and
  // free it at any moment.
  const std::int64_t expires_ns = ToNanos(entry->expires_at);
  ProducerList* list = ThisThreadList();
  bool refused = false;
  {
    std::lock_guard<Spinlock> lock(list->lock);
    // acquire: pairs with the release store in Stop(). Checked under the list's lock,
    // which Stop()'s last collection takes after that store: either that collection
    // finds the entry (and cancels it) or we see the stop here. Checked before the lock,
    // a periodic timer re-armed by its fiber during Stop() could land in the list after
    // the last collection and leak.
    if (stopping_.load(std::memory_order_acquire)) {
      refused = true;
    } else {
      list->entries.push_back(entry);
    }
  }
  if (refused) {
    CancelAndRelease(entry);
    return;
  }
  ChaosPause();  // queued, before the expiry check (chaos.h)
  StoreLoadFence();  // pairs with the worker's fence in step 3
  // relaxed: ordered by the fence above.
  if (expires_ns < next_expiry_ns_.load(std::memory_order_relaxed)) WakeUp();
}

void TimerWorker::WakeUp() {
  // release: pairs with the acquire load in step 1 of Run().
  wake_seq_.fetch_add(1, std::memory_order_release);
  FutexWake(&wake_seq_);
}

bool TimerWorker::CollectNewTimers() {
  bool any = false;
  std::lock_guard<std::mutex> lock(producers_lock_);
  for (auto& list : producers_) {
    {
      std::lock_guard<Spinlock> guard(list->lock);
      if (list->entries.empty()) continue;
      collected_.swap(list->entries);
    }
    for (TimerEntry* entry : collected_) {
      heap_.push_back(entry);
      std::push_heap(heap_.begin(), heap_.end(), HeapOrder());
    }
    collected_.clear();
    any = true;
  }
  return any;
}

void TimerWorker::FireExpired(TimerClock::time_point now) {
  while (!heap_.empty() && heap_.front()->expires_at <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), HeapOrder());
    TimerEntry* entry = heap_.back();
    heap_.pop_back();
    Fire(entry);
  }
}

void TimerWorker::Fire(TimerEntry* entry) {
  const bool periodic = entry->interval.count() != 0;
  int expected = TimerEntry::kPending;
  // acq_rel: exactly one of the expiry and KillTimer() wins this flip.
  if (!entry->state.compare_exchange_strong(
          expected, periodic ? TimerEntry::kRunning : TimerEntry::kDone,
          std::memory_order_acq_rel)) {
    ReleaseTimerEntry(entry);  // killed before it expired
    return;
  }
  fired_.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
  if (entry->inline_callback != nullptr) {
    entry->inline_callback(entry->inline_arg);
    ReleaseTimerEntry(entry);
    return;
  }
  // The worker's reference travels with the call.
  FiberDesc* desc = NewFiberDesc([this, entry, periodic] {
    if (!periodic) {
      auto callback = std::move(entry->callback);
      ReleaseTimerEntry(entry);
      callback();
      return;
    }
    entry->callback();
    int running = TimerEntry::kRunning;
    // acq_rel: a KillTimer() during the call wins, and the timer ends here.
    if (!entry->state.compare_exchange_strong(running, TimerEntry::kPending,
                                              std::memory_order_acq_rel)) {
      ReleaseTimerEntry(entry);
      return;
    }
    entry->expires_at += entry->interval;
    Add(entry);
  });
  group_->StartFiber(desc);
}

void TimerWorker::CompactIfMostlyCancelled() {
  if (heap_.size() < 1024) return;
  std::size_t cancelled = 0;
  for (const TimerEntry* entry : heap_) {
    // relaxed: a heuristic; the flip is re-checked when an entry fires.
    cancelled += entry->state.load(std::memory_order_relaxed) == TimerEntry::kCancelled;
  }
  if (cancelled * 2 < heap_.size()) return;
  auto keep = std::partition(heap_.begin(), heap_.end(), [](const TimerEntry* entry) {
    return entry->state.load(std::memory_order_acquire) != TimerEntry::kCancelled;
  });
  for (auto it = keep; it != heap_.end(); ++it) ReleaseTimerEntry(*it);
  heap_.erase(keep, heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), HeapOrder());
}

void TimerWorker::Run() {
  pthread_setname_np(pthread_self(),
                     ("spindle-t" + std::to_string(group_->index())).substr(0, 15).c_str());
  // Timers should fire when due, not up to 50 us later (the default timer slack).
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  MarkThisThreadAsRuntimeThread(true);
  std::size_t compaction_tick = 0;
  for (;;) {
    // Step 1, then the stop check, in this order. acquire: pairs with the release RMW
    // in WakeUp(). Stop() sets stopping_ before its WakeUp() bumps the sequence, so
    // either we read the old sequence (and step 5's wait on it returns at once, since
    // it has changed) or the new one, which carries the stop flag with it.
    const int seq = wake_seq_.load(std::memory_order_acquire);
    if (auto hook = g_test_hook.load(std::memory_order_relaxed)) hook(this);
    ChaosPause();  // between step 1 and the stop check (chaos.h)
    // acquire: pairs with the release store in Stop().
    if (stopping_.load(std::memory_order_acquire)) break;
    CollectNewTimers();                                          // step 2
    {
      // Fibers woken by this round's deadlines are queued together when it ends, ahead
      // of fibers that were only started (v2 spreads them over its workers' inboxes).
      ReadyBatch batch(ReadyBatch::Source::kTimerRound);
      FireExpired(TimerClock::now());
    }
    if (++compaction_tick % 64 == 0) CompactIfMostlyCancelled();
    const std::int64_t next =
        heap_.empty() ? INT64_MAX : ToNanos(heap_.front()->expires_at);
    next_expiry_ns_.store(next, std::memory_order_relaxed);     // step 3
    StoreLoadFence();
    bool more = false;                                            // step 4
    {
      std::lock_guard<std::mutex> lock(producers_lock_);
      for (auto& list : producers_) {
        std::lock_guard<Spinlock> guard(list->lock);
        if (!list->entries.empty()) {
          more = true;
          break;
        }
      }
    }
    if (more) continue;
    if (next == INT64_MAX) {                                      // step 5
      FutexWait(&wake_seq_, seq);
      continue;
    }
    if (next <= ToNanos(TimerClock::now())) continue;
    FutexWaitUntil(&wake_seq_, seq, next);
  }
}

}  // namespace spindle::internal
