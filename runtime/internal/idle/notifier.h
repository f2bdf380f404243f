// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_NOTIFIER_H_
#define SPINDLE_RUNTIME_INTERNAL_NOTIFIER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fiber/internal/atomic.h"
#include "runtime/internal/base/futex.h"
#include "runtime/internal/idle/wait_slot.h"
#include "runtime/internal/base/metrics.h"
#include "runtime/internal/seams/scheduling_test_points.h"

namespace spindle::internal {

inline constexpr std::size_t kMaxWorkersPerGroup = 64;  // one bit each in a 64-bit mask

// The sleepers an IdleNotifier holds in place. A model (SPINDLE_MODEL_CHECK) runs at most
// four workers a group and constructs its notifier afresh at every iteration, where each
// slot's atomics are Relacy's and carry their history: 64 of them were two fifths of a
// model's time.
#ifdef SPINDLE_MODEL_CHECK
inline constexpr std::size_t kNotifierSlots = 4;
#else
inline constexpr std::size_t kNotifierSlots = kMaxWorkersPerGroup;
#endif

// The notifiers' worker masks: bit i is worker i.
inline std::uint64_t LowestBit(std::uint64_t mask) { return mask & (~mask + 1); }
inline std::size_t BitIndex(std::uint64_t bit) {
  return static_cast<std::size_t>(__builtin_ctzll(bit));
}
inline int CountBits(std::uint64_t mask) { return __builtin_popcountll(mask); }
// The `k` lowest set bits of `mask` (all of them if it has fewer).
inline std::uint64_t LowestSetBits(std::uint64_t mask, std::size_t k) {
  std::uint64_t result = 0;
  for (std::size_t i = 0; i < k && mask != 0; ++i) {
    const std::uint64_t bit = LowestBit(mask);
    result |= bit;
    mask &= ~bit;
  }
  return result;
}

// What a notifier asks of the queues it guards (its SchedulingStrategy).
class NotifiedQueues {
 public:
  // Takes the next entry for `worker` without blocking; 0 if none (v1's spinner polls
  // once more through it when a producer claimed it: S3 in spinner_notifier.cc).
  virtual std::uintptr_t TakeNext(std::size_t worker) = 0;
  // Whether nothing is queued: a relaxed snapshot, read after the caller's fence.
  virtual bool UnsafeEmpty() const = 0;
  // Every worker of the group is busy and a backlog may wait: wake a sleeping worker of
  // a group that may steal from this one (T1 at the top of strategy_v1.cc).
  virtual void WakeUpThief() = 0;
  // Whether WakeUpThief() can do anything: some other group may steal from this one.
  // Fixed before any worker starts, so a plain read: a producer of a group that has no
  // thieves (one group, or stealing off) skips the call on every push.
  bool has_thieves() const { return has_thieves_; }
  // Whether a group this one may steal from may have something to steal: a relaxed
  // snapshot, read after the caller's fence (the last searcher out, I4 in notifier.cc).
  // Default: no victims (one group, or stealing off).
  virtual bool VictimsMayHaveStealable() const { return false; }

 protected:
  ~NotifiedQueues() = default;
  bool has_thieves_ = false;  // set with the thieves (SchedulingStrategy::SetThieves)
};

// How one group's idle workers search, announce that they sleep, sleep and are woken:
// the protocol between producers (after a push) and the idle path (idle_path.cc, which
// calls the idle side in a fixed order, the same for every strategy):
//
//   searching = StartSearching(w)            I2: become a searcher (or not)
//   ... search rounds while KeepSearching(w) ...
//   entry = StopSearching(w, searching, entry)   I4
//   Announce(w)                              W1, W2
//   ... the re-check of the group's queues ...   W3
//   Cancel(w, found)                         W3 found work, or a poll plan: withdraw
//   ... sleep on slot(w) ...                 W4
//   claimed = EndSleep(w)                    withdraw; claimed: search on a waker's behalf
//
// Two protocols implement it: SearchNotifier below (v2 and relaxed), and v1's
// SpinnerNotifier (spinner_notifier.cc), its two spinners and their hand-off.
//
// Thread-safety: the idle side is called by worker w's thread only; Notify*,
// WakeOneSleeper and WakeAll from any thread. Owned by its strategy, which it outlives
// never; the slots live in the object (allocated with the strategy on its node).
class IdleNotifier {
 public:
  explicit IdleNotifier(std::size_t workers);  // the group's size
  IdleNotifier(const IdleNotifier&) = delete;
  IdleNotifier& operator=(const IdleNotifier&) = delete;

