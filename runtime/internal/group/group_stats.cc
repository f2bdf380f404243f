// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group/group_stats.h"

#include "glog/logging.h"

namespace spindle::internal {

std::atomic<std::uint32_t> GroupStats::ready_sample_mask_{kDefaultReadySamplePeriod - 1};

namespace {
// The mask SetReadySamplePeriod() chose, and whether a trace overrides it with 0.
std::atomic<std::uint32_t> g_period_mask{GroupStats::kDefaultReadySamplePeriod - 1};
std::atomic<bool> g_every_readiness{false};
}  // namespace

void GroupStats::SetReadySamplePeriod(std::uint32_t period) {
  CHECK(period >= 1 && (period & (period - 1)) == 0)
      << "ready-to-run sample period " << period << " is not a power of two";
  // relaxed: see ReadySampleMask(); a trace's override (below) stays while it records.
  g_period_mask.store(period - 1, std::memory_order_relaxed);
  if (!g_every_readiness.load(std::memory_order_relaxed)) {
    ready_sample_mask_.store(period - 1, std::memory_order_relaxed);
  }
}

void GroupStats::SampleEveryReadinessForTrace(bool on) {
  // relaxed: a worker that reads the old mask a moment longer samples a few readinesses
  // less; the trace misses the runs of those (documented in runtime/trace.h).
  g_every_readiness.store(on, std::memory_order_relaxed);
  ready_sample_mask_.store(on ? 0 : g_period_mask.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
}

bool GroupStats::ThisThreadSamplesReadiness() {
  thread_local std::uint32_t tick = 0;
  return (++tick & ReadySampleMask()) == 0;
}

std::uint64_t GroupStats::SumOverWorkers(SingleWriterCounter WorkerCells::*field,
                                         const ThreadCounter* elsewhere) const {
  std::uint64_t sum = elsewhere != nullptr ? elsewhere->Read() : 0;
  for (std::size_t w = 0; w < workers_; ++w) sum += (cells_[w].*field).Read();
  return sum;
}

std::uint64_t GroupStats::fibers_run() const {
  return SumOverWorkers(&WorkerCells::fibers_run, nullptr);
}

std::uint64_t GroupStats::fibers_started() const {
  return SumOverWorkers(&WorkerCells::fibers_started, &fibers_started_elsewhere_);
}

std::uint64_t GroupStats::fibers_begun() const {
  return SumOverWorkers(&WorkerCells::fibers_begun, &fibers_begun_elsewhere_);
}

std::uint64_t GroupStats::fibers_run_inline() const {
  return SumOverWorkers(&WorkerCells::fibers_run_inline, &fibers_run_inline_elsewhere_);
}

std::uint64_t GroupStats::fibers_ended() const {
  return SumOverWorkers(&WorkerCells::fibers_ended, &fibers_ended_elsewhere_);
}

HistogramSnapshot GroupStats::ready_latency() const {
  HistogramSnapshot all;
  for (std::size_t w = 0; w < workers_; ++w) cells_[w].ready_latency.AddTo(all);
  return all;
}

HistogramSnapshot GroupStats::ready_latency(std::size_t worker) const {
  HistogramSnapshot one;
  cells_[worker].ready_latency.AddTo(one);
  return one;
}

}  // namespace spindle::internal
