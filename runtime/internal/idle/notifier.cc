// Copyright 2026 The Spindle Authors.
//
// The searcher/sleeper notifier of strategies v2 and relaxed, written once. Designs
// studied (../shared/reference/io_and_v2.md §1-2): Go's nmspinning, wakep() and
// resetspinning(), and Taskflow's two-phase notifier (announce, re-check, commit or
// cancel). Our own implementation.
//
// Shared state: `searching_` (workers searching for work, plus workers a waker chose
// and that have not yet run: the count is handed over with the wake-up) and `sleeping_`
// (bit i: worker i announced that it sleeps). Each worker sleeps on its own counted
// WaitSlot (a Wake() before the Wait() is kept).
//
// Producer, after every push (Notify):
//   N1. seq_cst fence (pairs with W2 and with I4's fence).
//   N2. searching_ != 0: return. Someone holds a count and gives it back through I4 (a
//       fence, then a look at the queues) or goes through W1-W3.
//   N3. sleeping_ == 0: nobody to wake. Every worker is busy or re-checks after its
//       W2, which is after our N1. If a backlog waits, wake a sleeping thief of
//       another group (v1's T1). Return.
//   N4. CAS searching_ 0 -> 1 (seq_cst); lost: return (as N2).
//   N5. Claim the lowest sleeping bit (fetch_and) and Wake() its slot: our count is now
//       that worker's, which searches when it wakes. No sleeper left (they cancelled or
//       were claimed meanwhile): give the count back (seq_cst RMW, fence) and look
//       again: producers that skipped at N2 because of our count pushed before they
//       read it, so what we read after our fence includes their fibers. Nobody sleeps:
//       as N3. Nothing queued: done (a later announcer re-checks after our fence).
//       Someone searches again: done (N2's case). Else back to N4 for that sleeper.
//
// Idle worker (the idle path, idle_path.cc, calls these in this order):
//   I2. StartSearching: searching_ + 1 (seq_cst CAS) if fewer than half the group (at
//       least one) search.
//   I3. (idle_path.cc) Search the group's queues and other groups; a searcher repeats
//       for up to the spin time.
//   I4. StopSearching: give the count back (seq_cst fetch_sub, then a fence). The last
//       searcher out that found work wakes another worker if anything is still queued
//       (Go's resetspinning): producers skipped their wake-ups while it searched; with
//       nothing queued here, if a victim group may have something to steal (T1 below).
//   W1. Announce: set our bit in sleeping_ (seq_cst RMW).  W2. seq_cst fence.
//   W3. (idle_path.cc) Re-check the group's queues, the stop flag, other groups.
//       Cancel(found): clear our bit; if a waker had cleared it first we hold its
//       count: give it back as in I4 (a poll plan, not a fiber: also wake another if
//       anything is queued, since we go to other sources first). Found, and nobody's
//       count: "more work", wake another if anything is still queued, or, as in I4, if
//       a victim may have something to steal (we skip our look at the victims).
//
// Victims' producers (T1 of strategy_v1.cc; WakeOneThief in notifier.h). A producer of
// another group whose workers are all busy (its N3) reads our searching_ and sleeping_
// (StateForVictim, relaxed, after its own N1) and nothing else of ours: a searcher of
// ours: done; a sleeper and no searcher: N4-N5 on our side (WakeThief, from 0 only);
// neither: the next thief group. Why skipping for a searcher strands nothing: the
// victim's (push; fence; read searching_ != 0) against the decrement that brings it to
// 0 (RMW; fence; look) is the pattern of N2 below, and every path after such a
// decrement looks at the victims before its worker commits to other work or sleeps: a
// searcher out with work (I4's second look), a worker that re-checks at W3 and finds
// work of ours (Cancel's "more work") or none (the victims in W3's plan: a poll, or a
// sleep of at most 1 ms), a producer whose count found no sleeper (N5: nobody of ours
// sleeps, so every worker is busy and goes through W3 before it sleeps). A busy victim
// asks on every push: the reads stay in its caches while our workers are all busy, and
// nothing is written to a shared line unless someone is woken (a per-push fetch_add on
// a shared cursor, or reads of our queues, would make every push of a saturated
// victim contend with its thieves).
//   W4. (idle_path.cc) Sleep on our slot. EndSleep: clear our bit; if a waker had
//       cleared it we hold its count and search (I3).
//
// No lost wake-up. Take a fiber F pushed by producer P, and a worker X that sleeps
// without running it.
//   - If P read searching_ != 0 (N2, N4), some holder of a count decrements it later
//     with a seq_cst RMW and a fence. P's (push; fence; read searching_) against the
//     decrement that brings it to 0 (RMW; fence; read the queues) is the store-buffering
//     pattern, so that decrementer sees F. It is a searcher that found work (I4: the
//     last one out wakes another while anything is queued), a searcher that found none
//     (it then runs W1-W3, whose re-check sees F), a producer giving back a count it
//     could not hand over (N5 goes round and wakes any sleeper), or a claimed worker
//     that cancelled at W3 (I4 again). (For a victim's push, "sees F" means "looks
//     at the victim": the paragraph on victims' producers above.)
//   - If P read sleeping_ == 0 (N3), X's W1 is after P's read in the fences' total
//     order, so X's W3 re-check, after its W2, sees F.
//   - If P claimed a sleeper Y, Y wakes (or cancels at W3 with a fiber) holding P's
//     count, and the two cases above apply to Y's decrement.
//   - The re-check must see every queue a push may have gone to: each strategy's
//     TakeNext and StealInGroup cover them (v2: own inbox, runnext, local queue, the
//     global queue, every sibling's; relaxed: a sweep of every list).
// DisableSleepRecheckForTesting() removes W3; the lost-wake-up hammer then fails.
//
// A separate token that a producer holds while its wake-up is in flight does the same
// as handing the count itself to the woken worker, with one shared line more and one
// hand-over more to reason about. A count given back without a second look at
// sleeping_ (N5's) can leave every worker asleep with a fiber queued.
//
// Rejected: waking on every push (a futex call per spawn); waking every sleeper.

