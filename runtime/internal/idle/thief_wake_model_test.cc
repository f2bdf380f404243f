// Copyright 2026 The Spindle Authors.
//
// Models of T1 (strategy_v1.cc, WakeOneThief in notifier.h): a victim group whose
// workers are all busy hands its backlog to a thief group, whose workers search, sleep
// and are woken by the real notifier (notifier.cc and spinner_notifier.cc built against
// Relacy: :notifier_for_models).
//
// Two groups. The victim has one worker, busy for the whole run (a hog: it never
// takes anything), so its one entry can only be run by a thief. The thief group has two
// workers and a producer of its own, whose entry keeps the worker that runs it busy
// until the victim's entry is taken (as a parent fiber joins). The thief workers run
// the idle path's notifier calls in its order (as notifier_model.h's GroupIdleModel
// does), where a search round looks at their own queue and then at the victim's, and
// the re-check before sleeping (W3) looks at both: a victim that looks non-empty there
// is polled, not slept on (idle_path.cc's plan: a poll, or a sleep of at most 1 ms).
//
// The schedule that needs the last-searcher-out rule (I4 in notifier.cc): worker 1
// sleeps; worker 0 searches; the victim pushes and, seeing a searcher, wakes nobody;
// worker 0 finds the thief producer's entry first and runs it, busy until the victim's
// entry is taken. Unless worker 0, leaving as the last searcher, looks at the victim
// and wakes worker 1, both sleep forever: Relacy reports the deadlock. (Mutant: the
// victims' look removed from SearchNotifier::GiveBackCount: deadlock.)

#include <cstddef>
#include <cstdint>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/idle/notifier_model.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/idle/spinner_notifier.h"

namespace spindle::internal {
namespace {

using testing::ExpectIdleModelHolds;

// A group's queues as notifier_model.h's ModelQueues counts them (a push is a release
// RMW, a take an acquire CAS, emptiness a relaxed read), for a group that may have
// victims (VictimsMayHaveStealable) and thieves (WakeUpThief: T1 through the real
// WakeOneThief).
class CountingQueues final : public NotifiedQueues {
 public:
  std::uintptr_t TakeNext(std::size_t w) override { return count_.TakeNext(w); }
  bool UnsafeEmpty() const override { return count_.UnsafeEmpty(); }
  void WakeUpThief() override {
    WakeOneThief(&thief_, 1, 0, [this] { return !UnsafeEmpty(); });
  }
  bool VictimsMayHaveStealable() const override {
    return victim_ != nullptr && !victim_->UnsafeEmpty();
  }

  // Before the run: this group's thief group (its notifier), or its victim's queues.
  void SetThief(IdleNotifier* thief) {
    thief_ = thief;
    has_thieves_ = true;
  }
  void SetVictim(const CountingQueues* victim) { victim_ = victim; }

  void Push() { count_.Push(); }
  bool TryTake() { return count_.TryTake(); }

 private:
  testing::ModelQueues count_;
  IdleNotifier* thief_ = nullptr;
  const CountingQueues* victim_ = nullptr;
};

// Threads: 0 and 1 the thief group's workers, 2 the thief group's producer, 3 the
// victim's producer (a fiber on its busy worker).
template <class Notifier>
struct ThiefWakeModel : rl::test_suite<ThiefWakeModel<Notifier>, 4> {
  static constexpr std::size_t kThiefWorkers = 2;
  static constexpr int kSearchRounds = 2;
  static constexpr int kEntries = 2;  // one per producer

  CountingQueues victim_queues;
  // The victim's worker never idles, so its notifier sees it busy at every push.
  Notifier victim{victim_queues, 1};
  CountingQueues thief_queues;
  Notifier thief{thief_queues, kThiefWorkers};
  Atomic<bool> stopping{false};
  Atomic<int> taken{0};
  Atomic<bool> victims_entry_taken{false};
  Parker released;  // its word: 1 once the victim's entry is taken

  void before() {
    victim_queues.SetThief(&thief);
    thief_queues.SetVictim(&victim_queues);
  }

