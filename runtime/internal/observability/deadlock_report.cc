// Copyright 2026 The Spindle Authors.
//
// The deadlock report (--fiber_deadlock_report_s). The wait-for graph has an edge from
// each fiber parked on a Spindle Mutex or SharedMutex to the fiber recorded as that
// lock's holder (sync/mutex.h's owner_, SharedMutex's writer_owner_: one store each on
// lock and unlock). A fiber waits for one lock at a time, so each node has at most one
// edge and a cycle is found by following edges: no general graph search, and no
// lock-order history (abseil's deadlock detection keeps one on every acquisition, in
// debug builds only). Waits on condition variables, events and channels have no holder
// and are not in the graph; neither are readers of a SharedMutex (not recorded).
//
// Only what the report shows is built, and only by the monitor thread: no fiber's path
// changes beyond the two stores of the lock's holder.

#include "runtime/internal/observability/deadlock_report.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/debug_info.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/stack_allocator.h"
#include "glog/logging.h"
#include "runtime/internal/observability/fiber_dump.h"

namespace spindle::internal {
namespace {

constexpr auto kRoundPeriod = std::chrono::milliseconds(500);

std::atomic<std::uint64_t> g_deadlocks_reported{0};
std::atomic<std::uint64_t> g_rounds{0};

// Where the sync layer keeps a lock's holder, from spindle_debug_info (0: not linked).
std::uint64_t HolderOffsetPlusOne(WaitKind kind) {
  return kind == WaitKind::kMutex ? spindle_debug_info.mutex_owner_offset_plus_one
                                  : spindle_debug_info.shared_mutex_owner_offset_plus_one;
}

const char* LockName(WaitKind kind) {
  return kind == WaitKind::kMutex ? "Mutex" : "SharedMutex";
}

}  // namespace

std::vector<LockWait> ScanLockWaits() {
  std::vector<LockWait> waits;
  const std::uint64_t now = CycleClockNow();
  const double ns_per_tick = CycleClockNanosPerTick();
  ForEachRegisteredStack([&](const Stack& stack) {
    if (!PinStackEntity(stack)) return;
    auto* fiber = reinterpret_cast<FiberEntity*>(stack.top() - FiberControlBlockSize());
    {
      std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
      const WaitKind kind = fiber->wait_kind;
      const std::uint64_t offset = HolderOffsetPlusOne(kind);
      if (fiber->state() == FiberState::kWaiting &&
          (kind == WaitKind::kMutex || kind == WaitKind::kSharedMutex) &&
          fiber->wait_object != nullptr && offset != 0) {
        LockWait wait;
        wait.fiber = fiber->id;
        wait.kind = kind;
        wait.lock = fiber->wait_object;
        // The fiber is held Waiting (its scheduler lock), so it is still queued on the
        // lock, which therefore still exists. relaxed: see Mutex::owner_.
        wait.holder = reinterpret_cast<const std::atomic<std::uint64_t>*>(
                          static_cast<const char*>(wait.lock) + offset - 1)
                          ->load(std::memory_order_relaxed);
        const std::uint64_t since = fiber->state_since();
        wait.seconds = since != 0 && now > since
                           ? static_cast<double>(now - since) * ns_per_tick / 1e9
                           : 0.0;
        waits.push_back(wait);
      }
    }
    UnpinStackEntity(stack);
  });
  return waits;
}

std::vector<std::vector<LockWait>> FindLockCycles(const std::vector<LockWait>& waits,
                                                  double min_seconds) {
  std::map<std::uint64_t, const LockWait*> by_fiber;
  for (const LockWait& wait : waits) {
    if (wait.seconds >= min_seconds) by_fiber[wait.fiber] = &wait;
  }
  // 0: not visited; 1: on the path being followed; 2: done.
  std::map<std::uint64_t, int> color;
  std::vector<std::vector<LockWait>> cycles;
  for (const auto& [start, unused] : by_fiber) {
    if (color[start] != 0) continue;
    std::vector<const LockWait*> path;
    std::uint64_t at = start;
    for (;;) {
      const auto it = by_fiber.find(at);
      if (it == by_fiber.end() || color[at] == 2) break;  // a runnable holder, or known
      if (color[at] == 1) {
        // The path from `at` onwards is a cycle; start it at its smallest id.
        auto first = std::find_if(path.begin(), path.end(),
                                  [at](const LockWait* w) { return w->fiber == at; });
        std::vector<LockWait> cycle;
        for (auto p = first; p != path.end(); ++p) cycle.push_back(**p);
        std::rotate(cycle.begin(),
                    std::min_element(cycle.begin(), cycle.end(),
                                     [](const LockWait& a, const LockWait& b) {
                                       return a.fiber < b.fiber;
                                     }),
                    cycle.end());
        cycles.push_back(std::move(cycle));
        break;
      }
      color[at] = 1;
      path.push_back(it->second);
      at = it->second->holder;
    }
    for (const LockWait* wait : path) color[wait->fiber] = 2;
  }
  return cycles;
}

std::string DescribeLockCycle(const std::vector<LockWait>& cycle) {
  std::ostringstream out;
  for (const LockWait& wait : cycle) {
    out << "  fiber " << wait.fiber << " waits for " << LockName(wait.kind) << " at "
        << wait.lock << " held by fiber " << wait.holder << " (waiting "
        << static_cast<std::uint64_t>(wait.seconds) << " s)\n";
  }
  out << "  cycle: ";
  for (const LockWait& wait : cycle) out << "fiber " << wait.fiber << " -> ";
  out << "fiber " << cycle.front().fiber << "\n";
  return out.str();
}

std::uint64_t DeadlocksReported() {
  // acquire: pairs with the release increment after a report is written.
  return g_deadlocks_reported.load(std::memory_order_acquire);
}

std::uint64_t DeadlockScanRounds() {
  return g_rounds.load(std::memory_order_acquire);  // acquire: pairs with Round()'s end
}

DeadlockMonitor::DeadlockMonitor(std::chrono::seconds after)
    : after_(after), thread_([this] { Run(); }) {}

DeadlockMonitor::~DeadlockMonitor() {
  // release: nothing to publish but the request; the thread re-reads it after waking.
  stop_.word().store(1, std::memory_order_release);
  stop_.Unpark();
  thread_.join();
}

void DeadlockMonitor::Run() {
  pthread_setname_np(pthread_self(), "spindle-deadlk");
  // acquire: pairs with the destructor's store.
  while (stop_.word().load(std::memory_order_acquire) == 0) {
    Round();
    stop_.ParkWhile(0, MonotonicDeadline::In(kRoundPeriod));
  }
}

void DeadlockMonitor::Round() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<LockWait> waits = ScanLockWaits();
  // Time each wait from the earlier of its park and the first round that saw it on
  // this lock.
  std::map<std::uint64_t, std::pair<const void*, std::chrono::steady_clock::time_point>>
      seen;
  for (LockWait& wait : waits) {
    auto it = first_seen_.find(wait.fiber);
    const auto first = it != first_seen_.end() && it->second.first == wait.lock
                           ? it->second.second
                           : now;
    seen[wait.fiber] = {wait.lock, first};
    wait.seconds = std::max(wait.seconds,
                            std::chrono::duration<double>(now - first).count());
  }
  first_seen_ = std::move(seen);
  for (const std::vector<LockWait>& cycle :
       FindLockCycles(waits, static_cast<double>(after_.count()))) {
    std::vector<std::pair<std::uint64_t, const void*>> key;
    for (const LockWait& wait : cycle) key.emplace_back(wait.fiber, wait.lock);
    if (!reported_.insert(key).second) continue;  // reported already
    std::ostringstream report;
    report << "Spindle: deadlock: " << cycle.size()
           << (cycle.size() == 1 ? " fiber waits for a lock it holds"
                                 : " fibers wait for each other's locks")
           << " (--fiber_deadlock_report_s=" << after_.count() << ")\n"
           << DescribeLockCycle(cycle);
    for (const FiberSnapshot& fiber : SnapshotFibers()) {
      for (const LockWait& wait : cycle) {
        if (fiber.id == wait.fiber) WriteFiberBlock(report, fiber);
      }
    }
    LOG(ERROR) << report.str();
    // release: a reader that sees the count sees the report written.
    g_deadlocks_reported.fetch_add(1, std::memory_order_release);
  }
  g_rounds.fetch_add(1, std::memory_order_release);  // release: this round's effects
}

}  // namespace spindle::internal