  // ---- Producer side (any thread), after a push of one entry, or of `n` at once.
  virtual void Notify() = 0;
  virtual void NotifyMany(std::size_t n) = 0;
  // Wakes one sleeping worker so that it searches (a vacant poller); false if none
  // sleeps.
  virtual bool WakeOneSleeper() = 0;

  // ---- Thief side (any thread): a victim group whose workers are all busy looks for a
  // thief here (T1 at the top of strategy_v1.cc), after its push and fence. A busy victim
  // asks on every push, so StateForVictim() only reads (relaxed: a hint; what a wrong hint
  // costs is at T1), and WakeThief() writes only when it may wake someone.
  enum class ThiefState {
    kBusy,       // nobody of ours sleeps or searches: ask the next thief group
    kSearching,  // one of ours searches, and will look at the victim (T1): done
    kSleeping,   // one of ours sleeps: WakeThief() may wake it
  };
  virtual ThiefState StateForVictim() const = 0;
  // Wakes one sleeping worker to search (and so to poll its victims), as a producer's
  // wake-up would (v2/relaxed: not while one of ours searches); false if it woke nobody.
  virtual bool WakeThief() = 0;

  // ---- Idle side (worker `w`'s thread), in the order above.
  virtual bool StartSearching(std::size_t w) = 0;
  virtual bool KeepSearching(std::size_t w) = 0;
  virtual std::uintptr_t StopSearching(std::size_t w, bool searching,
                                       std::uintptr_t entry) = 0;
  virtual void Announce(std::size_t w) = 0;
  virtual void Cancel(std::size_t w, bool found) = 0;
  virtual bool EndSleep(std::size_t w) = 0;

  // Where worker w sleeps (W4), and its sleep statistics: CountSleep() at each W4,
  // `spurious` when the last wake-up found no fiber (relaxed snapshots for metrics).
  WaitSlot& slot(std::size_t w) { return sleepers_[w].slot; }
  void CountSleep(std::size_t w, bool spurious) {
    sleepers_[w].sleeps.Add(1);
    if (spurious) sleepers_[w].spurious.Add(1);
  }
  std::uint64_t sleeps(std::size_t w) const { return sleepers_[w].sleeps.Read(); }
  std::uint64_t spurious_wakeups(std::size_t w) const { return sleepers_[w].spurious.Read(); }
  std::uint64_t wakeups() const { return wakeups_.Read(); }  // futex wake-ups made
  // Bit w set: worker w announced that it sleeps (a relaxed snapshot, for tests and
  // debugging: never for a wake-up decision).
  virtual std::uint64_t SleepingMask() const = 0;
  // Stopping: every present and future sleep returns at once.
  void WakeAll() {
    for (std::size_t w = 0; w < workers_; ++w) sleepers_[w].slot.WakeForever();
  }

 protected:
  ~IdleNotifier() = default;
  void Wake(std::size_t w) {
    wakeups_.Add(1);  // per-thread cells: no shared read-modify-write
    sleepers_[w].slot.Wake();
  }

 private:
  struct alignas(64) Sleeper {
    WaitSlot slot;
    SingleWriterCounter sleeps;    // worker w's thread only
    SingleWriterCounter spurious;
  };
  const std::size_t workers_;
  Sleeper sleepers_[kNotifierSlots];
  ThreadCounter wakeups_;
};

// T1 (strategy_v1.cc): a victim group whose workers are all busy, after its push and
// fence, looks for a thief among the notifiers of its thief groups, `n` of them, from
// `start` on. A thief group with a searcher ends the look (the searcher tries the
// victim within its rounds; one that found other work looks at the victim as the last
// one out, I4 in notifier.cc, one that found none in its re-check before it sleeps,
// W3: the victim's push came before its fence and their looks after theirs, so one of
// them sees it). A thief group whose workers are all busy is passed over. The first
// with a sleeper is woken if `has_backlog()` (asked at most once, and only then: it
// reads the victim's own queues). Returns the index of the thief group woken, or `n`.
// Nothing is written unless a sleeper is woken: a busy victim calls this on every push.
template <class HasBacklog>
std::size_t WakeOneThief(IdleNotifier* const* thieves, std::size_t n, std::size_t start,
                         HasBacklog has_backlog) {
  bool backlog_seen = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t t = (start + i) % n;
    switch (thieves[t]->StateForVictim()) {
      case IdleNotifier::ThiefState::kSearching:
        return n;
      case IdleNotifier::ThiefState::kBusy:
        continue;
      case IdleNotifier::ThiefState::kSleeping:
        break;
    }
    if (!backlog_seen && !has_backlog()) return n;  // a worker of ours took it already
    backlog_seen = true;
    if (thieves[t]->WakeThief()) return t;
  }
  return n;
}

