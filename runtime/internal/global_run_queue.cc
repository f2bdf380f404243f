// Copyright 2026 The Spindle Authors.

#include "runtime/internal/global_run_queue.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "glog/logging.h"
#include "runtime/internal/fiber_desc.h"

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
        Push(entries[i], stealable[i], make_room);
      }
    }
    done += count;
  }
}

std::size_t GlobalRunQueue::Compact(bool sweep_overflow) {
  // Entries we pop are ours until we put them back, so looking inside them (whether a
  // joiner ran the fiber inline) is safe here, unlike at the head of a live queue.
  constexpr std::size_t kBatch = 256;
  std::uintptr_t live[kBatch];
  std::size_t kept = 0;
  std::size_t dropped = 0;
  const std::size_t limit = std::min(kBatch, ring_.capacity());
  for (std::size_t i = 0; i < limit; ++i) {
    const std::uintptr_t entry = ring_.Pop();
    if (entry == 0) break;
    if (DropIfRunInline(entry)) {
      ++dropped;
    } else {
      live[kept++] = entry;
    }
  }
  if (kept == 0 && !sweep_overflow) return dropped;
  std::lock_guard<std::mutex> lock(overflow_lock_);
  if (sweep_overflow) {
    const auto gone = std::remove_if(overflow_.begin(), overflow_.end(),
                                     [](std::uintptr_t entry) { return DropIfRunInline(entry); });
    const auto swept = static_cast<std::size_t>(overflow_.end() - gone);
    overflow_.erase(gone, overflow_.end());
    // relaxed: see PushSlow().
    overflow_size_.fetch_sub(swept, std::memory_order_relaxed);
    dropped += swept;
  }
  // The oldest entries of the ring are older than anything spilled: they go in front, in
  // their order, and keep their turn (consumers take the overflow list first). They were
  // out of every count for a moment; the producer's wake-up decision, after its push,
  // covers them as it covers the push.
  overflow_.insert(overflow_.begin(), live, live + kept);
  overflow_size_.fetch_add(kept, std::memory_order_relaxed);  // relaxed: see PushSlow()
  return dropped;
}

void GlobalRunQueue::PushSlow(std::uintptr_t entry, bool stealable,
                              absl::FunctionRef<void()> make_room) {
  // The ring is full. Descriptors that joiners ran inline but could not take back
  // (another fiber was in front of them; SchedulingGroup::TakeBackRunInline) may be
  // what fills it: Compact() drops them, and moves the live entries it passed to the
  // overflow list, so dead entries never cost capacity or hold up a producer.
  if (tls_is_runtime_thread) {
    Compact(/*sweep_overflow=*/false);
    if (ring_.Push(entry, stealable)) return;
    LOG_EVERY_T(WARNING, 1) << "Run queue of scheduling group " << group_index_
                            << " is full (" << ring_.capacity()
                            << " fibers); spilling new fibers to an overflow list. Raise "
                               "--fiber_run_queue_size if this persists.";
    std::lock_guard<std::mutex> lock(overflow_lock_);
    overflow_.push_back(entry);
    // relaxed: the count is a hint read by consumers before they take the lock; the
    // producer's fence before its wake-up decision orders it before the idle masks are
    // read, as for a push into the ring.
    overflow_size_.fetch_add(1, std::memory_order_relaxed);
    (void)stealable;  // overflow entries are taken by this group's workers only
    return;
  }
  // Back-pressure counts live entries wherever they are: what Compact() moved to the
  // overflow list still waits for a consumer.
  for (;;) {
    Compact(/*sweep_overflow=*/true);
    if (UnsafeSize() < ring_.capacity() && ring_.Push(entry, stealable)) return;
    LOG_EVERY_T(WARNING, 1) << "Run queue of scheduling group " << group_index_
                            << " is full (" << ring_.capacity()
                            << " fibers); the producer waits for room. Raise "
                               "--fiber_run_queue_size if this persists.";
    make_room();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::uintptr_t GlobalRunQueue::PopOverflow() {
  std::lock_guard<std::mutex> lock(overflow_lock_);
  if (overflow_.empty()) return 0;
  const std::uintptr_t entry = overflow_.front();
  overflow_.pop_front();
  overflow_size_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see PushSlow()
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

std::uintptr_t GlobalRunQueue::Steal() {
  for (;;) {
    const std::uintptr_t entry = ring_.Steal();  // thieves leave the overflow list alone
    if (entry == 0 || ClaimEntry(entry)) return entry;
  }
}

std::size_t GlobalRunQueue::TakeBatchUnclaimed(std::uintptr_t* out, std::size_t max) {
  std::size_t n = 0;
  while (n < max) {
    std::uintptr_t entry = 0;
    // relaxed: a hint, as in Take().
    if (overflow_size_.load(std::memory_order_relaxed) != 0) entry = PopOverflow();
    if (entry == 0) entry = ring_.Pop();
    if (entry == 0) break;
    out[n++] = entry;
  }
  return n;
}

}  // namespace spindle::internal
