// Copyright 2026 The Spindle Authors.

#include "runtime/trace.h"

#include "runtime/internal/observability/trace_export.h"

namespace spindle {

std::string StartTracing(const TraceOptions& options) {
  return internal::StartTraceRecording(options.records_per_thread,
                                       "TraceOptions::records_per_thread");
}

TraceSummary StopTracing(std::ostream& out) {
  // The internal figures under their public names (the runtime's internals cannot
  // include this header).
  const internal::TraceStats stats = internal::StopTraceRecording(out);
  TraceSummary summary;
  summary.recorded = stats.recorded;
  summary.threads = stats.threads;
  summary.records = stats.records;
  summary.dropped = stats.dropped;
  summary.truncated = stats.truncated;
  summary.seconds = stats.seconds;
  summary.runs = stats.runs;
  summary.spawns = stats.spawns;
  summary.wakes = stats.wakes;
  summary.steals = stats.steals;
  summary.timers = stats.timers;
  summary.sleeps = stats.sleeps;
  return summary;
}

}  // namespace spindle

