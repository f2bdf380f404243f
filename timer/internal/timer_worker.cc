// Copyright 2026 The Spindle Authors.
//
// The timers of one scheduling group: a TimerQueue per worker, and the group's timer
// thread with a heap for timers armed elsewhere.
//
// Workers' queues, their assists and arming: timer_worker_queues.cc.
//
// Adding a timer from another thread (a plain thread's SetTimer). A producer appends
// the entry to a list of its own (a per-thread list per TimerWorker, guarded by a
// spinlock only the producer and the worker ever take), so producers never contend with
// each other. It then wakes the worker only if the new timer expires before the one the
// worker sleeps for.
//
// The worker loop:
//   1. seq = wake_seq_ (acquire); then leave if Stop() was called. Stop() sets its flag
//      before bumping wake_seq_, so the flag is seen here or step 5 returns at once. (The
//      reverse order loses the stop: flag checked, Stop() sets it and bumps the sequence,
//      the new sequence read, and step 5 waits on it with no timer left to wake it.)
//   2. Move every producer list into the heap; fire what has expired.
//   3. Publish the next expiry in next_expiry_ns_ (a relaxed store), then a StoreLoad fence.
//   4. If any producer list is non-empty again, go to 1.
//   5. park on wake_seq_ (a Parker) while it still equals seq, until the next expiry.
// A producer: append (under its list's lock), StoreLoad fence, read next_expiry_ns_; if
// the new timer is earlier, bump wake_seq_ and unpark.
//
// No lost wake-up: (append; fence; read next_expiry) against (publish next_expiry;
// fence; read lists) is the store-buffering pattern with a fence on each side, so
// either the worker sees the new entry in step 4, or the producer sees the published
// expiry and wakes the worker if it must. A bump of wake_seq_ after step 1 makes step 5
// return at once, so a wake between 4 and 5 is not lost either.
//
// Assists. Busy workers of the group fire due timers too (group_timers.h): every kPollEvery-th
// switch a worker compares the clock with next_expiry_ns_ and, if a timer is due, tries
// the heap's lock (FireDue); the thread blocks on that lock, a worker never does. The
// heap, the collected entries and step 3's publication are under that lock. A producer
// whose timer is earlier than the published expiry lowers it (a compare-and-swap) as
// well as waking the thread, so workers see the timer due even while the thread waits
// for a CPU. An assist:
//   a. collects the producers' lists like step 2 and fires like a round;
//   b. publishes the heap's new front (unless a producer lowered the value meanwhile),
//      then a StoreLoad fence;
//   c. re-checks the producer lists like step 4 and goes back to a while they are
//      non-empty (up to kMaxAssistRounds; then it lowers the expiry to now, so the
//      next poll assists again, and wakes the thread). A producer that appended after
//      a's collection but read the expiry before b's publication compared its timer
//      with the old expiry and did nothing; c sees its entry, by the same store-
//      buffering argument as steps 3-4;
//   d. if the front it published is earlier than the expiry it found published (it
//      collected a timer due before the thread's wake-up), wakes the thread, so the
//      thread never sleeps past a timer that left the producer lists without it (step
//      4 could not see it any more).
// While assists happen (the last one less than 1 ms ago) the thread sleeps until
// kAssistGraceNs past the next expiry: it is then the fallback, not a third thread
// competing with busy workers for CPUs at every expiry. Stop() takes the heap's lock
// after the thread has ended, and an assist checks stopping_ under it, so no timer
// fires after Stop() returns.
//
// Firing a round touches cold memory: the entry, the waiter and the control block of a
// fiber that has slept a while, all on its stack's top page. FireRound() first takes
// the round's entries off the heap (whose items carry their expiry, so ordering it
// reads no entry), then fires them in order, prefetching a few ahead.
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

#include "fiber/internal/batch_pool.h"
#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/base/futex.h"
#ifndef SPINDLE_MODEL_CHECK
#include "runtime/internal/base/metrics.h"
#endif
#include "runtime/internal/queues/global_run_queue.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {
namespace {

std::atomic<std::uint64_t> g_next_worker_serial{1};

TimerEntry* EntryOf(TimerNode* node) {
  return reinterpret_cast<TimerEntry*>(reinterpret_cast<char*>(node) -
                                       offsetof(TimerEntry, node));
}

}  // namespace

