// Copyright 2026 The Spindle Authors.
//
// Scheduling strategy v2, its idle side and its victim side: what a worker with nothing
// of its own searches (StealInGroup, StealFromInboxes), what the hog monitor's rescue
// takes from a worker stuck in one fiber (RescueStalledWorker), the W3 re-check's view
// of every queue (AnyQueued), and what other groups' thieves may take (StealBatch). The queues, the protocols and their
// labels (TK0-TK4, G1-G6, M1, N1-N5, W1-W4) are described at the top of strategy_v2.cc.
//
// Searching (StealInGroup, asked by the idle path after TakeNext): siblings' inboxes
// first (half of one, moved to our own inbox: timer wake-ups are overdue), then half a
// sibling's local queue (or one entry with --fiber_v2_steal=one), then a runnext slot,
// once its owner has had the grace to take it (RG1, --fiber_v2_runnext_grace_ns).
//
// Stealing between groups (StealBatch, for thieves): up to half of the global queue's
// ring (its oldest stealable entries), else up to half of one worker's local queue.
// Local entries carry no stealable bit, so a thief that grabs a scheduling_group_local
// fiber gives it back through the victim's global queue (with a Notify) and keeps the
// rest: such a fiber never leaves its group and never hides what is behind it.
//

#include "runtime/internal/strategies/strategy_v2.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/spinlock.h"
#include "runtime/internal/base/fiber_desc.h"

namespace spindle::internal {
namespace {

std::uint64_t NextRandom(std::uint64_t& state) {
  // xorshift64*: victim choice only.
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

}  // namespace

std::uintptr_t StrategyV2::StealInGroup(std::size_t worker) {
  const std::size_t n = options_.workers;
  if (n == 1) return 0;
  Worker& me = *workers_[worker];
  const std::size_t start = static_cast<std::size_t>(NextRandom(me.random) % n);
  std::uintptr_t* grabbed = me.steal_buffer.get();
  const std::size_t max = me.local.capacity() / 2;
  if (std::uintptr_t entry = StealFromInboxes(me, worker, start)) return entry;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t v = (start + i) % n;
    if (v == worker) continue;
    Worker& victim = *workers_[v];
    std::size_t got = victim.local.Grab(grabbed, max, settings_.steal_half);
    std::size_t first = 0;
    // Drop descriptors their joiners ran; keep the rest.
    while (first < got && !ClaimEntry(grabbed[first])) ++first;
    if (first < got) {
      // relaxed: statistic.
      steals_in_group_.Add(got - first);
      // Our local queue is empty here (we are idle), so the rest fits.
      for (std::size_t k = first + 1; k < got; ++k) {
        PushLocal(worker, grabbed[k]);
      }
      if (first + 1 < got) Notify();  // M1, as in TakeFromGlobal()
      return grabbed[first];
    }
  }
  // Then the stages (G3): the oldest fiber a busy sibling staged.
  if (settings_.stage_capacity != 0) {
    if (std::uintptr_t entry = TakeFromSiblingStage(worker)) return entry;
  }
  // Then the runnext slots: a fiber started by a fiber that keeps its worker busy (it
  // spins, or runs long) must not wait for it; but most are about to run where they are
  // (RG1).
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t v = (start + i) % n;
    if (v == worker) continue;
    Atomic<std::uintptr_t>& slot = workers_[v]->runnext;
    // relaxed: a hint; the acquire CAS decides and pairs with the owner's exchange.
    std::uintptr_t entry = slot.load(std::memory_order_relaxed);
    if (entry != 0 && RunnextOutlastsGrace(slot, entry) &&
        slot.compare_exchange_strong(entry, 0, std::memory_order_acquire,
                                     std::memory_order_relaxed) &&
        ClaimEntry(entry)) {
      steals_in_group_.Add(1);
      return entry;
    }
  }
  return 0;
}

