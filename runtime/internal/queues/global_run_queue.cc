// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/global_run_queue.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "glog/logging.h"
#include "runtime/internal/base/fiber_desc.h"

namespace spindle::internal {
namespace {

thread_local bool tls_is_runtime_thread = false;

}  // namespace

void MarkThisThreadAsRuntimeThread(bool is_runtime_thread) {
  tls_is_runtime_thread = is_runtime_thread;
}

GlobalRunQueue::GlobalRunQueue(std::size_t group_index, std::size_t capacity,
                               int numa_node)
    : group_index_(group_index), ring_(capacity, numa_node) {}

GlobalRunQueue::~GlobalRunQueue() = default;

void GlobalRunQueue::PushMany(const std::uintptr_t* entries, const bool* stealable,
                              std::size_t n, absl::FunctionRef<void()> make_room) {
  constexpr std::size_t kMaxChunk = 64;
  const std::size_t chunk = std::min(kMaxChunk, ring_.capacity());
  for (std::size_t done = 0; done < n;) {
    const std::size_t count = std::min(chunk, n - done);
    const bool all_stealable =
        std::all_of(stealable + done, stealable + done + count, [](bool s) { return s; });
    if (!all_stealable || !ring_.BatchPush(entries + done, count, true)) {
      for (std::size_t i = done; i < done + count; ++i) {
        if (ring_.Push(entries[i], stealable[i])) continue;
        if (!tls_is_runtime_thread) {
          PushSlow(entries[i], stealable[i], make_room);  // waits for room
          continue;
        }
        // Full, on a runtime thread: what the compaction makes room for goes to the
        // ring, everything left of the batch to the overflow list under one lock (a
        // lock per entry would make the spawn path slower).
        Compact();
        while (i < n && ring_.Push(entries[i], stealable[i])) ++i;
        if (i < n) Spill(entries + i, n - i);
        return;
      }
    }
    done += count;
  }
}

void GlobalRunQueue::Spill(const std::uintptr_t* entries, std::size_t n) {
  // Not a warning: a burst (a fiber that starts a million fibers before it joins them,
  // spindle_bench's spawn_join) fills any bounded ring, and the overflow list is how
  // the runtime takes it; nothing waits and nothing is lost. What persists shows in the
  // run_queue_spills metric (spindle_run_queue_spills_total).
  // relaxed: a statistic.
  const std::uint64_t spilled = spills_.fetch_add(n, std::memory_order_relaxed) + n;
  LOG_EVERY_T(INFO, 10) << "Run queue of scheduling group " << group_index_ << " is full ("
                        << ring_.capacity()
                        << " fibers): new fibers spill to its overflow list (" << spilled
                        << " so far). A burst does this by design; if it persists, raise "
                           "--fiber_run_queue_size.";
  OsMutexGuard lock(overflow_lock_);
  overflow_.insert(overflow_.end(), entries, entries + n);
  // relaxed: the count is a hint read by consumers before they take the lock; the
  // producer's fence before its wake-up decision orders it before the idle masks are
  // read, as for a push into the ring. Overflow entries are taken by this group's
  // workers only (stealable bits are not kept).
  overflow_size_.fetch_add(n, std::memory_order_relaxed);
}

std::size_t GlobalRunQueue::Compact() {
  // Only when a joiner noted dead entries, so a ring full of live fibers keeps its
  // order, stays stealable and costs nothing extra. relaxed: a hint (see
  // NoteDeadEntries()); cleared first, so entries noted meanwhile trigger the next one.
  if (!dead_entries_.load(std::memory_order_relaxed) ||
      !dead_entries_.exchange(false, std::memory_order_relaxed)) {
    return 0;
  }
  // Entries we pop are ours until we put them back, so looking inside them (whether a
  // joiner ran the fiber inline) is safe here, unlike at the head of a live queue.
  constexpr std::size_t kBatch = 256;
  std::vector<std::uintptr_t> live;
  live.reserve(std::min(kBatch, ring_.capacity()));
  std::size_t dropped = 0;
  const std::size_t limit = std::min(kBatch, ring_.capacity());
  for (std::size_t i = 0; i < limit; ++i) {
    const std::uintptr_t entry = ring_.Pop();
    if (entry == 0) break;
    if (DropIfRunInline(entry)) {
      ++dropped;
    } else {
      live.push_back(entry);
    }
  }
  if (live.empty()) return dropped;
  // Appended, in their order: consumers take the overflow list first, so they do not
  // fall behind what is still in the ring. They were out of every count for a moment;
  // the producer's wake-up decision, after its push, covers them as it covers the push.
  OsMutexGuard lock(overflow_lock_);
  overflow_.insert(overflow_.end(), live.begin(), live.end());
  overflow_size_.fetch_add(live.size(), std::memory_order_relaxed);  // relaxed: see Spill()
  return dropped;
}

void GlobalRunQueue::PushSlow(std::uintptr_t entry, bool stealable,
                              absl::FunctionRef<void()> make_room) {
  // The ring is full. Descriptors that joiners ran inline but could not take back
  // (another fiber was in front of them; TakeBackRunInline, take_back.h) may be
  // what fills it: Compact() drops them when some were noted, so they do not hold up
  // this producer or make it spill.
  Compact();
  if (tls_is_runtime_thread) {
    if (!ring_.Push(entry, stealable)) Spill(&entry, 1);
    return;
  }
  // A plain thread (not the runtime's) waits for room: the queue's back-pressure on a
  // producer that outruns the workers. Counted, and logged at INFO like a spill: a burst
  // from a plain thread (spindle_bench's parked_memory starts 100k fibers from main())
  // meets it by design; what persists shows in run_queue_full_waits.
  bool counted = false;
  while (!ring_.Push(entry, stealable)) {
    if (!counted) {
      counted = true;
      // relaxed: a statistic.
      const std::uint64_t waits = full_waits_.fetch_add(1, std::memory_order_relaxed) + 1;
      LOG_EVERY_T(INFO, 10) << "Run queue of scheduling group " << group_index_
                            << " is full (" << ring_.capacity()
                            << " fibers): a producer that is not a runtime thread waits for "
                               "room ("
                            << waits << " waits so far). If this persists, raise "
                                        "--fiber_run_queue_size.";
    }
    make_room();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    Compact();
  }
}

std::uintptr_t GlobalRunQueue::PopOverflow() {
  OsMutexGuard lock(overflow_lock_);
  if (overflow_.empty()) return 0;
  const std::uintptr_t entry = overflow_.front();
  overflow_.pop_front();
  overflow_size_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see Spill()
  return entry;
}

std::uintptr_t GlobalRunQueue::Take() {
  for (;;) {
    std::uintptr_t entry = 0;
    // relaxed: a hint (see PushSlow()); the list is read under its lock. Spilled
    // entries are older than anything in the ring, so they go first.
    if (overflow_size_.load(std::memory_order_relaxed) != 0) entry = PopOverflow();
    if (entry == 0) entry = ring_.Pop();
    if (entry == 0 || ClaimEntry(entry)) return entry;
  }
}

std::uintptr_t GlobalRunQueue::Steal(bool* moved_pinned) {
  std::size_t moved = 0;
  for (;;) {
    const std::uintptr_t entry = StealUnclaimed(moved_pinned, &moved);
    if (entry == 0 || ClaimEntry(entry)) return entry;
  }
}

std::size_t GlobalRunQueue::StealBatch(std::uintptr_t* out, std::size_t max,
                                      bool* moved_pinned) {
  std::size_t moved = 0;  // one bound for the whole batch
  std::size_t n = 0;
  while (n == 0) {  // the first, claimed
    const std::uintptr_t entry = StealUnclaimed(moved_pinned, &moved);
    if (entry == 0) return 0;
    if (ClaimEntry(entry)) out[n++] = entry;
  }
  // A racy size: it bounds how much we take, not whether we may.
  const std::size_t want = std::min(max, (ring_.UnsafeSize() + 1) / 2 + 1);
  while (n < want) {
    const std::uintptr_t entry = StealUnclaimed(moved_pinned, &moved);
    if (entry == 0) break;
    if (!DropIfRunInline(entry)) out[n++] = entry;
  }
  return n;
}

std::uintptr_t GlobalRunQueue::StealUnclaimed(bool* moved_pinned, std::size_t* moved) {
  constexpr std::size_t kMaxMoved = 8;  // bounds one thief's work for its victim
  for (;;) {
    // The cheap refusal first: most heads are stealable, or the ring is empty.
    std::uintptr_t entry = ring_.Steal();  // thieves leave the overflow list alone
    if (entry != 0) return entry;
    if (*moved == kMaxMoved || ring_.UnsafeEmpty()) return 0;
    bool pinned = false;
    entry = ring_.PopReportingPin(&pinned);
    if (entry == 0) return 0;
    if (!pinned) return entry;  // the head turned stealable meanwhile
    OsMutexGuard lock(overflow_lock_);
    overflow_.push_back(entry);
    overflow_size_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see Spill()
    *moved_pinned = true;
    ++*moved;
  }
}

std::size_t GlobalRunQueue::TakeBatchUnclaimed(std::uintptr_t* out, std::size_t max) {
  std::size_t n = 0;
  // relaxed: a hint, as in Take(). The overflow list's share under one lock.
  if (max != 0 && overflow_size_.load(std::memory_order_relaxed) != 0) {
    OsMutexGuard lock(overflow_lock_);
    n = std::min(max, overflow_.size());
    std::copy(overflow_.begin(), overflow_.begin() + static_cast<std::ptrdiff_t>(n), out);
    overflow_.erase(overflow_.begin(), overflow_.begin() + static_cast<std::ptrdiff_t>(n));
    overflow_size_.fetch_sub(n, std::memory_order_relaxed);  // relaxed: see Spill()
  }
  while (n < max) {
    const std::uintptr_t entry = ring_.Pop();
    if (entry == 0) break;
    out[n++] = entry;
  }
  return n;
}

}  // namespace spindle::internal
