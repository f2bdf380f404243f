// Copyright 2026 The Spindle Authors.
//
// The idle-path models' workload and workers (GroupIdleModel): producers push and
// Notify(); workers take work, search, announce, re-check and sleep on their slots.
// Over a group that runs the real IdlePath (idle_path_model_test.cc: RunsIdlePath),
// the workers call its FindRunnable() and the group stops through its strategy's
// Stop(). Otherwise (notifier_model_test.cc for v2's and relaxed's SearchNotifier,
// spinner_notifier_model_test.cc for v1's SpinnerNotifier, strategy_v2_model_test.cc)
// they call the notifier in the order of IdlePath::SearchAndSleep (idle_path.cc), as
// copied below, without other groups and the poller, which do not touch the notifier,
// and with at most kSearchRounds search rounds instead of the spin time. The group's
// queues are one counter of queued entries (ModelQueues: a push is a release RMW, a
// take a CAS, and UnsafeEmpty() a relaxed read, no stronger than the real queues), or
// the real RunQueue built for models (RunQueueModelQueues, StalledPushModelQueues), or
// a strategy's own (GroupIdleModel over a group of the strategy's model).
//
// Each model ends only when every pushed entry has been taken exactly once; the worker
// that takes the last one stops the group (WakeAll, or the strategy's Stop()). A lost
// wake-up leaves an entry queued while every worker sleeps: Relacy reports the
// deadlock and its trace.
// Model builds only (fiber/internal/model_testing.h).

#ifndef SPINDLE_RUNTIME_INTERNAL_IDLE_NOTIFIER_MODEL_H_
#define SPINDLE_RUNTIME_INTERNAL_IDLE_NOTIFIER_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/base/metrics.h"
#include "runtime/internal/queues/run_queue.h"

namespace spindle::internal::testing {

// The group's queues, as a count of queued entries; an entry is 1.
class ModelQueues final : public NotifiedQueues {
 public:
  std::uintptr_t TakeNext(std::size_t) override { return TryTake() ? 1 : 0; }
  bool UnsafeEmpty() const override { return queued_.load(std::memory_order_relaxed) == 0; }
  void WakeUpThief() override {}  // no other groups in these models

