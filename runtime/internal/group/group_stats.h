// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_GROUP_STATS_H_
#define SPINDLE_RUNTIME_INTERNAL_GROUP_STATS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/metrics.h"

namespace spindle::internal {

// A scheduling group's statistics that do not depend on its strategy: fibers started,
// begun, run and run inline, steals in and out, and the ready-to-run latency; plus the
// readiness sampling that feeds the latency (StampReady()). See runtime/metrics.h for
// what each figure means.
//
// Thread-safety: the Count*() and NoteRun() calls for worker `w` (w < workers) are made
// by that worker's thread only; with any other `worker` (kNoWorker, or a thread that is
// no worker of this group) from any thread. CountSteal*() from any thread. The getters
// are relaxed snapshots, from any thread. Owned by its SchedulingGroup, which it must
// not outlive.
class GroupStats {
 public:
  // As many as a group may have (kMaxWorkersPerGroup, checked in scheduling_group.h).
  static constexpr std::size_t kMaxWorkers = 64;

  explicit GroupStats(std::size_t workers)
      : workers_(workers), nanos_per_tick_(CycleClockNanosPerTick()) {}
  GroupStats(const GroupStats&) = delete;
  GroupStats& operator=(const GroupStats&) = delete;

  // ---- Counting: `worker` is the calling thread's worker number in the group, or any
  // value >= workers when it is none of them.

  void CountStarted(std::size_t worker, std::uint64_t n) {
    CountOn(worker, &WorkerCells::fibers_started, fibers_started_elsewhere_, n);
  }
  void CountBegun(std::size_t worker) {
    CountOn(worker, &WorkerCells::fibers_begun, fibers_begun_elsewhere_, 1);
  }
  // A fiber of the group has ended on worker `worker` (its stack reclaimed).
  void CountEnded(std::size_t worker) {
    CountOn(worker, &WorkerCells::fibers_ended, fibers_ended_elsewhere_, 1);
  }
  void CountRunInline(std::size_t worker) {
    CountOn(worker, &WorkerCells::fibers_run_inline, fibers_run_inline_elsewhere_, 1);
  }
  // Worker `worker` (< workers, its own thread) has made a fiber Running whose
  // readiness was stamped `stamp` (0: not sampled). Inline: it is on every switch.
  void NoteRun(std::size_t worker, std::uint64_t stamp) {
    // Single writer (this worker's thread): no read-modify-write.
    WorkerCells& cells = cells_[worker];
    cells.fibers_run.Add(1);
    if (stamp != 0) {
      const std::uint64_t now = CycleClockNow();
      cells.ready_latency.Record(
          now > stamp ? static_cast<std::uint64_t>(static_cast<double>(now - stamp) *
                                                   nanos_per_tick_)
                      : 0);
    }
  }
  // Worker `worker` (its own thread) yielded and kept running: nothing else was ready.
  // Only for the hog monitor's RunProgress (the fiber offered its worker up). Off the
  // switching path: a yield that switches counts in NoteRun.
  void NoteKeptRunning(std::size_t worker) { cells_[worker].kept_running.Add(1); }
  // A worker of this group stole `n` entries from a group on its node (or not).
  void CountStealIn(bool same_node, std::uint64_t n = 1) {
    (same_node ? steals_in_same_node_ : steals_in_cross_node_).Add(n);
  }
  // Another group stole `n` of ours.
  void CountStealOut(std::uint64_t n = 1) { steals_out_.Add(n); }
  // An idle round of one of our workers that had other groups to steal from, and an
  // attempt at one of them (IdlePath::TryOtherGroups; per-thread cells).
  void CountStealRound() { steal_rounds_.Add(1); }
  void CountStealAttempt() { steal_attempts_.Add(1); }
  // The hog monitor (its own thread): a fiber of ours reported for holding its worker,
  // and `n` fibers moved from behind such a fiber to where its siblings take them.
  void CountHogReported() { hogs_reported_.Add(1); }
  void CountHogFibersMoved(std::uint64_t n) { hog_fibers_moved_.Add(n); }

  // ---- Reading (relaxed snapshots, any thread).