// The test hooks (test seams: defined only in builds with them). relaxed: a test
// installs a hook before it starts the worker it should affect.
namespace timer_internal {
extern std::atomic<void (*)(TimerWorker*)> g_test_hook;
extern std::atomic<void (*)(TimerWorker*)> g_assist_test_hook;
}  // namespace timer_internal
using timer_internal::g_assist_test_hook;
using timer_internal::g_test_hook;

#if SPINDLE_HAS_TEST_SEAMS
std::atomic<void (*)(TimerWorker*)> timer_internal::g_test_hook{nullptr};
std::atomic<void (*)(TimerWorker*)> timer_internal::g_assist_test_hook{nullptr};

void SetTimerWorkerTestHook(void (*hook)(TimerWorker* worker)) {
  g_test_hook.store(hook, std::memory_order_relaxed);  // relaxed: see g_test_hook
}

void SetTimerWorkerAssistTestHook(void (*hook)(TimerWorker* worker)) {
  g_assist_test_hook.store(hook, std::memory_order_relaxed);  // relaxed: as g_test_hook
}
#endif  // SPINDLE_HAS_TEST_SEAMS

TimerEntry* NewTimerEntry() { return PooledObjects<TimerEntry>::New(); }

void ReleaseTimerEntry(TimerEntry* entry) {
  // acq_rel: the last owner sees every other owner's writes before it recycles.
  if (entry->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Back to the initial state (relaxed: the entry is ours alone until handed out
  // again, which publishes these stores).
  entry->state.store(TimerEntry::kPending, std::memory_order_relaxed);
  entry->expires = MonotonicDeadline::Expired();
  entry->interval = TimerClock::duration{0};
  if (entry->callback) entry->callback = nullptr;
  entry->inline_callback = nullptr;
  entry->inline_arg = nullptr;
  entry->inline_touches = nullptr;
  entry->group = nullptr;
  entry->node.expires_ns = 0;
  entry->node.fire = nullptr;
  entry->node.touches = nullptr;
  entry->node.dropped.store(false, std::memory_order_relaxed);
  PooledObjects<TimerEntry>::Delete(entry);
}

void CancelAndReleaseTimerEntry(TimerEntry* entry) {
  int expected = TimerEntry::kPending;
  // acq_rel: as in KillTimer().
  entry->state.compare_exchange_strong(expected, TimerEntry::kCancelled,
                                       std::memory_order_acq_rel);
  ReleaseTimerEntry(entry);
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
    CHECK_EQ(GroupIndex(groups[g]), g) << "groups must come in index order";
    workers->push_back(std::make_unique<TimerWorker>(groups[g], GroupWorkerCount(groups[g])));
  }
  for (auto& worker : *workers) worker->Start();
  for (auto& worker : *workers) worker->WaitUntilSetUp();
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
  return (*workers)[GroupIndex(group)].get();
}

TimerWorker::TimerWorker(SchedulingGroup* group, std::size_t workers)
    : group_(group),
      queue_count_(workers),
      queues_(new TimerQueue[workers]),
      // relaxed: only uniqueness matters.
      serial_(g_next_worker_serial.fetch_add(1, std::memory_order_relaxed)) {}

TimerWorker::~TimerWorker() {
  CHECK(!thread_.joinable()) << "TimerWorker destroyed while running";
}

void TimerWorker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void TimerWorker::WaitUntilSetUp() { set_up_.Wait(); }

void TimerWorker::Stop() {
  RequestStop();
  thread_.join();
  CancelPendingAfterStop();
}

void TimerWorker::RequestStop() {
  // release: pairs with the acquire loads of the flag in Run(), Add() and FireDue().
  stopping_.store(true, std::memory_order_release);
  WakeUp();
}

void TimerWorker::CancelPendingAfterStop() {
  // A worker's assist (FireDue) may be firing: wait for it; later ones see stopping_.
  OsMutexGuard heap_lock(heap_lock_);
  CollectNewTimers();
  for (const HeapItem& item : heap_) CancelAndReleaseTimerEntry(item.entry);
  heap_.clear();
  // The workers' queues close: a node armed later is dropped at once (AddToQueue).
  std::vector<TimerNode*> dropped;
  for (std::size_t w = 0; w < queue_count_; ++w) queues_[w].DropAll(&dropped);
  for (TimerNode* node : dropped) {
    // An entry's reference held by the queue goes; a waiter's node (a fiber still
    // waiting with a deadline after the runtime's drain) is left to its waiter, whose
    // TimerQueue::Remove() reports it dropped.
    if (node->fire == &TimerWorker::FireEntryNode) CancelAndReleaseTimerEntry(EntryOf(node));
  }
}

TimerWorker::ProducerList* TimerWorker::ThisThreadList() {
#ifdef SPINDLE_MODEL_CHECK
  // A model's threads are fibers of one OS thread, which share its thread_locals: one
  // list per model thread instead, by its index, made before the model's threads start
  // (timer_worker_model_test.cc). Read without producers_lock_: a thread takes it only
  // for its first Add() here, and a model that took it on every Add() would give the
  // protocol an ordering the runtime does not have.
  const std::size_t thread = rl::thread_index();
  RL_ASSERT(thread < model_lists_.size());
  return model_lists_[thread];
#else
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
    OsMutexGuard lock(producers_lock_);
    producers_.push_back(std::move(list));
  }
  cache.push_back(Cached{serial_, raw});
  return raw;
#endif  // SPINDLE_MODEL_CHECK
}

