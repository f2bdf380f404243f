// Copyright 2026 The Spindle Authors.

#include "runtime/trace.h"

#include <utility>
#include <vector>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/trace.h"
#include "runtime/internal/group/group_stats.h"
#include "runtime/internal/observability/trace_export.h"

namespace spindle {

namespace {
constexpr std::size_t kMinRecords = 1024;
constexpr std::size_t kMaxRecords = std::size_t{1} << 24;
}  // namespace

std::string StartTracing(const TraceOptions& options) {
  if (options.records_per_thread < kMinRecords || options.records_per_thread > kMaxRecords) {
    return "TraceOptions::records_per_thread=" + std::to_string(options.records_per_thread) +
           " is invalid: expected records in [" + std::to_string(kMinRecords) + ", " +
           std::to_string(kMaxRecords) + "]";
  }
  // Measured once, before the window (the first call spins 2 ms).
  internal::CycleClockNanosPerTick();
  if (!internal::StartTraceWindow(options.records_per_thread)) {
    return "a scheduling trace is being recorded already (StopTracing() ends it)";
  }
  internal::GroupStats::SampleEveryReadinessForTrace(true);
  return "";
}

TraceSummary StopTracing(std::ostream& out) {
  if (!internal::TraceWindowOpen()) return TraceSummary{};  // nothing was recording
  std::vector<internal::TraceThreadLog> logs = internal::StopTraceWindow();
  internal::GroupStats::SampleEveryReadinessForTrace(false);
  const internal::TraceStats stats =
      internal::WriteChromeTrace(std::move(logs), internal::CycleClockNanosPerTick(), out);
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

