// Copyright 2026 The Spindle Authors.
//
// Chaos scheduling (--fiber_chaos_seed=N, 0 = off): a test mode that makes the
// scheduler take legal but unusual decisions, so that tests on a small machine meet the
// interleavings a big one produces. Nothing here changes what is correct: every choice
// it makes is one the runtime could make anyway under another timing.
//
// What it perturbs (the callers are named; each is a no-op unless chaos is on):
//   Decisions (the order in which fibers run and where; only in runs with decisions,
//   see "Two kinds of runs"):
//     D1. Random picks. A worker that takes a ready fiber sometimes takes up to three
//         more from its own sources, runs a random one of them and queues the others
//         again in random order (ChaosPick() in group_chaos.h). A fiber not yet begun
//         goes back unclaimed, so its joiner may still run it inline.
//     D2. Migrations. A fiber made ready (woken, yielded or put back by D1) is sometimes
//         queued on another scheduling group of the same NUMA node, or on its group's
//         shared queue instead of a worker's local queue (SchedulingGroup::ChaosQueue).
//         scheduling_group_local fibers never leave their group.
//     D3. Forced yields. A fiber that comes back from a park sometimes yields at once
//         (ParkFiber, parking.cc): only there, because a fiber that was allowed to park
//         at that point holds no lock that a yield could hurt; a yield after an arbitrary
//         user call (Event::Set under a std::mutex) could deadlock a correct program.
//   Timing (where the protocols are most fragile):
//     P.  Short random pauses: spin for up to a few microseconds, give up the CPU, or
//         sleep up to 100 us, at every step of the idle and wake-up protocols
//         (SchedulerTestPoint), in WaitSlot's wait and wake, in ParkFiber() between becoming
//         Waiting and switching out, in TimedWaiter's park and wake, and in the
//         TimerWorker's and reactor's loops.
//
// Two kinds of runs. Every decision above queues a fiber again, and a push carries its
// own wake-up, which can rescue a fiber whose wake-up the protocol lost: with the S3
// hand-over of strategy v1 removed (the many-core lost wake-up), runs with pauses only
// fail scheduler_stress_test's pairs on 2 cores far more often than runs with
// decisions too. So each runtime started under a seed is, by a draw from the
// seed and the number of runtimes started before it, either a run of pauses only or a
// run of pauses and decisions; the log line at start says which.
//
// Reproducible. Decisions and pauses draw from two separate per-thread streams
// (xoshiro256**, seeded with splitmix64). A worker thread's decision stream is a
// function of the seed and of its group and worker number only (ChaosBindWorker), and
// pauses never draw from it, so on one worker a program whose fibers are all started by
// fibers runs in the same order every time with the same seed (a test checks it). Other
// threads (timer threads, plain threads) get streams numbered in the order they first
// draw: reproducible only when those threads are.
//
// Compiled in only with the test seams (test_seams.h: --config=seams, and the asan and
// tsan configs): other builds, -c opt among them, have none of it, and refuse a nonzero
// --fiber_chaos_seed by name. Cost in a build with seams while off: one relaxed load of
// a global and a predicted branch at each point above. When on: tests run a few times
// slower; never use it in production.
//
// Thread-safety: StartChaos/StopChaos by the runtime's owner, before its workers start
// and after they stop; everything else from any thread.

#ifndef SPINDLE_RUNTIME_INTERNAL_CHAOS_H_
#define SPINDLE_RUNTIME_INTERNAL_CHAOS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {

class SchedulingGroup;

namespace chaos_internal {
// relaxed everywhere: set before the runtime's workers start and cleared after they
// stop (thread creation and join order it for them); other threads only ever see a
// mode that is on or off as a whole, and either is correct.
extern std::atomic<bool> g_on;
extern std::atomic<bool> g_decisions;
}  // namespace chaos_internal

// Every function below is defined only in builds with the test seams; callers name
// them only inside `if constexpr (kTestSeams)` (test_seams.h). ChaosPause() is the one
// that any build may call: it is empty without the seams.

// Whether chaos mode is on (P, the pauses).
inline bool ChaosOn() { return chaos_internal::g_on.load(std::memory_order_relaxed); }
// Whether it also changes decisions (D1-D3) in this runtime (see "Two kinds of runs").
inline bool ChaosDecides() {
  return chaos_internal::g_decisions.load(std::memory_order_relaxed);
}

// A migration target: a group and its NUMA node (as in the layout).
struct ChaosGroup {
  SchedulingGroup* group;
  int numa_node;
};

// Turns chaos on with `seed` (nonzero) for a runtime whose groups are `groups`. Returns
// whether this run also changes decisions (chosen from the seed and the number of
// runtimes started before under chaos, in the running test if a test key is set, unless
// a test forced it).
bool StartChaos(std::uint64_t seed, std::vector<ChaosGroup> groups);
// Tests: -1 (the default) lets StartChaos() choose; 0 pauses only; 1 pauses and
// decisions.
void SetChaosDecisionsForTesting(int decisions);
// Tests: a key of the test now running (nonzero; 0: none), set as it starts. While one
// is set, StartChaos() chooses from the seed, the key and the number of runtimes this
// test started before, not from the number started in the whole process, so what a
// test's runtimes do under chaos does not depend on which tests ran before it
// (--gtest_filter, sharding, --gtest_shuffle).
void SetChaosTestKeyForTesting(std::uint64_t key);
// Turns it off (the groups may then be destroyed).
void StopChaos();
// The seed in force (0 when off).
std::uint64_t ChaosSeed();

// The calling thread is worker `worker` of group `group`: its decision stream becomes a
// function of (seed, group, worker) alone. Call when a worker thread starts.
void ChaosBindWorker(std::size_t group, std::size_t worker);

// Decisions, from the calling thread's decision stream. True with probability 1/n.
bool ChaosOneIn(std::uint32_t n);
// Uniform in [0, n), n >= 1.
std::uint64_t ChaosBelow(std::uint64_t n);
// A group of NUMA node `numa_node`, chosen uniformly (`home` when it is the only one).
SchedulingGroup* ChaosGroupOnNode(SchedulingGroup* home, int numa_node);

// What chaos mode did since StartChaos() (relaxed counts, for tests and the log).
enum class ChaosEvent { kPick, kGroupMove, kSharedQueue, kForcedYield, kPause, kCount };
void ChaosCount(ChaosEvent event);
std::uint64_t ChaosEvents(ChaosEvent event);

// P: a random pause (often none), from the calling thread's timing stream. Nothing at
// all in a build without the test seams (always_inline: not even an empty function's
// symbol at -O0).
void ChaosPauseSlow();
__attribute__((always_inline)) inline void ChaosPause() {
  if constexpr (kTestSeams) {
    if (ChaosOn()) ChaosPauseSlow();
  }
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_CHAOS_H_
