// Copyright 2026 The Spindle Authors.
//
// Strategy v1's wake-up protocol (strategy_v1.cc is its storage): at most two spinning
// workers per group, lowest-numbered workers first. The design is flare's (and
// tRPC-Cpp's v1); see ../shared/reference/anchors_design.md §3.2. This is our own
// implementation.
//
// Shared state: `spinning_workers_` and `sleeping_workers_`, 64-bit masks (bit i =
// worker i), `pending_spinner_wakeup_`, and one counted WaitSlot per worker.
//
// The protocol is SpinnerNotifier's (strategy_v1.h); the idle path that calls its idle
// side is the same for every strategy (idle_path.cc), where "searching" is spinning.
//
// Producer, after pushing a fiber (Enqueue: push + SpinnerNotifier::Notify):
//   P1. seq_cst fence (pairs with W2's fence; see "no lost wake-up").
//   P2. Claim the lowest spinning worker: clear its bit with fetch_and. Whoever clears a
//       spinner's bit owns that spinner's next poll: the spinner will take a fiber. No
//       system call. Done.
//   P3. Otherwise claim the lowest sleeping worker the same way and Wake() its slot.
//   P4. If nobody spins or sleeps, every worker is busy and will pop the fiber when it
//       finishes its current one.
//
// Worker, when its first look found the queue empty (idle_path.cc):
//   S1. If fewer than two bits are set in `spinning_workers_`, set ours (CAS) and poll
//       the queue until `spin_time` passes or a producer clears our bit (P2).
//   S2. A spinner that sees `pending_spinner_wakeup_` takes it and wakes one sleeper
//       (the spinner pays that system call, not the producer).
//   S3. Leaving: clear our bit with fetch_and and keep its old value. If the bit was
//       already clear, a producer claimed us (P2, or a batch): we owe it a poll. Without
//       a fiber we poll the queue once more. With one (maybe popped before the claim
//       landed) we cannot take a second: if the queue still holds fibers, we pass the
//       claim on with P1-P4 (Notify; "more work" below).
//       If we got a fiber and fewer than two workers remain spinning, set
//       `pending_spinner_wakeup_`: under load a new spinner should be recruited before
//       the next push arrives.
//   W1. Set our bit in `sleeping_workers_` (seq_cst RMW).
//   W2. seq_cst fence.
//   W3. Re-check the queue. If it has a fiber: clear our sleeping bit, and if the queue
//       still holds fibers, wake another worker ("more work" below): a producer that
//       already cleared our bit (P3) spent its Wake() on us, and its fiber may be among
//       them (the banked count makes our next Wait() return early: harmless).
//       Otherwise, if the group is stopping or our worker has a victim with fibers to
//       steal that it may poll (T2 of strategy_v1.cc), clear our bit and return without
//       sleeping (with such a victim and no leave to poll: sleep for at most 1 ms).
//   W4. Otherwise Wait() on our slot. Woken by a producer (our bit was cleared for us),
//       we look once more (the poll its wake-up paid for), and if we got a fiber and
//       the queue still holds fibers, wake another worker ("more work"); if the look
//       found nothing, we spin (S1-S3) if fewer than two do, else sleep again. Woken
//       without a claim (a time limit, a wake-up banked earlier), start over from the
//       top.
//
// No lost wake-up. The pair (push; P1; read masks) against (W1; W2; read queue) is
// the store-buffering (Dekker) pattern with a seq_cst fence on each side: at least one
// side sees the other's store. Either the producer sees our sleeping bit and wakes us,
// or we see its fiber and do not sleep. The WaitSlot counts wake-ups, so a Wake() that
// lands between W3 and W4 makes W4 return at once. A spinner claimed by a producer
// (P2) either polls again before it stops (S1, S3), and the fiber was pushed before the
// claim, so it takes that fiber or another worker already did; or it holds a fiber
// already and passes the claim on (S3) while fibers are still queued, which is P1-P4
// again for the same fiber.
//
// The wake-up that is lost if S3 does not pass claims on (scheduling_group_test's
// ClaimOfASpinnerHoldingAFiberIsPassedOn forces it). Two workers A and B, a producer on
// a thread:
//   1. A and B spin (S1).
//   2. The producer pushes fiber N and claims A (P2: A's bit cleared).
//   3. B polls first and pops N. B's spinning bit is still set.
//   4. A polls (the poll its claim is owed), finds the queue empty, leaves, and sleeps
//      (W1-W4): correct, N is taken.
//   5. The producer pushes fiber W and claims B (P2: B's bit cleared), the only spinner.
//      It does not look at the sleeping mask: a claimed spinner is supposed to poll.
//   6. B leaves the spin loop with N; its fetch_and found its bit clear, but without
//      the hand-over it polls again only when it holds no fiber. B runs N.
//   7. W waits in the queue while A sleeps, until B finishes N. If N waits for W (the
//      test's notifier spins until the waiter publishes itself), that is forever.
// S3 passes the claim on in step 6: B sees W queued and runs P1-P3 for it, which finds
// A's sleeping bit (A set it in 4 before the claim in 5 was made, or A's W3 re-check
// sees W) and wakes A. Whoever clears a bit owns a poll, and every owned poll happens
// or is handed on while its fiber may still be queued.
//
// More work (Go's rule: a woken M that finds work and sees more wakes another). A poll
// can come back empty while fibers are queued: a producer preempted between claiming
// its queue position and publishing it hides every later position (see the progress
// caveat in run_queue.h), so the poll a claim or a Wake() paid for finds nothing, and
// the worker goes back to sleep. The interleaving (workers X and Y asleep, X lower):
//   1. Producer A claims position 5 and is preempted before publishing it.
//   2. Producer B pushes F6 at position 6 and wakes X (P3).
//   3. X polls: position 5 is unpublished, so the queue looks empty. X spins, finds
//      nothing, and sleeps again (W1-W4; W3's poll is empty for the same reason).
//   4. A publishes F5 and wakes X, the lowest sleeper, again.
//   5. X runs F5. F6 waits while Y sleeps, until X is done with F5: forever if F5
//      waits for F6 (modelled with a stalled producer: StalledPushModelQueues in
//      notifier_model.h, spinner_notifier_model_test.cc's ...OneStalled).
// So a worker that takes a fiber on a wake-up path (S3 when claimed, W3, after W4) and
// still sees fibers queued wakes one more worker (P1-P4). In step 5 X wakes Y, which
// runs F6. The cost is two relaxed loads on those paths, and a wake-up only while a
// backlog exists, which the woken worker then serves. Every claim or Wake() is thus
// either a poll that takes a fiber, a poll that finds the queue truly empty (whoever
// emptied it ran the fibers), or a hidden entry whose producer's own P1-P3, once it
// publishes, starts a chain that drains what the stall hid.
//
// Batch start: all spinners are claimed at once (exchange 0), then up to n - spinners
// sleepers, the lowest first, with one CAS over the sleeping mask (64-bit shifts; the
// anchors' 1 << i and ffsll off-by-one are not repeated: LowestSetBits()).
//
// Rejected alternatives. A mutex + condition variable around the queue serialises every
// producer and consumer. Waking a worker on every push costs a system call per fiber.
// Spinning without a cap burns a core per idle worker. A per-worker queue (strategy v2)
// needs stealing to balance; it comes as a separate strategy.

