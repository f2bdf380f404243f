// Copyright 2026 The Spindle Authors.
//
// A demo of Spindle's fiber execution core, the README's first command until the bench
// tool (spindle_bench) exists. It starts a few thousand fibers on the calling thread,
// each computing the longest Collatz chain in its own range of numbers. A fiber works
// in slices and hands the thread back after each one, so the fibers interleave; a
// round-robin loop on the main thread resumes them. At the end the demo prints what the
// fibers computed and checks it against a plain loop.
//
// The scheduler proper (worker threads, run queues) comes in //runtime; this demo only
// uses the layer below it: stacks, the context switch and the fiber control block.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/stack_allocator.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int32(demo_fibers, 4096, "Fibers to start (default 4096), in [1, 1000000].");
DEFINE_int32(demo_numbers_per_fiber, 256,
             "Numbers each fiber examines (default 256), in [1, 1000000].");
DEFINE_int32(demo_slice, 16,
             "Numbers a fiber examines before handing the thread back (default 16), "
             "in [1, 1000000].");

namespace {

using spindle::internal::FiberEntity;
using spindle::internal::FiberState;
using spindle::internal::GetMasterFiberEntity;
using spindle::internal::InstantiateFiberEntity;
using spindle::internal::Spinlock;
using spindle::internal::StackCache;

struct Result {
  std::uint64_t best_start = 0;
  int best_steps = -1;
};

int CollatzSteps(std::uint64_t n) {
  int steps = 0;
  while (n != 1) {
    n = (n % 2 == 0) ? n / 2 : 3 * n + 1;
    ++steps;
  }
  return steps;
}

// A round-robin loop over Ready fibers on the calling thread: the smallest scheduler
// that respects the execution core's contract (state changes under the scheduler lock).
class RoundRobin {
 public:
  void Add(FiberEntity* fiber) { ready_.push_back(fiber); }

  // Called by the running fiber: back of the line, and the thread goes to the loop.
  void Yield(FiberEntity* self) {
    {
      std::lock_guard<Spinlock> lock(self->scheduler_lock);
      self->SetState(FiberState::kReady);
    }
    ready_.push_back(self);
    self->SwitchTo(GetMasterFiberEntity());
  }

  std::uint64_t RunUntilEmpty() {
    std::uint64_t switches = 0;
    FiberEntity* master = GetMasterFiberEntity();
    while (!ready_.empty()) {
      FiberEntity* next = ready_.front();
      ready_.pop_front();
      {
        std::lock_guard<Spinlock> lock(next->scheduler_lock);
        next->SetState(FiberState::kRunning);
      }
      master->SwitchTo(next);
      switches += 2;
    }
    return switches;
  }

 private:
  std::deque<FiberEntity*> ready_;
};

bool InRange(const char* flag, int value) {
  if (value >= 1 && value <= 1000000) return true;
  std::fprintf(stderr, "--%s=%d is invalid: expected a value in [1, 1000000]\n", flag,
               value);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Spindle execution-core demo. Flags: --demo_*, --fiber_stack_*.");
  // The runtime's layout line on stderr at start (--fiber_log_layout=false hides it).
  gflags::SetCommandLineOptionWithMode("fiber_log_layout", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (!InRange("demo_fibers", FLAGS_demo_fibers) ||
      !InRange("demo_numbers_per_fiber", FLAGS_demo_numbers_per_fiber) ||
      !InRange("demo_slice", FLAGS_demo_slice)) {
    return 2;
  }
  const std::string stack_error = spindle::internal::ValidateStackAllocatorOptions(
      spindle::internal::StackAllocatorOptionsFromFlags());
  if (!stack_error.empty()) {
    std::fprintf(stderr, "%s\n", stack_error.c_str());
    return 2;
  }

  const int fibers = FLAGS_demo_fibers;
  const int per_fiber = FLAGS_demo_numbers_per_fiber;
  const int slice = FLAGS_demo_slice;
  std::vector<Result> results(fibers);
  RoundRobin scheduler;
  const auto start = std::chrono::steady_clock::now();
  for (int f = 0; f < fibers; ++f) {
    FiberEntity* fiber = InstantiateFiberEntity(StackCache::ForThisThread().Get(), nullptr);
    fiber->start_proc = [&, f, fiber] {
      const std::uint64_t first = std::uint64_t{1} + std::uint64_t(f) * per_fiber;
      for (int i = 0; i < per_fiber; ++i) {
        const int steps = CollatzSteps(first + i);
        if (steps > results[f].best_steps) results[f] = Result{first + i, steps};
        if ((i + 1) % slice == 0) scheduler.Yield(fiber);
      }
    };
    scheduler.Add(fiber);
  }
  const std::uint64_t switches = scheduler.RunUntilEmpty();
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();

  // Combine, then check every fiber's answer against a plain loop.
  Result best;
  std::uint64_t total_steps = 0;
  int mismatches = 0;
  for (int f = 0; f < fibers; ++f) {
    Result expected;
    const std::uint64_t first = std::uint64_t{1} + std::uint64_t(f) * per_fiber;
    for (int i = 0; i < per_fiber; ++i) {
      const int steps = CollatzSteps(first + i);
      if (steps > expected.best_steps) expected = Result{first + i, steps};
    }
    if (expected.best_start != results[f].best_start ||
        expected.best_steps != results[f].best_steps) {
      ++mismatches;
    }
    total_steps += static_cast<std::uint64_t>(results[f].best_steps);
    if (results[f].best_steps > best.best_steps) best = results[f];
  }
  const std::uint64_t numbers = std::uint64_t(fibers) * per_fiber;
  std::printf("Spindle execution-core demo: %d fibers on one thread, %d numbers each\n",
              fibers, per_fiber);
  std::printf("  longest Collatz chain below %llu: starts at %llu, %d steps\n",
              static_cast<unsigned long long>(numbers + 1),
              static_cast<unsigned long long>(best.best_start), best.best_steps);
  std::printf("  sum of the fibers' best chain lengths: %llu\n",
              static_cast<unsigned long long>(total_steps));
  std::printf("  %llu context switches in %.1f ms (%.1f ns per switch, work included)\n",
              static_cast<unsigned long long>(switches), elapsed_ms,
              elapsed_ms * 1e6 / static_cast<double>(switches));
  if (mismatches != 0) {
    std::printf("  FAILED: %d fibers disagree with the plain loop\n", mismatches);
    return 1;
  }
  std::printf("  checked: every fiber's answer matches a plain loop\n");
  return 0;
}