// The searcher/sleeper protocol of strategies v2 and relaxed (Go's nmspinning and
// wakep(), with the searcher count handed to the worker it wakes): producers wake
// nobody while any worker searches, and at most one sleeper at a time otherwise. The
// steps and why no wake-up is lost are at the top of notifier.cc.
class SearchNotifier final : public IdleNotifier {
 public:
  // `queues`: the strategy this notifier serves; `workers`: the group's size.
  SearchNotifier(NotifiedQueues& queues, std::size_t workers);

  // N1-N3 inline (they run after every push: out of line, every yield would pay the
  // call); N4-N5 out of line.
  void Notify() override {
    SchedulerTestPointReached(SchedulerTestPoint::kBeforeWakeUp, kNoWorkerIndex);
    StoreLoadFence();  // N1: pairs with W2 and with I4's fence.
    // relaxed loads: ordered after the push by N1.
    if (searching_.load(std::memory_order_relaxed) != 0) return;  // N2
    if (sleeping_.load(std::memory_order_relaxed) == 0) {         // N3
      if (queues_.has_thieves()) queues_.WakeUpThief();
      return;
    }
    WakeSleeperAsSearcher(Waker::kProducer);  // N4, N5
  }
  void NotifyMany(std::size_t) override { Notify(); }
  bool WakeOneSleeper() override;
  ThiefState StateForVictim() const override {
    // relaxed: hints (T1); the searching count first, as N2 reads it.
    if (searching_.load(std::memory_order_relaxed) != 0) return ThiefState::kSearching;
    if (sleeping_.load(std::memory_order_relaxed) != 0) return ThiefState::kSleeping;
    return ThiefState::kBusy;
  }
  bool WakeThief() override;

  bool StartSearching(std::size_t w) override;
  bool KeepSearching(std::size_t) override { return true; }
  std::uintptr_t StopSearching(std::size_t w, bool searching, std::uintptr_t entry) override;
  void Announce(std::size_t w) override;
  void Cancel(std::size_t w, bool found) override;
  bool EndSleep(std::size_t w) override;

  // Bit i set: worker i announced that it sleeps (a relaxed snapshot: a hint for
  // placing work, never for a wake-up decision).
  std::uint64_t sleeping_hint() const { return sleeping_.load(std::memory_order_relaxed); }
  std::uint64_t SleepingMask() const override { return sleeping_hint(); }

 private:
  // Who asks WakeSleeperAsSearcher() for a wake-up: a producer of ours (N4-N5), a
  // victim group's producer (WakeThief), or a vacant poller (WakeOneSleeper).
  enum class Waker { kProducer, kVictim, kPoller };
  // N4/N5: takes a searcher count (from 0 only, except for kPoller), gives it to the
  // lowest sleeper and wakes it; false if there was none (the count given back).
  bool WakeSleeperAsSearcher(Waker waker);
  // I4's give-back of a count (seq_cst RMW, fence); the last one out that found work
  // wakes another worker while anything is queued.
  void GiveBackCount(bool found);
  // Clears w's sleeping bit; true if a waker had cleared it (w then holds its count).
  bool ClearSleepingBit(std::size_t w);
  void WakeAnotherIfQueued();
  // As WakeAnotherIfQueued(), and with nothing queued here, a sleeper woken to search
  // if a victim may have something to steal (T1's hand-over: notifier.cc, I4 and W3).
  void WakeAnotherIfWorkWaits();

  NotifiedQueues& queues_;
  const std::size_t max_searching_;  // half the group, at least one
  // Workers searching for work, plus workers a waker chose and that have not yet run
  // (Go's nmspinning): while it is not 0, producers wake nobody.
  alignas(64) Atomic<std::size_t> searching_{0};
  // Bit i set: worker i announced that it sleeps (or is about to).
  alignas(64) Atomic<std::uint64_t> sleeping_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_NOTIFIER_H_
