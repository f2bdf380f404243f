// Copyright 2026 The Spindle Authors.
//
// Starting and stopping the Spindle runtime, and running code in it from a plain thread.
//
//   int main(int argc, char** argv) {
//     gflags::ParseCommandLineFlags(&argc, &argv, true);  // --fiber_* flags, --flagfile
//     spindle::StartRuntime();
//     int answer = spindle::RunAsFiber([] { return 42; });
//     spindle::TerminateRuntime();
//   }

#ifndef SPINDLE_RUNTIME_RUNTIME_H_
#define SPINDLE_RUNTIME_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace spindle {

// Starts the scheduling groups and their workers as the --fiber_* flags say. A flag
// with a bad value stops the process with a message naming the flag, the value and the
// accepted range. Call once (again only after TerminateRuntime()), from a plain thread.
void StartRuntime();

// Like StartRuntime(), but returns a flag's validation error instead of stopping the
// process ("" when the runtime started). Calling it while the runtime runs still stops
// the process, as StartRuntime() does.
std::string TryStartRuntime();

// Waits until every fiber started so far (and every fiber they start) has finished,
// then stops the workers. Call from a plain thread, not from a fiber. While fibers
// remain after --fiber_terminate_grace_ms, it logs (glog WARNING) "TerminateRuntime:
// still waiting for N fibers" with the fiber dump, and again after each further grace
// period.
void TerminateRuntime();

// Runs `f` in a fiber and blocks the calling thread until it returns. Called from a
// fiber, it simply calls `f`.
void RunAsFiber(absl::AnyInvocable<void()> f);

// RunAsFiber() for an `f` that returns a value: returns what `f` returned (moved out).
// From a plain thread it needs a running runtime (else it stops the process with a
// message), and an exception escaping `f` stops the process as one escaping any fiber
// does; from a fiber, `f` is simply called, and its exception propagates.
template <class F, class R = std::invoke_result_t<F&>,
          class = std::enable_if_t<!std::is_void_v<R>>>
R RunAsFiber(F&& f) {
  std::optional<R> result;
  RunAsFiber(absl::AnyInvocable<void()>([&] { result.emplace(f()); }));
  return std::move(*result);
}

// How many scheduling groups the runtime runs. Thread-safe; callable while the runtime
// runs (without a running runtime it stops the process with a message).
std::size_t GetSchedulingGroupCount();
// How many workers the first scheduling group has. Thread-safe; callable while the
// runtime runs (without a running runtime it stops the process with a message).
std::size_t GetSchedulingGroupSize();
// How many fibers have been started and not yet finished, over all groups: a snapshot,
// stale once fibers start or finish meanwhile. Thread-safe; it never fails.
std::size_t GetFiberCount();

// One scheduling group's placement and counters since StartRuntime(). The counters are
// independent relaxed snapshots: consistent with each other only once the runtime is
// quiet.
struct SchedulingGroupStats {
  // The group's index, in [0, GetSchedulingGroupCount()).
  std::size_t index = 0;
  int numa_node = -1;         // -1 when the runtime is not NUMA-aware
  std::size_t workers = 0;
  std::string cpus;           // the CPUs its workers may run on, e.g. "0-3,6"
  std::uint64_t fibers_run = 0;            // times its workers took a fiber to run
  std::uint64_t steals_in_same_node = 0;   // fibers its workers stole on its node
  std::uint64_t steals_in_cross_node = 0;  // ... and from other nodes
  std::uint64_t steals_out = 0;            // fibers other groups stole from it
  std::uint64_t steals_in_group = 0;       // taken from a sibling worker's queue (v2)
  std::uint64_t wakeups = 0;               // sleeping workers woken
  std::size_t run_queue_depth = 0;         // fibers queued right now, all its queues
                                           // (approximate)
};

// Every group's stats, in group order. Valid while the runtime runs; thread-safe.
std::vector<SchedulingGroupStats> GetSchedulingGroupStats();

// Writes every live fiber to `out`: its state, how long it has been in it, and its stack
// (symbolized). Thread-safe; callable from a fiber or a plain thread while the runtime
// runs (fibers keep running meanwhile; each is frozen only while it is read). Costs
// nothing to fibers that are not being dumped. Also run by --fiber_dump_signal, by
// TerminateRuntime() after its grace period and by the test watchdog
// (runtime/internal/testing/runtime_testing.h). Format, one block per fiber, by id:
//
//   --- fiber dump: 3 fibers (1 ready, 1 running, 1 waiting); about 0 more started but not yet scheduled ---
//   fiber 1025 group 0 waiting on event for 1.503s
//     #0  0x55d0c0a1b2c3 spindle::internal::ParkFiber()
//     ...
//     #9  0x55d0c0a1c4d5 ParkOnEvent()
//   fiber 1026 group 0 running on worker 1
//     (stack not captured)
//   fiber 1027 group - ready
//     ...
//   --- end of fiber dump ---
//
// States: "ready", "ready (not started)", "running on worker W", "waiting on K" with K
// one of mutex, condition_variable, event, latch, future, timer (a sleep), socket,
// shared_mutex, semaphore, barrier, join, run_blocking, other ("join of fiber N" for a
// fiber in Fiber::join() names the fiber it joins); "exiting". The group of
// a ready fiber is "-" (it may be moving between groups). Stacks: a switched-out fiber's
// from its saved context by frame pointers; the calling fiber's own; a fiber running on
// another worker is not captured. Fibers started but still queued without a stack are
// only counted ("not yet scheduled").
void DumpFibers(std::ostream& out);

// DumpFibers() for a caller that must bound it (a debug endpoint, a periodic log).
struct DumpFibersOptions {
  // At most this many fibers are captured and written; the others are counted in a
  // "not shown" line. Bounds the dump's size and the time it holds the stack
  // registry's lock (captured fibers are read under it).
  std::size_t max_fibers = std::numeric_limits<std::size_t>::max();
  // From a fiber: yield to the other fibers after each fiber's block (symbolizing is
  // the slow part, done outside every lock), so a large dump does not hold its worker.
  bool yield_between_fibers = true;
};
// DumpFibers(out) within the bounds `options` set: at most `options.max_fibers` fibers
// written, and from a fiber a yield after each block if `yield_between_fibers`.
void DumpFibers(std::ostream& out, const DumpFibersOptions& options);

}  // namespace spindle

#endif  // SPINDLE_RUNTIME_RUNTIME_H_
