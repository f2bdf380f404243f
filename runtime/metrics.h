// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_METRICS_H_
#define SPINDLE_RUNTIME_METRICS_H_

// What the scheduler is doing, as numbers: a snapshot of every scheduling
// group's counters, queue depths and ready-to-run latency, and its Prometheus
// text form.
//
//   spindle::RuntimeMetrics before = spindle::GetRuntimeMetrics();
//   ... run a workload ...
//   spindle::GroupMetrics all =
//   spindle::GetRuntimeMetrics().Since(before).Total(); std::cout <<
//   all.ready_latency.Percentile(0.99) << " ns p99 ready-to-run\n";
//
// Costs, on the paths they are counted on: counters are per-thread (or
// per-worker) cells bumped with a plain load and store, never a shared
// read-modify-write; the ready-to-run latency reads the cycle clock twice for
// one readiness in 64 (GroupStats::kDefaultReadySamplePeriod; Go samples 1 in 8,
// which weighs on a yield-heavy workload) and nothing for the others. Reading a
// snapshot takes locks and walks every thread's cells: do it at most a few times a
// second, not per request. The cost figures are in the README.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/internal/base/metrics.h"

namespace spindle {

// A log-bucketed histogram (4 buckets per power of two) with Percentile(q),
// Mean(), count and sum; see runtime/internal/base/metrics.h. The ready-to-run
// latency is in nanoseconds.
using Histogram = internal::HistogramSnapshot;

// One worker of a group (counters since StartRuntime()).
struct WorkerMetrics {
  // The worker's index in its group, in [0, GroupMetrics::workers).
  std::size_t index = 0;
  std::uint64_t fibers_run = 0;         // times it made a fiber Running
  std::uint64_t sleeps = 0;             // times it went to sleep (futex or poller)
  std::uint64_t spurious_wakeups = 0;   // sleeps after which it found no fiber
                                        // before sleeping again
  std::uint64_t local_queue_depth = 0;  // v2: its runnext and local queue, now
  Histogram ready_latency;              // of the fibers it ran (sampled; ns)
};

// One scheduling group. Counters count since StartRuntime() unless noted;
// depths are gauges read now. Each figure is a relaxed snapshot: the figures
// agree with each other exactly only when the runtime is quiet.
struct GroupMetrics {
  // The group's index, in [0, GetSchedulingGroupCount()); 0 in Total().
  std::size_t index = 0;
  // Its pool's index in RuntimeMetrics::pools (0: the default pool; 0 in Total()).
  std::size_t pool = 0;
  int numa_node = -1;  // -1 when the runtime is not NUMA-aware
  std::size_t workers = 0;

  std::uint64_t fibers_started = 0;        // new fibers queued to this group
  std::uint64_t fibers_begun = 0;          // new fibers given a stack here (first run)
  std::uint64_t fibers_run_inline = 0;     // started here, run inline by their joiner
  std::uint64_t fibers_run = 0;            // times its workers made a fiber Running
  std::uint64_t steals_in_same_node = 0;   // fibers its workers stole on their node
  std::uint64_t steals_in_cross_node = 0;  // ... from groups on other nodes
  std::uint64_t steals_out = 0;            // its fibers that other groups stole
  // Idle rounds of its workers that had other groups to steal from, and the steal
  // attempts among them: a victim with --fiber_work_stealing_ratio N gets one attempt
  // every N rounds (per worker), so attempts <= rounds / N + 1 per worker and victim.
  std::uint64_t steal_rounds = 0;
  std::uint64_t steal_attempts = 0;
  std::uint64_t steals_in_group = 0;       // v2: taken from a sibling worker's queue
  std::uint64_t wakeups = 0;               // sleeping workers woken (a system call each)
  std::uint64_t sleeps = 0;                // summed over its workers
  std::uint64_t spurious_wakeups = 0;      // summed over its workers
  std::uint64_t timers_fired = 0;          // by its TimerWorker
  // Fibers that held a worker past --fiber_hog_report_ms without switching (each
  // reported once, with its stack, as a glog WARNING), and fibers moved from behind
  // such a fiber to where its siblings take them (--fiber_hog_rescue_ms; v2).
  std::uint64_t hogs = 0;
  std::uint64_t hog_fibers_moved = 0;
  // The group's IO reactor, if io/ is used: epoll_wait calls and descriptor
  // events (since the process started: a reactor outlives runtimes).
  std::uint64_t reactor_polls = 0;
  std::uint64_t reactor_events = 0;