  void thread(unsigned index) {
    if (index < kThiefWorkers) {
      RunWorker(index);
    } else if (index == kThiefWorkers) {
      thief_queues.Push();
      thief.Notify();
    } else {
      victim_queues.Push();
      victim.Notify();  // N3 (v2/relaxed) or P4 (v1): every worker busy, so T1
    }
  }

  void after() {
    RL_ASSERT(taken.load(std::memory_order_relaxed) == kEntries);
    RL_ASSERT(victim_queues.UnsafeEmpty() && thief_queues.UnsafeEmpty());
  }

  bool Stopping() const { return stopping.load(std::memory_order_relaxed); }

  // An entry: 1 from the thief group's own queue, 2 from the victim's.
  std::uintptr_t LookInGroup() { return thief_queues.TryTake() ? 1 : 0; }
  std::uintptr_t LookEverywhere() {
    if (const std::uintptr_t entry = LookInGroup()) return entry;
    return victim_queues.TryTake() ? 2 : 0;
  }

  // The thief group's own entry keeps its worker busy until the victim's entry is taken;
  // the victim's entry releases it. The second entry taken stops the thief group.
  void Ran(std::uintptr_t entry) {
    if (entry == 2) {
      // release: pairs with the waiter's acquire below.
      released.word().store(1, std::memory_order_release);
      released.UnparkAll();
    }
    if (taken.fetch_add(1, std::memory_order_acq_rel) + 1 == kEntries) {
      stopping.store(true, std::memory_order_relaxed);  // ordered by WakeAll's RMWs
      thief.WakeAll();
      return;
    }
    if (entry == 1) {
      // acquire: pairs with the release above.
      while (released.word().load(std::memory_order_acquire) == 0) {
        released.ParkWhile(0, MonotonicDeadline::None());
      }
    }
  }

  void RunWorker(std::size_t w) {
    while (!Stopping()) {
      if (const std::uintptr_t entry = LookInGroup()) {  // 2. own queues
        Ran(entry);
        continue;
      }
      if (const std::uintptr_t entry = SearchAndSleep(w)) Ran(entry);
    }
  }

  // IdlePath::SearchAndSleep's order (notifier_model.h), with the victim looked at in
  // every search round (TryOtherGroups; the ratio only spaces the attempts) and in W3.
  std::uintptr_t SearchAndSleep(std::size_t w) {
    bool searching = thief.StartSearching(w);  // I2
    for (;;) {
      std::uintptr_t entry = Search(w, searching);          // I3
      entry = thief.StopSearching(w, searching, entry);  // I4
      if (entry != 0) return entry;
      thief.Announce(w);  // W1, W2
      entry = LookInGroup();  // W3: the group's queues
      if (entry != 0) {
        thief.Cancel(w, /*found=*/true);
        return entry;
      }
      // W3: the victims. Non-empty, or stopping: a poll plan (go round again).
      if (!victim_queues.UnsafeEmpty() || Stopping()) {
        thief.Cancel(w, /*found=*/false);
        return 0;
      }
      thief.slot(w).Wait();  // W4
      const bool claimed = thief.EndSleep(w);
      if (Stopping()) {
        thief.StopSearching(w, claimed, 0);
        return 0;
      }
      if (!claimed) return 0;  // a wake-up banked earlier: start over
      searching = true;
    }
  }

  std::uintptr_t Search(std::size_t w, bool searching) {
    for (int round = 0;; ++round) {
      if (const std::uintptr_t entry = LookEverywhere()) return entry;
      if (Stopping()) return 0;
      if (searching && !thief.KeepSearching(w)) return 0;
      if (!searching || round + 1 == kSearchRounds) return 0;
    }
  }
};

// v2's and relaxed's notifier: a victim wakes a thief only while none of the thief's
// workers searches; the last searcher out looks at the victims.
TEST(ThiefWakeModelTest, SearchNotifierHandsAVictimsBacklogToASleepingThief) {
  ExpectIdleModelHolds<ThiefWakeModel<SearchNotifier>>(500000);
}

// v1's notifier: a victim wakes a sleeping thief whether or not one spins.
TEST(ThiefWakeModelTest, SpinnerNotifierHandsAVictimsBacklogToASleepingThief) {
  ExpectIdleModelHolds<ThiefWakeModel<SpinnerNotifier>>(500000);
}

}  // namespace
}  // namespace spindle::internal