void TimerWorker::Add(TimerEntry* entry) {
  // Read before publishing: once the entry is in the list, the worker may fire and
  // free it at any moment.
  const std::int64_t expires_ns = entry->expires.ns();
  ProducerList* list = ThisThreadList();
  bool refused = false;
  bool collect = false;
  {
    SpinlockGuard lock(list->lock);
    // acquire: pairs with the release store in RequestStop(). Checked under the list's lock,
    // which Stop()'s last collection takes after that store: either that collection
    // finds the entry (and cancels it) or we see the stop here. Checked before the lock,
    // a periodic timer re-armed by its fiber during Stop() could land in the list after
    // the last collection and leak.
    if (stopping_.load(std::memory_order_acquire)) {
      refused = true;
    } else {
      list->entries.push_back(entry);
      collect = list->entries.size() % kCollectEvery == 0;
    }
  }
  if (refused) {
    CancelAndReleaseTimerEntry(entry);
    return;
  }
  // Many timers queued: let the thread collect them and drop the cancelled ones (see
  // kCollectEvery). An extra wake-up is only an early round.
  if (collect) WakeUp();
  WakeIfEarlier(expires_ns);
}

void TimerWorker::WakeIfEarlier(std::int64_t expires_ns) {
  ChaosPause();  // queued, before the expiry check (chaos.h)
  StoreLoadFence();  // pairs with the thread's fence in step 3 and an assist's
  // relaxed: ordered by the fence above.
  if (expires_ns < next_expiry_ns_.load(std::memory_order_relaxed)) {
    // Lower the published expiry too, so that busy workers see this timer due (Due())
    // even while the thread waits for a CPU; the thread re-publishes after its round.
    LowerPublishedExpiry(expires_ns);
    WakeUp();
  }
}

void TimerWorker::FireEntryNode(TimerNode* node) {
  TimerEntry* entry = EntryOf(node);
  TimerWorkerFor(entry->group)->Fire(entry);
}

void TimerWorker::WakeUp() {
  // release: pairs with the acquire load in step 1 of Run().
  wake_seq_.word().fetch_add(1, std::memory_order_release);
  wake_seq_.Unpark();
}

bool TimerWorker::CollectNewTimers() {
  bool any = false;
  OsMutexGuard lock(producers_lock_);
  for (auto& list : producers_) {
    {
      SpinlockGuard guard(list->lock);
      if (list->entries.empty()) continue;
      collected_.swap(list->entries);
    }
    for (TimerEntry* entry : collected_) {
      heap_.push_back(HeapItem{entry->expires.ns(), entry});
      std::push_heap(heap_.begin(), heap_.end(), HeapOrder());
    }
    collected_.clear();
    any = true;
  }
  return any;
}