  std::uint64_t fibers_run() const;  // fibers made Running by our workers
  std::uint64_t fibers_run(std::size_t worker) const { return cells_[worker].fibers_run.Read(); }
  // Worker `worker`'s scheduling points: fibers made Running, yields that kept running
  // and children its fiber ran inline through join() (a fork-join loop is not stuck).
  // A value that stays put while the worker is not in its idle path means one fiber has
  // held it all along without one (the hog monitor; relaxed snapshots).
  std::uint64_t RunProgress(std::size_t worker) const {
    const WorkerCells& cells = cells_[worker];
    return cells.fibers_run.Read() + cells.kept_running.Read() +
           cells.fibers_run_inline.Read();
  }
  std::uint64_t fibers_started() const;
  // New fibers given a stack here (their first run), and fibers started here that a
  // joiner ran inline (they never get a stack).
  std::uint64_t fibers_begun() const;
  std::uint64_t fibers_run_inline() const;
  std::uint64_t fibers_ended() const;
  std::uint64_t steals_in_same_node() const { return steals_in_same_node_.Read(); }
  std::uint64_t steals_in_cross_node() const { return steals_in_cross_node_.Read(); }
  std::uint64_t steals_out() const { return steals_out_.Read(); }
  std::uint64_t steal_rounds() const { return steal_rounds_.Read(); }
  std::uint64_t steal_attempts() const { return steal_attempts_.Read(); }
  std::uint64_t hogs_reported() const { return hogs_reported_.Read(); }
  std::uint64_t hog_fibers_moved() const { return hog_fibers_moved_.Read(); }
  // Ready-to-run latency samples (nanoseconds; see StampReady()) of all workers, or of
  // worker `worker`.
  HistogramSnapshot ready_latency() const;
  HistogramSnapshot ready_latency(std::size_t worker) const;

  // ---- Readiness sampling (all groups).

  // One readiness in ReadySamplePeriod() is timed (Go samples scheduling latency the
  // same way, 1 in 8): a cycle-clock read costs tens of cycles (a VM may make it more),
  // and at 1 in 8 the two reads per sample weigh on the yield path. The default, 1 in
  // 64, still gives a million-fiber workload 15k samples;
  // --fiber_ready_latency_sample_period sets it.
  static constexpr std::uint32_t kDefaultReadySamplePeriod = 64;
  // Sets the period (a power of two) for every group. Only while no runtime runs
  // (StartRuntime() calls it before it creates the groups).
  static void SetReadySamplePeriod(std::uint32_t period);
  static std::uint32_t ReadySamplePeriod() { return ReadySampleMask() + 1; }
  // While a scheduling trace records (runtime/trace.h): every readiness is stamped, so
  // every switch takes MakeRunning()'s general path (parking.h), where the trace's run
  // record is; the inline path then needs no check of its own (a check there cost the
  // yield path 2.4% of its instructions). The period set by SetReadySamplePeriod() comes
  // back when the trace stops. The ready-to-run latency samples every readiness
  // meanwhile. Thread-safe; calls must not overlap.
  static void SampleEveryReadinessForTrace(bool on);
  // Marks `fiber`/`desc` as made Ready now, for the ready-to-run latency (one in
  // ReadySamplePeriod() readinesses is stamped with the cycle clock; the rest with 0).
  // A fiber's stamp is written only when sampled, and cleared by the worker that takes
  // it (MakeRunning(), parking.h): a waker on another CPU must not write the
  // wakee's control block on every wake-up (that line then bounces between the CPUs
  // and slows every round trip). The caller owns `fiber`/`desc` until it queues it.
  static void StampReady(FiberEntity* fiber) {
    if (ThisThreadSamplesReadiness()) fiber->ready_stamp = CycleClockNow();
  }
  // StampReady() by worker `worker` of this group on its own thread, or by any thread
  // with any other `worker`: a worker counts in its own cells, without the thread-local
  // look-up (the yield path stamps on every switch).
  void StampReadyOn(std::size_t worker, FiberEntity* fiber) {
    if (worker < workers_) {
      if ((++cells_[worker].ready_tick & ReadySampleMask()) == 0) {
        fiber->ready_stamp = CycleClockNow();
      }
    } else {
      StampReady(fiber);
    }
  }
  // StampReady() by a worker that counts its switches anyway (the yield path's
  // BusyPoll::Tick; no count of its own to keep): the readiness that got count `tick`
  // is sampled when bits 32 and up of tick times the golden ratio's 64-bit constant are
  // 0 under the mask. Those bits step evenly through their range for any regular run
  // of counts, so about one yield in ReadySamplePeriod() is sampled even when yields
  // get only every other count (a worker's parks and idle passes count too: sampling
  // on the low bits could then miss every yield).
  static void StampReadyAtTick(std::uint64_t tick, FiberEntity* fiber) {
    if (((tick * 0x9e3779b97f4a7c15ULL) >> 32 & ReadySampleMask()) == 0) {
      fiber->ready_stamp = CycleClockNow();
    }
  }
  static void StampReady(FiberDesc* desc) {
    desc->ready_stamp = (desc->id & ReadySampleMask()) == 0 ? CycleClockNow() : 0;
  }

