// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group/group_stats.h"

#include "glog/logging.h"

namespace spindle::internal {

std::atomic<std::uint32_t> GroupStats::ready_sample_mask_{kDefaultReadySamplePeriod - 1};

void GroupStats::SetReadySamplePeriod(std::uint32_t period) {
  CHECK(period >= 1 && (period & (period - 1)) == 0)
      << "ready-to-run sample period " << period << " is not a power of two";
  ready_sample_mask_.store(period - 1, std::memory_order_relaxed);  // see ReadySampleMask()
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
