// Copyright 2026 The Spindle Authors.

#include "runtime/metrics.h"

#include <cstdio>
#include <sstream>

#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/observability/deadlock_report.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/idle/group_poller.h"
#include "runtime/internal/runtime_impl.h"
#include "timer/internal/timer_worker.h"

namespace spindle {
namespace {

std::uint64_t Minus(std::uint64_t now, std::uint64_t before) {
  // Counters only grow; a snapshot read cell by cell may still see a later
  // total before an earlier one of the same counter in another snapshot: never
  // below 0.
  return now >= before ? now - before : 0;
}

// Adds `from`'s counters, gauges and latency samples to `into`'s.
void Accumulate(GroupMetrics& into, const GroupMetrics& from) {
  into.workers += from.workers;
  into.fibers_started += from.fibers_started;
  into.fibers_begun += from.fibers_begun;
  into.fibers_run_inline += from.fibers_run_inline;
  into.fibers_run += from.fibers_run;
  into.steals_in_same_node += from.steals_in_same_node;
  into.steals_in_cross_node += from.steals_in_cross_node;
  into.steals_out += from.steals_out;
  into.steal_rounds += from.steal_rounds;
  into.steal_attempts += from.steal_attempts;
  into.steals_in_group += from.steals_in_group;
  into.wakeups += from.wakeups;
  into.sleeps += from.sleeps;
  into.spurious_wakeups += from.spurious_wakeups;
  into.timers_fired += from.timers_fired;
  into.hogs += from.hogs;
  into.hog_fibers_moved += from.hog_fibers_moved;
  into.reactor_polls += from.reactor_polls;
  into.reactor_events += from.reactor_events;
  into.run_queue_spills += from.run_queue_spills;
  into.run_queue_full_waits += from.run_queue_full_waits;
  into.run_queue_depth += from.run_queue_depth;
  into.local_queue_depth += from.local_queue_depth;
  into.ready_latency.MergeFrom(from.ready_latency);
}

GroupMetrics GroupSince(const GroupMetrics& now, const GroupMetrics& before) {
  GroupMetrics d = now;  // identity and gauges: now's
  d.fibers_started = Minus(now.fibers_started, before.fibers_started);
  d.fibers_begun = Minus(now.fibers_begun, before.fibers_begun);
  d.fibers_run_inline = Minus(now.fibers_run_inline, before.fibers_run_inline);
  d.fibers_run = Minus(now.fibers_run, before.fibers_run);
  d.steals_in_same_node = Minus(now.steals_in_same_node, before.steals_in_same_node);
  d.steals_in_cross_node = Minus(now.steals_in_cross_node, before.steals_in_cross_node);
  d.steals_out = Minus(now.steals_out, before.steals_out);
  d.steal_rounds = Minus(now.steal_rounds, before.steal_rounds);
  d.steal_attempts = Minus(now.steal_attempts, before.steal_attempts);
  d.steals_in_group = Minus(now.steals_in_group, before.steals_in_group);
  d.wakeups = Minus(now.wakeups, before.wakeups);
  d.sleeps = Minus(now.sleeps, before.sleeps);
  d.spurious_wakeups = Minus(now.spurious_wakeups, before.spurious_wakeups);
  d.timers_fired = Minus(now.timers_fired, before.timers_fired);
  d.hogs = Minus(now.hogs, before.hogs);
  d.hog_fibers_moved = Minus(now.hog_fibers_moved, before.hog_fibers_moved);
  d.reactor_polls = Minus(now.reactor_polls, before.reactor_polls);
  d.reactor_events = Minus(now.reactor_events, before.reactor_events);
  d.run_queue_spills = Minus(now.run_queue_spills, before.run_queue_spills);
  d.run_queue_full_waits = Minus(now.run_queue_full_waits, before.run_queue_full_waits);
  d.ready_latency = now.ready_latency.Since(before.ready_latency);
  for (std::size_t w = 0; w < d.per_worker.size() && w < before.per_worker.size(); ++w) {
    WorkerMetrics& dw = d.per_worker[w];
    const WorkerMetrics& bw = before.per_worker[w];
    dw.fibers_run = Minus(dw.fibers_run, bw.fibers_run);
    dw.sleeps = Minus(dw.sleeps, bw.sleeps);
    dw.spurious_wakeups = Minus(dw.spurious_wakeups, bw.spurious_wakeups);
    dw.ready_latency = dw.ready_latency.Since(bw.ready_latency);
  }
  return d;
}

}  // namespace

GroupMetrics RuntimeMetrics::Total() const {
  GroupMetrics total;
  for (const GroupMetrics& group : groups) Accumulate(total, group);
  return total;
}

RuntimeMetrics RuntimeMetrics::Since(const RuntimeMetrics& earlier) const {
  RuntimeMetrics delta = *this;
  delta.deadlocks = Minus(deadlocks, earlier.deadlocks);
  for (std::size_t g = 0; g < delta.groups.size() && g < earlier.groups.size(); ++g) {
    delta.groups[g] = GroupSince(groups[g], earlier.groups[g]);
  }
  for (std::size_t p = 0; p < delta.pools.size() && p < earlier.pools.size(); ++p) {
    PoolMetrics& d = delta.pools[p];
    const PoolMetrics& before = earlier.pools[p];
    d.fibers_started = Minus(d.fibers_started, before.fibers_started);
    d.started_past_cap = Minus(d.started_past_cap, before.started_past_cap);
    d.refused_at_cap = Minus(d.refused_at_cap, before.refused_at_cap);
    d.refused_no_stack = Minus(d.refused_no_stack, before.refused_no_stack);
    d.ready_latency = d.ready_latency.Since(before.ready_latency);
  }
  return delta;
}

RuntimeMetrics GetRuntimeMetrics() {
  internal::Runtime& runtime = internal::Runtime::Get();
  RuntimeMetrics metrics;
  metrics.live_fibers = internal::GetLiveFiberCount();
  metrics.deadlocks = internal::DeadlocksReported();
  for (std::size_t g = 0; g < runtime.group_count(); ++g) {
    const internal::SchedulingGroup& group = *runtime.group(g);
    const internal::IdleNotifier& notifier = group.strategy()->notifier();
    if (g == 0) metrics.strategy = group.options().strategy;
    GroupMetrics m;
    m.index = g;
    m.pool = group.pool();
    m.numa_node = group.numa_node();
    m.workers = group.size();
    m.fibers_started = group.stats().fibers_started();
    m.fibers_begun = group.stats().fibers_begun();
    m.fibers_run_inline = group.stats().fibers_run_inline();
    m.fibers_run = group.stats().fibers_run();
    m.steals_in_same_node = group.stats().steals_in_same_node();
    m.steals_in_cross_node = group.stats().steals_in_cross_node();
    m.steals_out = group.stats().steals_out();
    m.steal_rounds = group.stats().steal_rounds();
    m.steal_attempts = group.stats().steal_attempts();
    m.hogs = group.stats().hogs_reported();
    m.hog_fibers_moved = group.stats().hog_fibers_moved();
    const internal::StrategyStats stats = group.strategy()->stats();
    m.steals_in_group = stats.steals_in_group;
    m.wakeups = stats.wakeups;
    m.run_queue_spills = stats.run_queue_spills;
    m.run_queue_full_waits = stats.run_queue_full_waits;
    m.run_queue_depth = stats.global_queue_size;
    m.local_queue_depth = stats.local_queue_size;
    if (const internal::TimerWorker* timers = internal::TimerWorkerFor(&group)) {
      m.timers_fired = timers->fired();
    }
    if (const internal::GroupPoller* poller = group.strategy()->poller()) {
      const internal::GroupPoller::Counters counters = poller->counters();
      m.reactor_polls = counters.polls;
      m.reactor_events = counters.events;
    }
    for (std::size_t w = 0; w < group.size(); ++w) {
      WorkerMetrics worker;
      worker.index = w;
      worker.fibers_run = group.stats().fibers_run(w);
      worker.sleeps = notifier.sleeps(w);
      worker.spurious_wakeups = notifier.spurious_wakeups(w);
      if (w < stats.local_queue_sizes.size()) {
        worker.local_queue_depth = stats.local_queue_sizes[w];
      }
      worker.ready_latency = group.stats().ready_latency(w);
      m.sleeps += worker.sleeps;
      m.spurious_wakeups += worker.spurious_wakeups;
      m.ready_latency.MergeFrom(worker.ready_latency);
      m.per_worker.push_back(std::move(worker));
    }
    metrics.groups.push_back(std::move(m));
  }
  for (std::size_t p = 0; p < runtime.pool_count(); ++p) {
    const internal::FiberPoolState& pool = *runtime.pool(p);
    PoolMetrics m;
    m.name = pool.name();
    m.index = p;
    m.workers = pool.plan().workers;
    m.groups = pool.groups().size();
    m.max_fibers = pool.plan().max_fibers;
    std::uint64_t ended = 0;
    for (const internal::SchedulingGroup* group : pool.groups()) {
      const GroupMetrics& g = metrics.groups[group->index()];
      m.queued_fibers += g.run_queue_depth + g.local_queue_depth;
      m.fibers_started += g.fibers_started;
      // Read after the starts: a fiber's end is seen only after its start.
      ended += group->stats().fibers_ended() + g.fibers_run_inline;
      m.ready_latency.MergeFrom(g.ready_latency);
    }
    if (const internal::PoolAdmission* admission = pool.admission()) {
      m.live_fibers = admission->live();
      m.started_past_cap = admission->past_cap_starts();
    } else {
      m.live_fibers = Minus(m.fibers_started, ended);
    }
    m.refused_at_cap = pool.refused_at_cap();
    m.refused_no_stack = pool.refused_no_stack();
    metrics.pools.push_back(std::move(m));
  }
  return metrics;
}

std::string FormatPrometheus(const RuntimeMetrics& metrics) {
  std::ostringstream out;
  const auto family = [&](const char* name, const char* type, const char* help) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  const auto per_group = [&](const char* name, const char* type, const char* help,
                             std::uint64_t GroupMetrics::*field) {
    family(name, type, help);
    for (const GroupMetrics& g : metrics.groups) {
      out << name << "{group=\"" << g.index << "\"} " << g.*field << '\n';
    }
  };
  family("spindle_live_fibers", "gauge", "Fibers started and not yet finished.");
  out << "spindle_live_fibers " << metrics.live_fibers << '\n';
  family("spindle_deadlocks_total", "counter",
         "Cycles of fibers waiting on each other's Mutexes reported by "
         "--fiber_deadlock_report_s.");
  out << "spindle_deadlocks_total " << metrics.deadlocks << '\n';
  per_group("spindle_fibers_started_total", "counter", "New fibers queued to the group.",
            &GroupMetrics::fibers_started);
  per_group("spindle_fibers_begun_total", "counter",
            "New fibers given a stack by the group (their first run).",
            &GroupMetrics::fibers_begun);
  per_group("spindle_fibers_run_inline_total", "counter",
            "Fibers started in the group and run inline by their joiner.",
            &GroupMetrics::fibers_run_inline);
  per_group("spindle_fiber_runs_total", "counter",
            "Times the group's workers made a fiber Running.", &GroupMetrics::fibers_run);
  per_group("spindle_steals_in_same_node_total", "counter",
            "Fibers the group's workers stole from groups on their NUMA node.",
            &GroupMetrics::steals_in_same_node);
  per_group("spindle_steals_in_cross_node_total", "counter",
            "Fibers the group's workers stole from groups on other NUMA nodes.",
            &GroupMetrics::steals_in_cross_node);
  per_group("spindle_steals_out_total", "counter",
            "The group's fibers that other groups stole.", &GroupMetrics::steals_out);
  per_group("spindle_steal_rounds_total", "counter",
            "Idle rounds of the group's workers that had other groups to steal from.",
            &GroupMetrics::steal_rounds);
  per_group("spindle_steal_attempts_total", "counter",
            "Attempts of the group's workers to steal from another group.",
            &GroupMetrics::steal_attempts);
  per_group("spindle_steals_in_group_total", "counter",
            "Fibers taken from a sibling worker's local queue (v2).",
            &GroupMetrics::steals_in_group);
  per_group("spindle_wakeups_total", "counter", "Sleeping workers woken.",
            &GroupMetrics::wakeups);
  per_group("spindle_sleeps_total", "counter", "Times a worker went to sleep.",
            &GroupMetrics::sleeps);
  per_group("spindle_spurious_wakeups_total", "counter",
            "Sleeps after which the worker found no fiber before sleeping again.",
            &GroupMetrics::spurious_wakeups);
  per_group("spindle_timers_fired_total", "counter",
            "Timers fired by the group's timer thread.", &GroupMetrics::timers_fired);
  per_group("spindle_hogs_total", "counter",
            "Fibers that held a worker past --fiber_hog_report_ms without switching.",
            &GroupMetrics::hogs);
  per_group("spindle_hog_fibers_moved_total", "counter",
            "Fibers moved from behind a fiber that held its worker to where its "
            "siblings take them.",
            &GroupMetrics::hog_fibers_moved);
  per_group("spindle_reactor_polls_total", "counter",
            "epoll_wait calls of the group's IO reactor (since process start).",
            &GroupMetrics::reactor_polls);
  per_group("spindle_reactor_events_total", "counter",
            "Descriptor events returned by the group's IO reactor (since "
            "process start).",
            &GroupMetrics::reactor_events);
  per_group("spindle_run_queue_spills_total", "counter",
            "Fibers that found the group's shared queue full and went to its overflow "
            "list.",
            &GroupMetrics::run_queue_spills);
  per_group("spindle_run_queue_full_waits_total", "counter",
            "Fibers started from threads that are not the runtime's that waited for room "
            "in the group's full shared queue.",
            &GroupMetrics::run_queue_full_waits);
  per_group("spindle_run_queue_depth", "gauge", "Fibers in the group's shared queue now.",
            &GroupMetrics::run_queue_depth);
  per_group("spindle_local_queue_depth", "gauge",
            "Fibers in the group's workers' local queues now (v2).",
            &GroupMetrics::local_queue_depth);

  // One series of a latency histogram family, labelled `label` (group="0", pool="x").
  const auto histogram = [&](const char* name, const std::string& label, const Histogram& h) {
    char le[32];
    // Bounds at powers of two nanoseconds (bucket edges of the log histogram,
    // so the cumulative counts are exact): 2 ns .. 2^kHistogramMaxLog2 ns.
    std::uint64_t cumulative = 0;
    std::size_t b = 0;
    for (std::size_t log2 = 1; log2 <= internal::kHistogramMaxLog2; ++log2) {
      const std::uint64_t bound = std::uint64_t{1} << log2;  // values < bound
      while (b < h.buckets.size() && internal::HistogramBucketLowerBound(b) < bound) {
        cumulative += h.buckets[b++];
      }
      // le is "<=": values below 2^k ns are those <= 2^k - 1 ns.
      std::snprintf(le, sizeof le, "%.9g", static_cast<double>(bound - 1) * 1e-9);
      out << name << "_bucket{" << label << ",le=\"" << le << "\"} " << cumulative << '\n';
    }
    out << name << "_bucket{" << label << ",le=\"+Inf\"} " << h.count << '\n';
    out << name << "_sum{" << label << "} " << h.sum * 1e-9 << '\n';
    out << name << "_count{" << label << "} " << h.count << '\n';
  };
  family("spindle_ready_latency_seconds", "histogram",
         "From a fiber becoming ready to it starting to run (one readiness in "
         "--fiber_ready_latency_sample_period, 64 by default, sampled).");
  for (const GroupMetrics& g : metrics.groups) {
    histogram("spindle_ready_latency_seconds", "group=\"" + std::to_string(g.index) + "\"",
              g.ready_latency);
  }

  // Pools (--fiber_pools).
  const auto per_pool = [&](const char* name, const char* type, const char* help,
                            std::uint64_t PoolMetrics::*field) {
    family(name, type, help);
    for (const PoolMetrics& p : metrics.pools) {
      out << name << "{pool=\"" << p.name << "\"} " << p.*field << '\n';
    }
  };
  per_pool("spindle_pool_live_fibers", "gauge",
           "Fibers of the pool started and not yet finished.", &PoolMetrics::live_fibers);
  per_pool("spindle_pool_queued_fibers", "gauge",
           "Ready fibers waiting in the pool's run queues.", &PoolMetrics::queued_fibers);
  per_pool("spindle_pool_max_fibers", "gauge",
           "The pool's cap on live fibers for the starts that may be refused; 0 = none.",
           &PoolMetrics::max_fibers);
  per_pool("spindle_pool_fibers_started_total", "counter", "New fibers queued to the pool.",
           &PoolMetrics::fibers_started);
  per_pool("spindle_pool_started_past_cap_total", "counter",
           "Plain starts (never refused) made while the pool was at its cap.",
           &PoolMetrics::started_past_cap);
  family("spindle_pool_refused_total", "counter",
         "Starts refused: the pool at its cap (cause=\"cap\") or no stack to be had "
         "(cause=\"stack\").");
  for (const PoolMetrics& p : metrics.pools) {
    out << "spindle_pool_refused_total{pool=\"" << p.name << "\",cause=\"cap\"} "
        << p.refused_at_cap << '\n';
    out << "spindle_pool_refused_total{pool=\"" << p.name << "\",cause=\"stack\"} "
        << p.refused_no_stack << '\n';
  }
  family("spindle_pool_ready_latency_seconds", "histogram",
         "The ready-to-run latency of the pool's groups together (sampled as "
         "spindle_ready_latency_seconds).");
  for (const PoolMetrics& p : metrics.pools) {
    histogram("spindle_pool_ready_latency_seconds", "pool=\"" + p.name + "\"",
              p.ready_latency);
  }
  return out.str();
}

}  // namespace spindle