// RG1. A fiber in a busy sibling's runnext was nearly always made ready by the fiber
// running there, which is about to park, end or join it: a channel's or an event's
// partner, a spawned child. Its own worker runs it within a switch (~100 ns), with its
// lines in that core's cache; a thief that takes it moves the pair apart, and then every
// hand-off between them crosses cores (and the next wake-up goes to the thief's runnext,
// where the first worker, idle now, steals it back). So, as Go's runqgrab sleeps 3 us
// before it takes a running P's runnext, a thief leaves the slot to its owner for the
// grace, looking at it between pauses, and gives up on it when it changes.
// Nothing is lost by giving up: the entry was taken by its owner (or displaced to the
// owner's local tail, which the next search looks at), and a thief that finds nothing
// anywhere re-checks every queue before it sleeps (W3, AnyQueued).
bool StrategyV2::RunnextOutlastsGrace(const Atomic<std::uintptr_t>& slot,
                                      std::uintptr_t entry) const {
#if defined(SPINDLE_MODEL_CHECK)
  (void)slot;
  (void)entry;
  return true;  // models keep no grace
#else
  if (runnext_grace_ticks_ == 0) return true;
  const std::uint64_t until = CycleClockNow() + runnext_grace_ticks_;
  do {
    CpuRelax();
    // relaxed: a hint, as the first look; the caller's CAS decides.
    if (slot.load(std::memory_order_relaxed) != entry) return false;
  } while (CycleClockNow() < until);
  return true;
#endif
}

std::uintptr_t StrategyV2::StealFromInboxes(Worker& me, std::size_t worker,
                                            std::size_t start) {
  // Timer wake-ups first: they are overdue, and their worker may be in a long fiber.
  const std::size_t n = options_.workers;
  std::uintptr_t* grabbed = me.steal_buffer.get();
  const std::size_t max = me.local.capacity() / 2;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t v = (start + i) % n;
    if (v == worker) continue;
    const std::size_t got = workers_[v]->inbox.Grab(grabbed, max, settings_.steal_half);
    if (got == 0) continue;
    // Inbox entries are Ready fibers (EnqueueWoken), never descriptors: no claim.
    steals_in_group_.Add(got);
    // Still overdue: into our own inbox, not behind our local queue.
    if (got > 1) {
      me.inbox.PostMany(grabbed + 1, got - 1);
      Notify();  // M1
    }
    return grabbed[0];
  }
  return 0;
}

std::size_t StrategyV2::RescueStalledWorker(std::size_t worker) {
  if (options_.workers == 1) return 0;  // no sibling to run them: it would only reorder
  Worker& stalled = *workers_[worker];
  // relaxed: hints, as a thief's; the CAS and Grab() below decide. Checked first: the
  // monitor asks every few milliseconds while the fiber runs, mostly about empty queues.
  if (stalled.runnext.load(std::memory_order_relaxed) == 0 && stalled.local.UnsafeEmpty() &&
      stalled.stage.UnsafeSize() == 0) {
    return 0;
  }
  // The monitor's thread is a thief like any sibling: Grab() and the runnext CAS are
  // the consumers' side of the same protocols (StealInGroup). The entries stay
  // unclaimed (whoever takes them from the global queue claims them).
  std::vector<std::uintptr_t>& moved = rescue_entries_;  // capacity + 1 entries
  std::size_t n = 0;
  // runnext first: it would have run before the local queue (TK2). relaxed load: a
  // hint; the acquire CAS decides and pairs with the owner's exchange (as in
  // StealInGroup).
  std::uintptr_t next = stalled.runnext.load(std::memory_order_relaxed);
  if (next != 0 && stalled.runnext.compare_exchange_strong(next, 0, std::memory_order_acquire,
                                                           std::memory_order_relaxed)) {
    moved[n++] = next;
  }
  // Then the local queue, oldest first, half of what is left at a time; then the stage
  // (G6), whose entries came after the local queue's.
  const std::size_t local_room = moved.size() - settings_.stage_capacity;
  while (n < local_room) {
    const std::size_t got = stalled.local.Grab(moved.data() + n, local_room - n, /*half=*/true);
    if (got == 0) break;
    n += got;
  }
  n += stalled.stage.TakeOldest(moved.data() + n, rescue_stealable_.get(), moved.size() - n);
  const std::size_t kept = PushLiveToGlobal(moved.data(), n, rescue_stealable_.get());
  if (kept != 0) Notify();  // as after any push (N1-N5)
  return kept;
}

