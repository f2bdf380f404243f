// Copyright 2026 The Spindle Authors.
//
// The scheduling trace's recorder: what each runtime thread did, for a window of time,
// in a bounded buffer of its own (runtime/trace.h is the API; the exporter,
// runtime/internal/observability/trace_export.h, writes Chrome's trace format).
//
// Off, a hook costs one relaxed load of a global flag and a branch (TraceOn()); on, it
// appends a 32-byte record to the calling thread's buffer: no lock, no allocation after
// the thread's first record of the window. A full buffer drops the records that follow
// and notes the time of its first drop (the exporter cuts every thread's events there,
// so the trace it writes is whole up to that instant).
//
// Thread-safety: any thread records into its own buffer only. Start and Stop are
// serialized among themselves; Stop may run while threads still record (those racing
// with the flag): it reads each buffer up to the count the owner published (release)
// and the owner never rewrites a published record until the next window, which Start
// opens only after Stop returned.

#ifndef SPINDLE_FIBER_INTERNAL_TRACE_H_
#define SPINDLE_FIBER_INTERNAL_TRACE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spindle::internal {

// What a record says; its fields a, b, c by kind.
enum class TraceKind : std::uint8_t {
  kNone,
  kRun,       // a fiber made Running on this worker: a = fiber, b = group, c = worker
  kPark,      // the running fiber parks: a = fiber, c = its WaitKind
  kExit,      // a fiber ended (its last switch was made): a = fiber
  kWake,      // a = waker (a fiber id, or kLockOwnerThread), b = the fiber made Ready
  kSpawn,     // a = parent (as kWake's a), b = the new fiber
  kSteal,     // this worker's group took b fibers from group a; c = the thief group
  kTimers,    // a timer thread or busy worker fired b timers (a = group)
  kPoll,      // a reactor poll returned b events (a = its index)
  kSleep,     // this worker goes to sleep (a = group, c = worker)
  kSleepEnd,  // ... and is awake again
};

struct TraceRecord {
  std::uint64_t ticks;  // CycleClockNow()
  std::uint64_t a;
  std::uint64_t b;
  std::uint32_t c;
  TraceKind kind;
};
static_assert(sizeof(TraceRecord) == 32);

// One thread's records of a window.
struct TraceThreadLog {
  std::string name;  // the thread's name (pthread), e.g. "spindle-g0w1"
  int tid = 0;       // its kernel thread id
  std::vector<TraceRecord> records;
  std::uint64_t dropped = 0;      // records that found the buffer full
  std::uint64_t first_drop = 0;   // the ticks of the first of them (0: none)
};

extern std::atomic<bool> g_trace_on;

inline bool TraceOn() {
  // relaxed: a hook that races with Start/Stop records or not; either is a whole
  // record in a window or none.
  return __builtin_expect(g_trace_on.load(std::memory_order_relaxed), 0);
}

// Appends a record to the calling thread's buffer. Call only when TraceOn().
void TraceRecordNow(TraceKind kind, std::uint64_t a, std::uint64_t b = 0,
                    std::uint32_t c = 0);

inline void Trace(TraceKind kind, std::uint64_t a, std::uint64_t b = 0, std::uint32_t c = 0) {
  if (TraceOn()) TraceRecordNow(kind, a, b, c);
}

// The accepted buffer sizes (TraceOptions::records_per_thread,
// --fiber_trace_records_per_thread).
inline constexpr std::size_t kMinTraceRecordsPerThread = 1024;
inline constexpr std::size_t kMaxTraceRecordsPerThread = std::size_t{1} << 24;

// Opens a window: every thread's next record starts its buffer afresh, with room for
// `records_per_thread`. False (and nothing changes) if a window is open already.
bool StartTraceWindow(std::size_t records_per_thread);
// Closes it and returns every thread's records (threads that recorded nothing are left
// out). Empty if no window was open.
std::vector<TraceThreadLog> StopTraceWindow();
bool TraceWindowOpen();

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_TRACE_H_