 private:
  // One set of cells per worker, each written by that worker's thread only, so counting
  // a fiber is a plain store on a line no other thread writes.
  struct alignas(64) WorkerCells {
    SingleWriterCounter fibers_run;
    // The same figures as fibers_*_elsewhere_ below, counted by this worker's thread.
    SingleWriterCounter fibers_started;
    SingleWriterCounter fibers_begun;
    SingleWriterCounter fibers_run_inline;
    SingleWriterCounter fibers_ended;
    SingleWriterCounter kept_running;  // NoteKeptRunning()
    SingleWriterHistogram ready_latency;  // nanoseconds
    std::uint32_t ready_tick = 0;  // StampReadyOn()'s count of readinesses
  };

  // Adds `n` to `field` of worker `worker`'s cells when the calling thread is that
  // worker of this group, else to `elsewhere` (a thread of another group, a plain
  // thread). A worker's own cell is a load and a store on a line it already writes; a
  // ThreadCounter costs a call to find the thread's row, which the spawn path would pay
  // twice per fiber.
  void CountOn(std::size_t worker, SingleWriterCounter WorkerCells::*field,
               ThreadCounter& elsewhere, std::uint64_t n) {
    if (worker < workers_) {
      (cells_[worker].*field).Add(n);
    } else {
      elsewhere.Add(n);
    }
  }
  // `field` summed over the workers, plus `elsewhere` (if any).
  std::uint64_t SumOverWorkers(SingleWriterCounter WorkerCells::*field,
                               const ThreadCounter* elsewhere) const;
  // Whether the calling thread's next readiness is one of its 1 in ReadySamplePeriod()
  // (a per-thread tick, read out of line: a fiber may move threads between two calls).
  static bool ThisThreadSamplesReadiness();
  // The period minus 1. relaxed: written only while no runtime runs; thread creation
  // orders it for the workers, and StartRuntime() for the threads that start fibers.
  static std::uint32_t ReadySampleMask() {
    return ready_sample_mask_.load(std::memory_order_relaxed);
  }
  static std::atomic<std::uint32_t> ready_sample_mask_;

  const std::size_t workers_;
  const double nanos_per_tick_;  // the cycle clock's (ready-to-run latency)
  WorkerCells cells_[kMaxWorkers];
  // Bumped from any thread that is not one of our workers (see CountOn), and the
  // steals: per-thread cells, no shared read-modify-write.
  ThreadCounter fibers_started_elsewhere_;
  ThreadCounter fibers_begun_elsewhere_;
  ThreadCounter fibers_run_inline_elsewhere_;
  ThreadCounter fibers_ended_elsewhere_;
  ThreadCounter steals_in_same_node_;
  ThreadCounter steals_in_cross_node_;
  ThreadCounter steals_out_;
  ThreadCounter steal_rounds_;
  ThreadCounter steal_attempts_;
  ThreadCounter hogs_reported_;
  ThreadCounter hog_fibers_moved_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GROUP_STATS_H_