void TimerWorker::FireRound(std::int64_t now_ns) {
  CollectNewTimers();
  due_.clear();
  while (!heap_.empty() && heap_.front().expires_ns <= now_ns) {
    std::pop_heap(heap_.begin(), heap_.end(), HeapOrder());
    due_.push_back(heap_.back().entry);
    heap_.pop_back();
  }
  // A round of a busy server fires hundreds of wake-ups, each touching an entry, a
  // waiter and a control block that nobody has touched since the fiber went to sleep:
  // fetch them a few timers ahead instead of waiting on each miss in turn. The entry
  // first (its fields say where the rest is), then what it points to.
  constexpr std::size_t kEntryAhead = 8;
  constexpr std::size_t kTargetAhead = 4;
  const std::size_t n = due_.size();
  for (std::size_t i = 0; i < n && i < kEntryAhead; ++i) __builtin_prefetch(due_[i], 1);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kEntryAhead < n) __builtin_prefetch(due_[i + kEntryAhead], 1);
    if (i + kTargetAhead < n) {
      const TimerEntry* ahead = due_[i + kTargetAhead];
      if (ahead->inline_arg != nullptr) __builtin_prefetch(ahead->inline_arg, 1);
      if (ahead->inline_touches != nullptr) {
        // A FiberEntity: its scheduler lock and group in the first line, its state in
        // the third (fiber_entity.h). A hint only: a changed layout costs misses.
        __builtin_prefetch(ahead->inline_touches, 1);
        __builtin_prefetch(static_cast<const char*>(ahead->inline_touches) + 128, 1);
      }
    }
    Fire(due_[i]);
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
  Trace(TraceKind::kTimers, 0, 1);
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
    entry->expires = entry->expires.Plus(entry->interval);
    ArmTimerEntry(entry);
  });
  StartFiberIn(group_, desc);
}

std::size_t TimerWorker::held() {
  std::size_t n = heap_size_.load(std::memory_order_relaxed);
  for (std::size_t w = 0; w < queue_count_; ++w) n += queues_[w].size();
  OsMutexGuard lock(producers_lock_);
  for (auto& list : producers_) {
    SpinlockGuard guard(list->lock);
    n += list->entries.size();
  }
  return n;
}

bool TimerWorker::AnyProducerListNonEmpty() {
  OsMutexGuard lock(producers_lock_);
  for (auto& list : producers_) {
    SpinlockGuard guard(list->lock);
    if (!list->entries.empty()) return true;
  }
  return false;
}

void TimerWorker::LowerPublishedExpiry(std::int64_t expires_ns) {
  // relaxed: a hint for Due(); callers pair it with a wake-up or a fence.
  std::int64_t published = next_expiry_ns_.load(std::memory_order_relaxed);
  while (expires_ns < published &&
         !next_expiry_ns_.compare_exchange_weak(published, expires_ns,
                                                std::memory_order_relaxed)) {
  }
}

void TimerWorker::CompactIfMostlyCancelled() {
  checked_size_ = heap_.size();
  if (heap_.size() < 1024) return;
  std::size_t cancelled = 0;
  for (const HeapItem& item : heap_) {
    // relaxed: a heuristic; the flip is re-checked when an entry fires.
    cancelled += item.entry->state.load(std::memory_order_relaxed) == TimerEntry::kCancelled;
  }
  if (cancelled * 2 < heap_.size()) return;
  auto keep = std::partition(heap_.begin(), heap_.end(), [](const HeapItem& item) {
    return item.entry->state.load(std::memory_order_acquire) != TimerEntry::kCancelled;
  });
  for (auto it = keep; it != heap_.end(); ++it) ReleaseTimerEntry(it->entry);
  heap_.erase(keep, heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), HeapOrder());
  checked_size_ = heap_.size();
  // A heap that held millions of cancelled timers gives their memory back.
  if (heap_.capacity() > 4 * heap_.size() + 4096) heap_.shrink_to_fit();
}