  // release: the entry is published to whoever takes it.
  void Push() { queued_.fetch_add(1, std::memory_order_release); }
  void Notified() {}  // after a producer's Notify()
  // acquire: pairs with Push().
  bool TryTake() {
    int queued = queued_.load(std::memory_order_relaxed);
    while (queued > 0) {
      if (queued_.compare_exchange_weak(queued, queued - 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }
  int queued() const { return queued_.load(std::memory_order_relaxed); }

 private:
  Atomic<int> queued_{0};
};

// The group's queue as v1 has it, the real RunQueue (its model build): a Push() claims
// a position and then publishes it, two steps a model may preempt between, which hides
// the positions after it from every poll until it publishes (run_queue.h's progress
// caveat). An entry is 1.
class RunQueueModelQueues : public NotifiedQueues {
 public:
  std::uintptr_t TakeNext(std::size_t) override { return queue_.Pop(); }
  bool UnsafeEmpty() const override { return queue_.UnsafeEmpty(); }
  void WakeUpThief() override {}  // no other groups in these models

  void Push() {
    const bool pushed = queue_.Push(1, /*stealable=*/true);
    RL_ASSERT(pushed);
  }
  void Notified() {}
  bool TryTake() { return queue_.Pop() != 0; }
  int queued() const { return static_cast<int>(queue_.UnsafeSize()); }

 protected:
  RunQueue queue_{8};  // more than any model's entries: a push never fails
};

// RunQueueModelQueues whose first push stalls between claiming its position and
// publishing it until another producer has pushed and returned from its Notify(): the
// schedule of a producer preempted inside its push (run_queue.h's progress caveat) for
// as long as another producer's wake-up takes, which random search reaches too rarely
// to rely on. Every schedule it allows is one the real queue allows.
class StalledPushModelQueues final : public RunQueueModelQueues {
 public:
  void Push() {
    if (stalling_) {
      RunQueueModelQueues::Push();
      return;
    }
    stalling_ = true;  // plain: a model's threads take turns
    std::uint64_t position = 0;
    const bool claimed = queue_.ClaimForTesting(&position);
    RL_ASSERT(claimed);
    // acquire: pairs with Notified()'s release.
    while (notified_.word().load(std::memory_order_acquire) == 0) {
      notified_.ParkWhile(0, MonotonicDeadline::None());
    }
    queue_.PublishForTesting(position, 1, /*stealable=*/true);
  }
  void Notified() {
    notified_.word().store(1, std::memory_order_release);  // release: see Push()
    notified_.UnparkAll();
  }

 private:
  bool stalling_ = false;
  Parker notified_;
};

// A group as the idle-path model below drives it: a `Notifier` built as
// Notifier(NotifiedQueues&, workers) over `Queues` (ModelQueues, or another
// NotifiedQueues with Push(), Notified() (called after each producer's Notify()),
// TryTake() and queued(): the real RunQueue in the models of a producer stalled inside
// its push). A strategy's model supplies its own group with the same members
// (strategy_model_group.h); one that runs the real IdlePath adds FindRunnable(w)
// (RunsIdlePath).
template <class Notifier, class Queues, std::size_t kWorkers>
class NotifierGroup {
 public:
  Notifier& notifier() { return notifier_; }
  // A producer's push and its wake-up.
  void Produce() {
    queues_.Push();
    notifier_.Notify();
    queues_.Notified();
  }
  // IdlePath step 2 (the strategy's TakeNext), and LookInGroup (TakeNext, then
  // StealInGroup): the entry worker w took, or 0. One queue here: both take from it.
  std::uintptr_t TakeOwn(std::size_t) { return queues_.TryTake() ? 1 : 0; }
  std::uintptr_t LookInGroup(std::size_t) { return queues_.TryTake() ? 1 : 0; }
  // Worker w's running entry yields (parking.cc's SwitchToNext): the next entry of its
  // own queues first (none: the yielder keeps running, returned), then the yielder
  // queued again, with the wake-up of any push. Returns the entry w runs next.
  std::uintptr_t YieldTo(std::size_t w, std::uintptr_t entry) {
    const std::uintptr_t next = TakeOwn(w);
    if (next == 0) return entry;
    queues_.Push();
    notifier_.Notify();
    return next;
  }
  // The last entry's worker stops the group: the flag, then every worker woken.
  void Stop() {
    stopping_.store(true, std::memory_order_relaxed);  // ordered by WakeAll's RMWs
    notifier_.WakeAll();
  }
  bool Stopping() const { return stopping_.load(std::memory_order_relaxed); }
  // After the run: nothing left queued.
  bool Empty() const { return queues_.queued() == 0; }

 private:
  Queues queues_;
  Notifier notifier_{queues_, kWorkers};
  Atomic<bool> stopping_{false};
};

// Whether a model's Group runs the real IdlePath (a FindRunnable(w) of its own), or the
// idle path's notifier calls in its order below.
template <class Group, class = void>
struct RunsIdlePath : std::false_type {};
template <class Group>
struct RunsIdlePath<Group, std::void_t<decltype(&Group::FindRunnable)>> : std::true_type {};

// kWorkers workers (threads 0 .. kWorkers - 1) and kProducers producers (the rest),
// each of which makes kPushes entries ready (Group::Produce), against the workers'
// idle path over `Group` (NotifierGroup, or a strategy's). Up to kYields times, an
// entry yields before it runs: the worker switches to the next entry of its own queues,
// if any, and queues the yielder again (Group::YieldTo, as a fiber's Yield() does).
// The first entry to run starts kSpawns children from its worker before anything else
// (Group::Spawn, as a fiber's StartFiber does): each child is one more entry to take.
template <class Group, std::size_t kWorkers, std::size_t kProducers, int kPushes,
          int kYields = 0, int kSpawns = 0>
struct GroupIdleModel
    : rl::test_suite<GroupIdleModel<Group, kWorkers, kProducers, kPushes, kYields, kSpawns>,
                     kWorkers + kProducers> {
  static constexpr int kEntries = static_cast<int>(kProducers) * kPushes + kSpawns;
  static constexpr int kSearchRounds = 2;
  // Each entry but the last keeps its worker busy until all are taken (Ran()): with
  // more entries than workers the workload itself would deadlock.
  static_assert(kEntries <= static_cast<int>(kWorkers), "at most one entry per worker");

  Group group;
  Atomic<int> taken{0};
  Parker all_taken;  // its word: 1 once every entry is taken
  int yields_left = kYields;  // plain: a model's threads take turns
  int spawns_left = kSpawns;  // the same

  auto& notifier() { return group.notifier(); }

  void thread(unsigned index) {
    if (index < kWorkers) {
      RunWorker(index);
    } else {
      for (int i = 0; i < kPushes; ++i) group.Produce();
    }
  }

  void after() {
    RL_ASSERT(taken.load(std::memory_order_relaxed) == kEntries);
    RL_ASSERT(group.Empty());
  }

  // Runs a taken entry. Every entry but the last waits until all are taken, as a
  // parent fiber joins its children: the worker that runs it is busy meanwhile, so the
  // entries still queued must reach a worker through a wake-up (a worker that takes one
  // entry and just looks again would hide a lost wake-up). The worker that takes the
  // last entry releases them and stops the group, as TerminateRuntime() does. An
  // entry that yields does so as parking.cc's YieldFiber (Group::YieldTo): by the
  // general path, the worker takes the next entry from its own queues first (none: the
  // yielder keeps running) and queues the yielder again only once it switched away from
  // it, so a sibling that looked while both were held found nothing and may sleep
  // through the re-queue unless it wakes somebody; by a strategy's swap, the yielder is
  // queued first and the next entry taken after, with no wake-up.
  // Up to kYields yields in all are tried; one that finds nothing else ready is used
  // up all the same (counted before YieldTo, which may switch threads). A yielder that
  // a sibling took during a swap (YieldTo's 0) is counted by the sibling that runs it.
  void Ran(std::size_t w, std::uintptr_t entry) {
    if constexpr (kSpawns > 0) {
      while (spawns_left > 0) {
        --spawns_left;
        group.Spawn(w);
      }
    }
    while (yields_left > 0) {
      --yields_left;
      const std::uintptr_t next = group.YieldTo(w, entry);
      if (next == 0) return;
      if (next == entry) break;
      entry = next;
    }
    if (taken.fetch_add(1, std::memory_order_acq_rel) + 1 == kEntries) {
      all_taken.word().store(1, std::memory_order_release);
      all_taken.UnparkAll();
      group.Stop();
      return;
    }
    // acquire: pairs with the release above.
    while (all_taken.word().load(std::memory_order_acquire) == 0) {
      all_taken.ParkWhile(0, MonotonicDeadline::None());
    }
  }
  bool Stopping() const { return group.Stopping(); }

  // FiberWorker::Run: IdlePath::FindRunnable itself where the group runs it, else its
  // order below: take from the queues, or search and sleep.
  void RunWorker(std::size_t w) {
    if constexpr (RunsIdlePath<Group>::value) {
      while (!Stopping()) {
        if (const std::uintptr_t entry = group.FindRunnable(w)) Ran(w, entry);
      }
    } else {
      while (!Stopping()) {
        if (const std::uintptr_t entry = group.TakeOwn(w)) {  // 2. own queues
          Ran(w, entry);
          continue;
        }
        if (const std::uintptr_t entry = SearchAndSleep(w)) Ran(w, entry);
      }
    }
  }

  // IdlePath::SearchAndSleep's notifier calls, in its order; the entry it took, or 0.
  std::uintptr_t SearchAndSleep(std::size_t w) {
    bool searching = notifier().StartSearching(w);  // I2
    for (;;) {
      std::uintptr_t entry = Search(w, searching);                  // I3
      entry = notifier().StopSearching(w, searching, entry);  // I4
      if (entry != 0) return entry;
      notifier().Announce(w);  // W1, W2
      entry = group.LookInGroup(w);  // W3
      if (entry != 0) {
        notifier().Cancel(w, /*found=*/true);
        return entry;
      }
      if (Stopping()) {  // the plan when stopping: poll, i.e. go round again
        notifier().Cancel(w, /*found=*/false);
        return 0;
      }
      notifier().slot(w).Wait();  // W4
      const bool claimed = notifier().EndSleep(w);
      if (Stopping()) {
        notifier().StopSearching(w, claimed, 0);
        return 0;
      }
      if (!claimed) return 0;  // a wake-up banked earlier: start over
      searching = true;            // a producer's wake-up: search on its behalf
    }
  }

  // IdlePath::Search: rounds while searching and the notifier lets us; one otherwise.
  std::uintptr_t Search(std::size_t w, bool searching) {
    for (int round = 0;; ++round) {
      if (const std::uintptr_t entry = group.LookInGroup(w)) return entry;
      if (Stopping()) return 0;
      if (searching && !notifier().KeepSearching(w)) return 0;
      if (!searching || round + 1 == kSearchRounds) return 0;
    }
  }
};

// The idle-path model over a notifier and queues of its own (NotifierGroup).
template <class Notifier, std::size_t kWorkers, std::size_t kProducers, int kPushes,
          class Queues = ModelQueues, int kYields = 0>
using IdleModel = GroupIdleModel<NotifierGroup<Notifier, Queues, kWorkers>, kWorkers,
                                 kProducers, kPushes, kYields>;

// Relacy's operator new serves what a model run allocates from its own heap and
// reports what outlives the run. The notifier's wake-up counter (a ThreadCounter)
// allocates this thread's row of cells and grows the registry's slot lists once per
// process, on first use: that happens here, outside the run, and the runs reuse them.
// A failed run abandons its notifiers with their counters registered, and Relacy then
// replays it for its trace: so room for a few dozen counters is made here, or the
// replay's growing of the lists would free, inside the run, memory allocated outside it.
inline void WarmUpCountersOutsideTheModel() {
  std::vector<std::unique_ptr<ThreadCounter>> counters;
  for (int i = 0; i < 64; ++i) {
    counters.push_back(std::make_unique<ThreadCounter>());
    counters.back()->Add(1);
  }
}

// ExpectModelHolds (model_testing.h) for a model that runs a notifier: its counters
// warmed up first.
template <class Model>
void ExpectIdleModelHolds(rl::iteration_t iterations) {
  WarmUpCountersOutsideTheModel();
  ExpectModelHolds<Model>(iterations);
}

}  // namespace spindle::internal::testing

#endif  // SPINDLE_RUNTIME_INTERNAL_IDLE_NOTIFIER_MODEL_H_