#include "runtime/internal/idle/notifier.h"

#include <algorithm>

#include "glog/logging.h"
#include "runtime/internal/base/futex.h"
#include "runtime/internal/seams/scheduling_test_points.h"

namespace spindle::internal {
namespace {

// Adds 1 to `count` unless it is already `max` or more; whether it did. relaxed load:
// a hint; the seq_cst CAS decides (I2), and producers that read the new count skip
// their wake-up (N2), which the searcher's later seq_cst decrement and fence (I4) make
// up for.
bool TryIncrementBelow(Atomic<std::size_t>& count, std::size_t max) {
  std::size_t value = count.load(std::memory_order_relaxed);
  do {
    if (value >= max) return false;
  } while (!count.compare_exchange_weak(value, value + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed));
  return true;
}

}  // namespace

IdleNotifier::IdleNotifier(std::size_t workers) : workers_(workers) {
  CHECK(workers >= 1 && workers <= kNotifierSlots)
      << "a scheduling group has 1 to " << kNotifierSlots << " workers, not " << workers;
}

SearchNotifier::SearchNotifier(NotifiedQueues& queues, std::size_t workers)
    : IdleNotifier(workers),
      queues_(queues),
      max_searching_(std::max<std::size_t>(1, (workers + 1) / 2)) {}

bool SearchNotifier::WakeSleeperAsSearcher(Waker waker) {
  // A poller's request comes whatever our searchers do (they do not take the poller
  // over); the others only from 0, like N4.
  const bool only_if_none_search = waker != Waker::kPoller;
  for (;;) {
    if (only_if_none_search) {
      std::size_t none = 0;
      // seq_cst: a count producers read at N2; given back below or by the wakee.
      if (!searching_.compare_exchange_strong(none, 1, std::memory_order_seq_cst,
                                              std::memory_order_relaxed)) {
        return false;  // N4: someone searches
      }
    } else {
      searching_.fetch_add(1, std::memory_order_seq_cst);  // as above
    }
    // N5. relaxed load: a hint; the fetch_and decides.
    std::uint64_t sleeping = sleeping_.load(std::memory_order_relaxed);
    while (sleeping != 0) {
      const std::uint64_t bit = LowestBit(sleeping);
      // release: a worker that clears its own bit without sleeping (W3's Cancel)
      // acquires it and sees our count and the push; a sleeper gets them through the
      // WaitSlot's release/acquire.
      if (sleeping_.fetch_and(~bit, std::memory_order_release) & bit) {
        Wake(BitIndex(bit));
        return true;
      }
      sleeping = sleeping_.load(std::memory_order_relaxed);
    }
    // Nobody left to hand the count to. seq_cst RMW, then a fence: pairs with the N1
    // of producers that skipped at N2 because of it; what we read next includes their
    // fibers.
    searching_.fetch_sub(1, std::memory_order_seq_cst);
    StoreLoadFence();
    // relaxed: ordered by the fence above.
    if (sleeping_.load(std::memory_order_relaxed) == 0) {
      // Every worker of ours is busy after all: as N3 (a producer's call only; a
      // victim's request is not passed on to our own thieves).
      if (waker == Waker::kProducer && queues_.has_thieves()) queues_.WakeUpThief();
      return false;
    }
    // Nothing queued here: done (a victim's backlog is not in our queues; its request
    // goes round again while someone sleeps and nobody searches).
    if (waker != Waker::kVictim && queues_.UnsafeEmpty()) return false;
    if (only_if_none_search && searching_.load(std::memory_order_relaxed) != 0) return false;
  }
}

bool SearchNotifier::WakeOneSleeper() {
  // A vacant poller wants a sleeper to take it: the woken worker searches, so it holds a
  // count like any wakee. Not only from 0: our searchers do not take the poller over.
  // relaxed: a best-effort wake-up; the claim decides.
  if (sleeping_.load(std::memory_order_relaxed) == 0) return false;
  return WakeSleeperAsSearcher(Waker::kPoller);
}

bool SearchNotifier::WakeThief() {
  // T1: a victim's backlog, and nobody of ours searching a moment ago. Only from 0, as
  // a producer of ours wakes: a searcher of ours tries the victim within its rounds and
  // sees it in its give-back (I4) or its re-check (W3) otherwise. relaxed: as above.
  if (sleeping_.load(std::memory_order_relaxed) == 0) return false;
  return WakeSleeperAsSearcher(Waker::kVictim);
}

bool SearchNotifier::StartSearching(std::size_t) {
  return TryIncrementBelow(searching_, max_searching_);  // I2
}

std::uintptr_t SearchNotifier::StopSearching(std::size_t, bool searching,
                                             std::uintptr_t entry) {
  if (searching) GiveBackCount(entry != 0);  // I4
  return entry;
}

void SearchNotifier::GiveBackCount(bool found) {
  // seq_cst RMW, then a fence: pairs with N1 (a producer that saw our count), ours or a
  // victim's (T1).
  const std::size_t before = searching_.fetch_sub(1, std::memory_order_seq_cst);
  StoreLoadFence();
  // The last searcher out, with work: producers skipped their wake-ups while we
  // searched, ours (N2) and our victims' (T1), and we will not look at their queues
  // now.
  if (found && before == 1) WakeAnotherIfWorkWaits();
}

void SearchNotifier::WakeAnotherIfQueued() {
  // A relaxed snapshot, read after the caller's fence (I4, W2).
  if (!queues_.UnsafeEmpty()) Notify();
}

void SearchNotifier::WakeAnotherIfWorkWaits() {
  // Relaxed snapshots, read after the caller's fence (I4, W2). Our queues first, then
  // the victims': a worker of ours that sleeps while a victim's backlog waits for a
  // thief is woken to search (only if nobody of ours searches, as T1 itself).
  if (!queues_.UnsafeEmpty()) {
    Notify();
  } else if (queues_.VictimsMayHaveStealable()) {
    WakeSleeperAsSearcher(Waker::kVictim);
  }
}

void SearchNotifier::Announce(std::size_t w) {
  sleeping_.fetch_or(std::uint64_t{1} << w, std::memory_order_seq_cst);  // W1
  StoreLoadFence();  // W2: pairs with N1
}

bool SearchNotifier::ClearSleepingBit(std::size_t w) {
  const std::uint64_t bit = std::uint64_t{1} << w;
  // acq_rel: if a waker cleared it first (N5), its count and push are visible to what
  // we do next.
  return (sleeping_.fetch_and(~bit, std::memory_order_acq_rel) & bit) == 0;
}

void SearchNotifier::Cancel(std::size_t w, bool found) {
  if (ClearSleepingBit(w)) {
    GiveBackCount(found);  // a waker's count: give it back as a searcher would
    // A poll plan: we look at other sources first, so pass the waker's fiber on.
    if (!found) WakeAnotherIfQueued();
  } else if (found) {
    // "More work"; and we were the one to look at the victims after our fence (W3),
    // which we now skip for our own group's work.
    WakeAnotherIfWorkWaits();
  }
}

bool SearchNotifier::EndSleep(std::size_t w) { return ClearSleepingBit(w); }

}  // namespace spindle::internal