bool StrategyV2::AnyQueued() const {
  if (!global_.UnsafeEmpty()) return true;
  for (std::size_t i = 0; i < options_.workers; ++i) {
    const Worker& w = *workers_[i];
    // relaxed: a snapshot taken after the caller's fence.
    if (!w.local.UnsafeEmpty() || w.runnext.load(std::memory_order_relaxed) != 0 ||
        w.inbox.MaybeNonEmpty() || w.stage.UnsafeSize() != 0) {
      return true;
    }
  }
  return false;
}

// ---- Victim side of stealing between groups.

std::size_t StrategyV2::StealBatch(std::uintptr_t* out, std::size_t max) {
  // The global queue, then our workers' local queues from a rotating start, then their
  // inboxes; up to half of the first queue that gives anything (Go's runqsteal takes
  // half of a P's queue). The first entry is claimed (the thief runs it); the others
  // stay unclaimed, and descriptors whose joiners ran them inline are dropped here
  // rather than carried to the thief's group.
  bool moved_pinned = false;
  const std::size_t from_global = global_.StealBatch(out, max, &moved_pinned);
  // A moved entry was out of the queue for a moment, as if pushed again: N1-N5.
  if (moved_pinned) Notify();
  if (from_global != 0) return from_global;
  const std::size_t workers = options_.workers;
  // relaxed: only spreads the thieves over our workers.
  const std::size_t start = next_victim_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < workers; ++i) {
    Worker& victim = *workers_[(start + i) % workers];
    // One entry per Grab, so that a scheduling_group_local one ends the batch where it
    // stands: it alone leaves its queue (for our global queue), as with one fiber per
    // steal, and the ones behind it keep their place and order. A racy size: it bounds
    // how much we take, not whether we may.
    const std::size_t want = std::min(max, (victim.local.UnsafeSize() + 1) / 2);
    std::size_t n = 0;
    while (n < want) {
      std::uintptr_t entry = 0;
      if (victim.local.Grab(&entry, 1, /*half=*/false) == 0) break;
      if (DropIfRunInline(entry)) continue;  // a joiner ran it: the queue's reference goes
      if (!IsStealable(entry)) {
        // It stays ours. Back to our global queue unclaimed (whoever takes it there
        // claims it), and our workers are told, as for any push.
        global_.Push(entry, /*stealable=*/false, [this] { Notify(); });
        Notify();
        break;
      }
      if (n == 0 && !ClaimEntry(entry)) continue;  // a joiner claimed it just now
      out[n++] = entry;
    }
    if (n != 0) return n;
  }
  // The inboxes last, one entry (timer wake-ups; rarely anything here).
  for (std::size_t i = 0; i < workers; ++i) {
    Worker& victim = *workers_[(start + i) % workers];
    std::uintptr_t entry = 0;
    if (victim.inbox.Grab(&entry, 1, /*half=*/false) == 0) continue;
    if (IsStealable(entry)) {
      out[0] = entry;  // a Ready fiber: nothing to claim
      return 1;
    }
    global_.Push(entry, /*stealable=*/false, [this] { Notify(); });
    Notify();
  }
  return 0;
}

bool StrategyV2::MayHaveStealable() const {
  if (global_.UnsafeRingSize() != 0) return true;
  for (std::size_t i = 0; i < options_.workers; ++i) {
    if (!workers_[i]->local.UnsafeEmpty() || workers_[i]->inbox.MaybeNonEmpty()) return true;
  }
  return false;
}

}  // namespace spindle::internal
