// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_BASE_POOL_ADMISSION_H_
#define SPINDLE_RUNTIME_INTERNAL_BASE_POOL_ADMISSION_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spindle::internal {

// The live-fiber count of a pool with a cap (--fiber_pools max_fibers=,
// --fiber_max_fibers): what the TryStart forms are admitted against. Every fiber of the
// pool is counted, from its start until its end (ReclaimFiber(), or its joiner's inline
// run): a TryStart only while the count is below the cap (TryAdmit()), a plain start
// always (AddPastCap()), so that a start that must not fail never does and the cap
// still sees the load. A pool without a cap has no PoolAdmission: its fibers pay nothing.
//
// Room for a waiter (the waiting form): Release() calls `on_room` when a waiter is
// registered. Why a waiter cannot miss the room that a Release() makes: the waiter bumps
// `waiters` and then retries TryAdmit(); Release() drops `live` and then reads
// `waiters`, both sequentially consistent, so at least one of them sees the other's
// write (the waiter sees the room, or Release() sees the waiter and calls `on_room`,
// which wakes it; see runtime/internal/fiber_pool.cc for the wait queue's side).
//
// Thread-safety: thread-safe. Owned by the runtime's pool; outlives the pool's groups.
class PoolAdmission {
 public:
  using RoomCallback = void (*)(void* arg);

  PoolAdmission(std::size_t cap, RoomCallback on_room, void* arg)
      : cap_(static_cast<std::int64_t>(cap)), on_room_(on_room), on_room_arg_(arg) {}
  PoolAdmission(const PoolAdmission&) = delete;
  PoolAdmission& operator=(const PoolAdmission&) = delete;

  // Counts one fiber if fewer than the cap are live; false (nothing counted) otherwise.
  bool TryAdmit() {
    // seq_cst: the load and the CAS pair with Release()'s fetch_sub (a waiter that
    // bumped `waiters` first must see the room Release() made; see the class comment).
    std::int64_t live = live_.load(std::memory_order_seq_cst);
    while (live < cap_) {
      if (live_.compare_exchange_weak(live, live + 1, std::memory_order_seq_cst)) return true;
    }
    return false;
  }
  // Counts `n` fibers started by a form that is never refused, past the cap or not
  // (those past it also in past_cap_starts()).
  void AddPastCap(std::size_t n) {
    const auto added = static_cast<std::int64_t>(n);
    // relaxed: a count; the fibers' queueing publishes them, and Release() only
    // subtracts what was added before.
    const std::int64_t now = live_.fetch_add(added, std::memory_order_relaxed) + added;
    if (__builtin_expect(now > cap_, 0)) {
      past_cap_starts_.fetch_add(static_cast<std::uint64_t>(std::min(added, now - cap_)),
                                 std::memory_order_relaxed);
    }
  }
  // One counted fiber of the pool has ended: frees its place and wakes a waiter if any.
  void Release() {
    // seq_cst: pairs with the waiter's `waiters` bump and TryAdmit() (class comment).
    live_.fetch_sub(1, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) != 0) on_room_(on_room_arg_);
  }
  // The waiting form's registration around its retries (class comment).
  void AddWaiter() { waiters_.fetch_add(1, std::memory_order_seq_cst); }
  void RemoveWaiter() {
    // relaxed: only Release()'s decision to call on_room reads it; a stale 1 costs one
    // needless call, never a lost wake-up (the waiter left with its admission).
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }

  std::size_t cap() const { return static_cast<std::size_t>(cap_); }
  // Relaxed snapshots.
  std::size_t live() const {
    const std::int64_t live = live_.load(std::memory_order_relaxed);
    return live > 0 ? static_cast<std::size_t>(live) : 0;
  }
  std::uint64_t past_cap_starts() const {
    return past_cap_starts_.load(std::memory_order_relaxed);
  }

 private:
  const std::int64_t cap_;
  const RoomCallback on_room_;
  void* const on_room_arg_;
  alignas(64) std::atomic<std::int64_t> live_{0};
  std::atomic<int> waiters_{0};
  std::atomic<std::uint64_t> past_cap_starts_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_BASE_POOL_ADMISSION_H_
