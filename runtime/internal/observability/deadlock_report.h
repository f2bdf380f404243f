// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_DEADLOCK_REPORT_H_
#define SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_DEADLOCK_REPORT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fiber/internal/wait_types.h"
#include "runtime/internal/base/parker.h"

namespace spindle::internal {

// One fiber parked on a Spindle Mutex or SharedMutex, as a scan saw it. A plain value.
struct LockWait {
  std::uint64_t fiber = 0;      // its id
  WaitKind kind = WaitKind::kNone;
  const void* lock = nullptr;   // the Mutex or SharedMutex
  std::uint64_t holder = 0;     // its recorded holder (0: none; kLockOwnerThread)
  double seconds = 0;           // how long it has waited
};

// Every fiber parked on a Mutex or SharedMutex now, with the lock's recorded holder
// (the sync layer's owner fields, found through spindle_debug_info: the runtime sits
// below sync). Walks the stack registry as the fiber dump does, pinning each entity and
// holding its scheduler lock while it reads the wait and the holder: a fiber held
// Waiting cannot leave its wait, so the lock it waits on cannot be destroyed meanwhile.
// Thread-safe. Costs a pin and a spinlock per fiber with a stack.
std::vector<LockWait> ScanLockWaits();

// The cycles of the wait-for graph of `waits` (fiber -> the holder of the lock it waits
// on) among waits of at least `min_seconds`: each cycle in wait order, starting at its
// smallest fiber id. A fiber that waits for a lock it holds is a cycle of one.
std::vector<std::vector<LockWait>> FindLockCycles(const std::vector<LockWait>& waits,
                                                  double min_seconds);

// A cycle as the report writes it: one line per wait ("fiber 12 waits for Mutex 0x...
// held by fiber 15"), and the cycle in one line.
std::string DescribeLockCycle(const std::vector<LockWait>& cycle);

// Deadlocks reported so far in this process (spindle_deadlocks_total), and the rounds
// the monitors have finished (a test's clock: waits on rounds, never on sleeps).
std::uint64_t DeadlocksReported();
std::uint64_t DeadlockScanRounds();

// --fiber_deadlock_report_s: a thread ("spindle-deadlk") that scans every half second
// (ScanLockWaits) and reports each cycle of fibers that have waited `after` or longer
// on each other's locks, once per cycle, as a glog ERROR with the graph's cycle and
// each fiber's stack, and counts it in DeadlocksReported(). Fibers that merely wait
// long for a lock whose holder runs, sleeps or waits on a socket form no cycle and are
// never reported. A wait is timed from the earlier of its park and the first scan that
// saw it on that lock (a SharedMutex writer re-parks every millisecond). Started and
// stopped with the runtime; thread-safe.
class DeadlockMonitor {
 public:
  explicit DeadlockMonitor(std::chrono::seconds after);
  ~DeadlockMonitor();  // stops and joins the thread
  DeadlockMonitor(const DeadlockMonitor&) = delete;
  DeadlockMonitor& operator=(const DeadlockMonitor&) = delete;

 private:
  void Run();
  // One round: scan, time the waits, report new cycles.
  void Round();

  const std::chrono::seconds after_;
  Parker stop_{0};  // 1: stop; the thread parks on it between rounds
  // The monitor thread's own state: when each waiting fiber was first seen on its lock,
  // and the cycles reported (as their fibers and locks), so each is reported once.
  std::map<std::uint64_t, std::pair<const void*, std::chrono::steady_clock::time_point>>
      first_seen_;
  std::set<std::vector<std::pair<std::uint64_t, const void*>>> reported_;
  std::thread thread_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_DEADLOCK_REPORT_H_