void TimerWorker::Run() {
  pthread_setname_np(pthread_self(),
                     ("spindle-t" + std::to_string(GroupIndex(group_))).substr(0, 15).c_str());
  // Timers should fire when due, not up to 50 us later (the default timer slack).
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  // SCHED_BATCH: waking up, this thread does not preempt a running worker. Busy
  // workers fire their timers themselves (FireDue), and the fibers this thread would
  // wake could not run before a worker is free anyway; with a worker idle there is a
  // CPU for it at once. A thread that preempts a worker at each of its rounds stalls
  // that worker's queued fibers for the rest of a scheduler slice. Best effort: on
  // failure the thread keeps the default policy.
  {
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
  }
  MarkThisThreadAsRuntimeThread(true);
#ifndef SPINDLE_MODEL_CHECK  // no counters in a model
  // Its first wake-up of a worker and its first round allocate nothing.
  PrepareThisThreadCounters();
  ReadyBatch::PrepareThisThread();
#endif
  set_up_.Set();
  std::size_t compaction_tick = 0;
  for (;;) {
    // Step 1, then the stop check, in this order. acquire: pairs with the release RMW
    // in WakeUp(). Stop() sets stopping_ before its WakeUp() bumps the sequence, so
    // either we read the old sequence (and step 5's wait on it returns at once, since
    // it has changed) or the new one, which carries the stop flag with it.
    const int seq = wake_seq_.word().load(std::memory_order_acquire);
    if constexpr (kTestSeams) {
      if (auto hook = g_test_hook.load(std::memory_order_relaxed)) hook(this);
    }
    ChaosPause();  // between step 1 and the stop check (chaos.h)
    // acquire: pairs with the release store in RequestStop().
    if (stopping_.load(std::memory_order_acquire)) break;
    std::int64_t next;
    std::int64_t heap_next;
    {
      // Fibers woken by this round's deadlines are queued together when it ends (after
      // the heap's lock is released), ahead of fibers that were only started (v2
      // spreads them over its workers' inboxes).
      ReadyBatch batch(ReadyBatch::Source::kTimerRound);
      OsMutexGuard heap_lock(heap_lock_);
      const std::int64_t now_ns = MonotonicNowNs();
      FireRound(now_ns);  // step 2, for the lists and the heap
      for (std::size_t w = 0; w < queue_count_; ++w) {  // and for the workers' queues
        if (queues_[w].front_ns() <= now_ns) FireQueue(queues_[w], now_ns, false);
      }
      // Every 64th round, and whenever the heap has doubled since the last check (timers
      // armed and cancelled far ahead of any expiry would otherwise pile up).
      if (++compaction_tick % 64 == 0 || heap_.size() >= 2 * checked_size_ + 1024) {
        CompactIfMostlyCancelled();
      }
      heap_next = HeapFrontNs();
      next = EarliestNs();
      heap_size_.store(heap_.size(), std::memory_order_relaxed);
      // Step 3, under the heap's lock, so an assist (FireDue) sees it and may lower it.
      next_expiry_ns_.store(next, std::memory_order_relaxed);
    }
    StoreLoadFence();
    if (AnyProducerListNonEmpty() || AnyQueueFrontBelow(next)) continue;  // step 4
    // Step 5: park while the sequence is still `seq`, until the next expiry (if any).
    // A worker asleep until its own queue's front fires it itself (NoteSleepingUntil):
    // for that front we are the fallback, kAssistGraceNs later, instead of a second
    // thread woken at the same moment (and a third, the worker, woken by us).
    std::int64_t wake_ns = heap_next;
    for (std::size_t w = 0; w < queue_count_; ++w) {
      const std::int64_t front = queues_[w].front_ns();
      if (front == INT64_MAX) continue;
      const bool owner_wakes_for_it = queues_[w].owner_sleeps_until() <= front;
      wake_ns = std::min(owner_wakes_for_it ? front + kAssistGraceNs : front, wake_ns);
    }
    if (wake_ns == INT64_MAX) {
      wake_seq_.ParkWhile(seq, MonotonicDeadline::None());
      continue;
    }
    // While the workers fire timers themselves (FireDue, in the last kAssistWindowNs),
    // this thread is their fallback: it wakes kAssistGraceNs after the next expiry and
    // finds it fired, instead of competing for a busy CPU at every expiry (a thread that
    // always has a round to fire uses up its share and then waits a whole scheduler
    // slice, with every timer of its next round late).
    const std::int64_t now = MonotonicNowNs();
    std::int64_t wait_until = wake_ns;
    // relaxed: a heuristic.
    if (now - last_assist_ns_.load(std::memory_order_relaxed) < kAssistWindowNs) {
      wait_until = std::max(wait_until, next + kAssistGraceNs);
    }
    if (wait_until <= now) continue;
    wake_seq_.ParkWhile(seq, MonotonicDeadline::AtNs(wait_until));
  }
}

}  // namespace spindle::internal