#include "runtime/internal/idle/spinner_notifier.h"

#include "runtime/internal/base/futex.h"
#include "runtime/internal/seams/scheduling_test_points.h"

namespace spindle::internal {

SpinnerNotifier::SpinnerNotifier(NotifiedQueues& queues, std::size_t workers)
    : IdleNotifier(workers), queues_(queues) {}

void SpinnerNotifier::NotifyMany(std::size_t n) {
  SchedulerTestPointReached(SchedulerTestPoint::kBeforeWakeUp, kNoWorkerIndex);
  StoreLoadFence();  // P1, as in Notify().
  WakeUpWorkers(n);
}

bool SpinnerNotifier::WakeOneSleeper() { return WakeUpOneSleepingWorker(); }

bool SpinnerNotifier::StartSearching(std::size_t w) { return TryJoinSpinners(w); }

bool SpinnerNotifier::TryJoinSpinners(std::size_t w) {
  // S1.
  const std::uint64_t self = std::uint64_t{1} << w;
  // relaxed: a hint; the CAS below decides.
  std::uint64_t spinning = spinning_workers_.load(std::memory_order_relaxed);
  do {
    if (CountBits(spinning) >= 2) return false;
    // seq_cst CAS. No fence follows it, so a poll may still miss a push whose producer
    // read the mask before our bit: harmless, since that producer claimed or woke
    // someone else (P2-P4), and a producer that did claim us is seen by S3's acquire.
  } while (!spinning_workers_.compare_exchange_weak(spinning, spinning | self,
                                                    std::memory_order_seq_cst,
                                                    std::memory_order_relaxed));
  mode_[w] = Mode::kSpinning;
  SchedulerTestPointReached(SchedulerTestPoint::kSpinning, w);
  return true;
}

bool SpinnerNotifier::KeepSearching(std::size_t w) {
  // A woken worker's look (the poll its wake-up paid for) found nothing: another
  // worker took the fiber, or a stalled push hides it. Spin like any idle worker, if
  // fewer than two do (S1), rather than sleep at once: the next push then claims us
  // without a system call (sleeping at once costs a spawn loop a futex wake per fiber).
  if (mode_[w] == Mode::kWoken) return TryJoinSpinners(w);
  if (mode_[w] != Mode::kSpinning) return false;
  // S2. relaxed load + exchange: a hand-over flag between spinners; the woken worker
  // re-checks the queue itself, so no ordering is carried by it.
  if (pending_spinner_wakeup_.load(std::memory_order_relaxed) &&
      pending_spinner_wakeup_.exchange(false, std::memory_order_relaxed)) {
    WakeUpOneSleepingWorker();
  }
  // relaxed: a producer cleared our bit (P2); S3 polls once more either way.
  return (spinning_workers_.load(std::memory_order_relaxed) & (std::uint64_t{1} << w)) != 0;
}

std::uintptr_t SpinnerNotifier::StopSearching(std::size_t w, bool searching,
                                              std::uintptr_t entry) {
  const Mode mode = mode_[w];
  mode_[w] = Mode::kIdle;
  if (!searching) return entry;
  if (mode == Mode::kWoken) {
    // After W4: a producer's wake-up was spent on us; if fibers are still queued, pass
    // it on (W4's "more work").
    if (entry != 0) WakeAnotherIfQueued();
    return entry;
  }
  // S3.
  if (entry != 0) SchedulerTestPointReached(SchedulerTestPoint::kSpinnerTookFiber, w);
  const std::uint64_t self = std::uint64_t{1} << w;
  // acq_rel: leaving the spinner set; the acquire side orders the final poll below
  // after a producer's claim of our bit (its fence P1 precedes its RMW).
  const bool claimed =
      (spinning_workers_.fetch_and(~self, std::memory_order_acq_rel) & self) == 0;
  if (entry == 0) entry = queues_.TakeNext(w);  // the poll a claim is owed
  // A claimed spinner holding a fiber may owe a poll it cannot make (the claim landed
  // after its pop): if fibers are still queued, pass the claim on.
  if (claimed && entry != 0) WakeAnotherIfQueued();
  if (entry != 0 && CountBits(spinning_workers_.load(std::memory_order_relaxed)) < 2) {
    // relaxed: see S2.
    pending_spinner_wakeup_.store(true, std::memory_order_relaxed);
  }
  return entry;
}

void SpinnerNotifier::Announce(std::size_t w) {
  // W1. seq_cst RMW, then W2: pairs with P1 in the producer.
  sleeping_workers_.fetch_or(std::uint64_t{1} << w, std::memory_order_seq_cst);
  StoreLoadFence();
}

void SpinnerNotifier::Cancel(std::size_t w, bool found) {
  // acq_rel: whoever clears the bit first owns the wake-up. If a producer did (P3), the
  // acquire side makes its push visible: with a fiber in hand, the check below passes
  // its wake-up on if its fiber is still queued; with a poll plan, its Wake() stays
  // banked in our slot (a later Wait() returns early) and the idle path looks at our
  // own queue before anything else.
  sleeping_workers_.fetch_and(~(std::uint64_t{1} << w), std::memory_order_acq_rel);
  if (found) WakeAnotherIfQueued();
}

bool SpinnerNotifier::EndSleep(std::size_t w) {
  // A producer (or Stop) cleared our bit before waking us; clear it in case the wake-up
  // was one banked earlier, or the time limit expired. acq_rel: as in Cancel(); a
  // producer's claim that lands after a time-out makes its push visible to our poll.
  const std::uint64_t self = std::uint64_t{1} << w;
  const bool claimed =
      (sleeping_workers_.fetch_and(~self, std::memory_order_acq_rel) & self) == 0;
  if (claimed) mode_[w] = Mode::kWoken;
  return claimed;
}

void SpinnerNotifier::WakeAnotherIfQueued() {
  // A relaxed snapshot. Every caller has taken a fiber after an acquire that made the
  // pushes it must account for visible (a WaitSlot wake-up, or a claim RMW after the
  // producer's fence P1), so their positions are in the queue's tail as we read it.
  if (!queues_.UnsafeEmpty()) Notify();
}

void SpinnerNotifier::WakeUpWorkers(std::size_t n) {
  // Claim every spinner: each will take one of the new fibers, or pass its claim on
  // (S3) if it already holds one. relaxed load first, as in WakeUpOneSpinningWorker():
  // ordered after the push by P1; it spares the line a write when nobody spins (a busy
  // v1 worker moves its stage here at every switch). release exchange: as there.
  const std::uint64_t spinners =
      spinning_workers_.load(std::memory_order_relaxed) != 0
          ? spinning_workers_.exchange(0, std::memory_order_release)
          : 0;
  const std::size_t claimed = static_cast<std::size_t>(CountBits(spinners));
  if (claimed >= n) return;
  std::uint64_t sleeping = sleeping_workers_.load(std::memory_order_relaxed);
  std::uint64_t chosen = 0;
  do {
    chosen = LowestSetBits(sleeping, n - claimed);
    if (chosen == 0) break;
    // release: as in WakeUpOneSleepingWorker().
  } while (!sleeping_workers_.compare_exchange_weak(
      sleeping, sleeping & ~chosen, std::memory_order_release, std::memory_order_relaxed));
  const std::size_t woken = static_cast<std::size_t>(CountBits(chosen));
  while (chosen != 0) {
    const std::uint64_t bit = LowestBit(chosen);
    chosen &= ~bit;
    Wake(BitIndex(bit));
  }
  // P4 for the rest of the batch: every worker of ours is taken; recruit a thief.
  if (claimed + woken < n) queues_.WakeUpThief();
}

// relaxed: snapshots for tests and debugging.
std::uint64_t SpinnerNotifier::spinning_workers() const {
  return spinning_workers_.load(std::memory_order_relaxed);
}
std::uint64_t SpinnerNotifier::sleeping_workers() const {
  return sleeping_workers_.load(std::memory_order_relaxed);
}

}  // namespace spindle::internal