  // Fibers that found the group's shared queue full and went to its overflow list
  // (v1, v2): a burst does this by design; a count that keeps growing says that
  // --fiber_run_queue_size is too small for the steady load.
  std::uint64_t run_queue_spills = 0;
  // Fibers started from threads that are not the runtime's that waited for room in the
  // full shared queue (v1, v2): back-pressure on a producer that outruns the workers.
  std::uint64_t run_queue_full_waits = 0;
  std::uint64_t run_queue_depth = 0;    // its shared (global) queue, now
  std::uint64_t local_queue_depth = 0;  // v2: all workers' local queues, now

  // From a fiber becoming Ready (started, woken, yielded) to a worker starting
  // to run it, in nanoseconds; one readiness in --fiber_ready_latency_sample_period
  // (64 by default) is timed.
  Histogram ready_latency;

  // Its workers, in index order; empty in Total(). Since() subtracts their counters and
  // histograms worker by worker.
  std::vector<WorkerMetrics> per_worker;
};

// One pool of workers (--fiber_pools): its groups' figures added up, and its admission.
// Counters since StartRuntime(); gauges read now; relaxed snapshots, as GroupMetrics.
struct PoolMetrics {
  std::string name;        // "default" for the default pool
  std::size_t index = 0;   // in [0, pools.size())
  std::size_t workers = 0;
  std::size_t groups = 0;
  std::uint64_t max_fibers = 0;  // its cap; 0: none
  // Fibers of the pool started and not yet finished, now (exact for a pool with a cap:
  // the count the cap is checked against; otherwise started - ended, a snapshot).
  std::uint64_t live_fibers = 0;
  // Ready fibers waiting in its groups' queues (shared and local), now.
  std::uint64_t queued_fibers = 0;
  std::uint64_t fibers_started = 0;    // new fibers queued to its groups
  // Plain starts (never refused) made while the pool was at or past its cap.
  std::uint64_t started_past_cap = 0;
  // Starts refused by the TryStart forms (and so io::Server's connections): the pool at
  // its cap (a waiting form counts once, when it gives up), or no stack to be had.
  std::uint64_t refused_at_cap = 0;
  std::uint64_t refused_no_stack = 0;
  Histogram ready_latency;  // its groups', merged (ns)
};

// A snapshot of the whole runtime (GetRuntimeMetrics()): its scheduling strategy, its
// live fibers and every group, in group order. A plain value, safe to copy and read
// from any thread once taken.
struct RuntimeMetrics {
  std::string strategy;           // "v1", "v2" or "relaxed"
  std::uint64_t live_fibers = 0;  // started and not yet finished, now
  // Cycles of fibers waiting on each other's locks reported by --fiber_deadlock_report_s
  // since the process started.
  std::uint64_t deadlocks = 0;
  std::vector<GroupMetrics> groups;
  std::vector<PoolMetrics> pools;  // in pool order, the default pool first

  // Counters of all groups added up (gauges too; per_worker empty; index 0).
  GroupMetrics Total() const;
  // This snapshot minus an earlier one of the same runtime: what happened in
  // between. Counters and histograms are subtracted; gauges are this
  // snapshot's.
  RuntimeMetrics Since(const RuntimeMetrics& earlier) const;
};

// A snapshot of every group. Thread-safe; from fibers and plain threads while
// the runtime runs (CHECK-fails otherwise). Takes locks and walks per-thread
// cells: meant for periodic scraping, not hot paths.
RuntimeMetrics GetRuntimeMetrics();

// `metrics` in the Prometheus text exposition format (version 0.0.4): counters
// as spindle_*_total{group="G"}, gauges, and the ready-to-run latency as a
// histogram in seconds
// (spindle_ready_latency_seconds_bucket{group="G",le="..."}, _sum, _count); then each
// pool's figures as spindle_pool_*{pool="NAME"} (live and queued fibers, its cap,
// starts, refusals by cause, and its ready-to-run latency histogram).
std::string FormatPrometheus(const RuntimeMetrics& metrics);

}  // namespace spindle

#endif  // SPINDLE_RUNTIME_METRICS_H_
