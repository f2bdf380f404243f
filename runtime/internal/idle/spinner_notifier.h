// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_IDLE_SPINNER_NOTIFIER_H_
#define SPINDLE_RUNTIME_INTERNAL_IDLE_SPINNER_NOTIFIER_H_

#include <cstddef>
#include <cstdint>

#include "fiber/internal/atomic.h"
#include "runtime/internal/base/futex.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/seams/scheduling_test_points.h"

namespace spindle::internal {

// v1's own wake-up protocol (P1-P4, S1-S3, W1-W4 at the top of spinner_notifier.cc): at most
// two spinning workers, a producer that hands its fiber to a spinner or wakes the
// lowest-numbered sleeper, and a spinner that recruits the next sleeper. It runs on the
// same idle path as the others (idle_path.cc): "searching" here means spinning.
// Thread-safety as IdleNotifier says.
class SpinnerNotifier final : public IdleNotifier {
 public:
  // `queues`: the strategy this notifier serves; `workers`: the group's size.
  SpinnerNotifier(NotifiedQueues& queues, std::size_t workers);

  void Notify() override;                 // P1-P4
  void NotifyMany(std::size_t n) override;  // P1, then a batch's claims and wake-ups
  bool WakeOneSleeper() override;          // P3 alone
  // T1 (strategy_v1.cc): v1 wakes a sleeper for a victim whether or not ours spin (its
  // spinners leave without a last look at the victims), so "searching" is not an answer.
  ThiefState StateForVictim() const override {
    // relaxed: a hint; the fetch_and in P3 decides.
    return sleeping_workers_.load(std::memory_order_relaxed) != 0 ? ThiefState::kSleeping
                                                                    : ThiefState::kBusy;
  }
  bool WakeThief() override { return WakeUpOneSleepingWorker(); }  // P3 alone

  bool StartSearching(std::size_t w) override;  // S1
  // S2; false once a producer claimed w. A woken worker whose look found nothing joins
  // the spinners here (S1).
  bool KeepSearching(std::size_t w) override;
  std::uintptr_t StopSearching(std::size_t w, bool searching,
                               std::uintptr_t entry) override;  // S3
  void Announce(std::size_t w) override;                        // W1, W2
  void Cancel(std::size_t w, bool found) override;              // W3
  bool EndSleep(std::size_t w) override;                        // after W4

  // Bit i set: worker i spins (or is marked sleeping) right now; relaxed snapshots.
  std::uint64_t spinning_workers() const;
  std::uint64_t sleeping_workers() const;
  std::uint64_t SleepingMask() const override { return sleeping_workers(); }

 private:
  // What worker w's idle path is doing, as this protocol sees it; w's thread only.
  enum class Mode : unsigned char {
    kIdle,
    kSpinning,  // its bit is in spinning_workers_ (S1 to S3)
    kWoken,     // a producer cleared its sleeping bit and woke it: it owes a poll
  };

  // S1: joins the spinner set if fewer than two spin (mode kSpinning); false if not.
  bool TryJoinSpinners(std::size_t w);
  // After taking a fiber on a wake-up path: wakes one more worker if fibers are still
  // queued ("more work" at the top of spinner_notifier.cc).
  void WakeAnotherIfQueued();
  bool WakeUpOneSpinningWorker();
  bool WakeUpOneSleepingWorker();
  void WakeUpWorkers(std::size_t n);

  NotifiedQueues& queues_;
  Mode mode_[kMaxWorkersPerGroup] = {};
  // Bit i set: worker i spins (or sleeps). Unused high bits stay 0.
  alignas(64) Atomic<std::uint64_t> spinning_workers_{0};
  alignas(64) Atomic<std::uint64_t> sleeping_workers_{0};
  // A spinner that found work sets this to ask the other spinner to recruit a sleeper
  // (so the producer never pays for that wake-up).
  alignas(64) Atomic<bool> pending_spinner_wakeup_{false};
};

// The producer's side (P1-P4) is defined here, inline: it runs after every push, and
// out of line StrategyV1::Enqueue would pay a call for it on every yield.

inline void SpinnerNotifier::Notify() {
  SchedulerTestPointReached(SchedulerTestPoint::kBeforeWakeUp, kNoWorkerIndex);
  StoreLoadFence();  // P1: pairs with W2 (Announce) and the spinner's CAS (S1).
  if (WakeUpOneSpinningWorker()) return;  // P2
  if (WakeUpOneSleepingWorker()) return;  // P3
  if (queues_.has_thieves()) queues_.WakeUpThief();  // P4: all busy
}

inline bool SpinnerNotifier::WakeUpOneSpinningWorker() {
  // relaxed: ordered after the push by the caller's fence P1.
  std::uint64_t spinning = spinning_workers_.load(std::memory_order_relaxed);
  while (spinning != 0) {
    const std::uint64_t bit = LowestBit(spinning);
    // release: the claimed spinner's acquire in S3 then sees our push even where P1 is
    // not a fence (the TSan build); on x86 any RMW is a full barrier anyway.
    if (spinning_workers_.fetch_and(~bit, std::memory_order_release) & bit) return true;
    spinning = spinning_workers_.load(std::memory_order_relaxed);
  }
  return false;
}

inline bool SpinnerNotifier::WakeUpOneSleepingWorker() {
  // relaxed: ordered after the push by the caller's fence P1.
  std::uint64_t sleeping = sleeping_workers_.load(std::memory_order_relaxed);
  while (sleeping != 0) {
    const std::uint64_t bit = LowestBit(sleeping);
    // release: the WaitSlot's release/acquire carries the ordering to a sleeper; this
    // covers a worker that clears its own bit without sleeping (W3, the poll plan, a
    // time-out) and acquires it there.
    if (sleeping_workers_.fetch_and(~bit, std::memory_order_release) & bit) {
      Wake(BitIndex(bit));
      return true;
    }
    sleeping = sleeping_workers_.load(std::memory_order_relaxed);
  }
  return false;
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_IDLE_SPINNER_NOTIFIER_H_
