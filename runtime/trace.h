// Copyright 2026 The Spindle Authors.
//
// The scheduling trace: what every runtime thread did over a window of time (which
// fiber each worker ran and why it stopped, who woke whom, spawns, steals, timers, the
// reactor's polls, idle sleeps), written as Chrome's trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: one track per thread, wake-ups and
// spawns as arrows to the run they caused. tools/trace/trace_timeline.py draws it as a
// PNG. docs/debugging.md#the-scheduling-trace shows how to read it.
//
//   spindle::StartTracing();
//   ...  // the window
//   std::ofstream out("trace.json");
//   spindle::StopTracing(out);
//
// Or without code: --fiber_trace_file=PATH records --fiber_trace_for_s seconds, starting
// --fiber_trace_after_s after the runtime starts.
//
// Cost: off, each hook is one load of a global flag and a branch; on, a 32-byte record
// per event in the recording thread's own buffer (docs/performance.md#the-scheduling-trace
// has the figures).

#ifndef SPINDLE_RUNTIME_TRACE_H_
#define SPINDLE_RUNTIME_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace spindle {

// How StartTracing() records. A plain value.
struct TraceOptions {
  // Records each thread keeps (32 bytes each: 2 MiB by default). A thread whose buffer
  // fills drops what follows, and the trace written ends at its first drop, for every
  // thread (so what it shows is whole). Range [1024, 16777216].
  std::size_t records_per_thread = 65536;
};

// Starts recording. Returns "" on success, else why not (one is recording already, or
// an option is out of range: the message names the value and the range). Thread-safe;
// from fibers and plain threads; the runtime need not be running (threads that run no
// fibers record nothing).
std::string StartTracing(const TraceOptions& options = {});

// What StopTracing() wrote. A plain value.
struct TraceSummary {
  bool recorded = false;        // false: no recording was running (nothing written)
  std::size_t threads = 0;      // threads with records
  std::uint64_t records = 0;    // records written (after the cut, if any)
  std::uint64_t dropped = 0;    // records lost to full buffers
  bool truncated = false;       // the trace ends where the first buffer filled
  double seconds = 0;           // the span written
  std::uint64_t runs = 0;       // fiber runs (slices on the workers' tracks)
  std::uint64_t spawns = 0;
  std::uint64_t wakes = 0;
  std::uint64_t steals = 0;     // fibers stolen between groups
  std::uint64_t timers = 0;     // timers fired
  std::uint64_t sleeps = 0;     // workers' idle sleeps
};

// Stops recording and writes the trace to `out` as Chrome trace-event JSON (an object
// with "traceEvents"). Thread-safe. Without a recording it writes nothing.
TraceSummary StopTracing(std::ostream& out);

}  // namespace spindle

#endif  // SPINDLE_RUNTIME_TRACE_H_
