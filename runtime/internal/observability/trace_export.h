// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_TRACE_EXPORT_H_
#define SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_TRACE_EXPORT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/internal/trace.h"
#include "runtime/internal/base/parker.h"

namespace spindle::internal {

// What WriteChromeTrace() wrote (runtime/trace.h's TraceSummary says what each means).
struct TraceStats {
  bool recorded = false;
  std::size_t threads = 0;
  std::uint64_t records = 0, dropped = 0;
  bool truncated = false;
  double seconds = 0;
  std::uint64_t runs = 0, spawns = 0, wakes = 0, steals = 0, timers = 0, sleeps = 0;
};

// Starts a recording (runtime/trace.h's StartTracing() and TraceWindowThread):
// measures the cycle clock once, opens the window, and stamps every readiness while it
// is open (GroupStats::SampleEveryReadinessForTrace). Returns "" or why not: a size
// out of [kMinTraceRecordsPerThread, kMaxTraceRecordsPerThread] (named by `what`, e.g.
// "--fiber_trace_records_per_thread"), or a recording already open.
std::string StartTraceRecording(std::size_t records_per_thread, const std::string& what);
// Ends it and writes it (WriteChromeTrace()); recorded = false and nothing written if
// none was open.
TraceStats StopTraceRecording(std::ostream& out);

// Writes the records of a window (StopTraceWindow()) as Chrome trace-event JSON:
//   - one track (pid 1, tid = the thread's kernel id) per thread, named after it;
//   - on a worker's track, one "X" slice per fiber run ("fiber 12"; args: fiber, group,
//     worker, how it ended: "park on mutex", "yield", "exit", or "running" at the end),
//     from the record that made it Running to the next record of that worker (its park,
//     its exit, the next run, an idle sleep); "sleep" slices between a worker's kSleep
//     and kSleepEnd;
//   - "timers" and "poll" slices (a timer round, a reactor poll with events) and
//     "steal" instants; a wake-up or spawn made outside any slice (a timer thread, a
//     worker's idle path, a plain thread) gets a short "wake"/"spawn" slice of its own;
//   - each wake-up and spawn as a flow ("s" in the slice that made it, "f" binding to
//     the run of the fiber it made Ready, the next one that begins on any track).
// Slices of one track never overlap: a track's records are in time order and each
// slice ends where the next begins or earlier. Times are microseconds from the first
// record. If a buffer filled, every thread's records from its first drop on are left out
// (summary.truncated).
TraceStats WriteChromeTrace(std::vector<TraceThreadLog> logs, double ns_per_tick,
                              std::ostream& out);

// --fiber_trace_file: a thread that waits `after`, records for `length` (or until the
// runtime stops), and writes the trace to `path` (logging a line with the summary, or an
// error naming the file). Started and stopped with the runtime.
class TraceWindowThread {
 public:
  TraceWindowThread(std::string path, std::chrono::seconds after, std::chrono::seconds length,
                    std::size_t records_per_thread);
  ~TraceWindowThread();  // stops early if it must, writing what was recorded
  TraceWindowThread(const TraceWindowThread&) = delete;
  TraceWindowThread& operator=(const TraceWindowThread&) = delete;

 private:
  void Run();
  // Parks until `deadline` or the stop; false if stopped.
  bool WaitUntil(MonotonicDeadline deadline);

  const std::string path_;
  const std::chrono::seconds after_;
  const std::chrono::seconds length_;
  const std::size_t records_per_thread_;
  Parker stop_{0};  // 1: the runtime stops
  std::thread thread_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_TRACE_EXPORT_H_
