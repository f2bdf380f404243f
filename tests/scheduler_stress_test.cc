// Copyright 2026 The Spindle Authors.
//
// Cross-component stress for the scheduler, sized for a 2-core machine: a million fibers
// each run exactly once, the lost-wake-up hammer at 100,000 rounds, and pairs of fibers
// that need two workers at once, with random pauses at every step of the wake-up
// protocol and up to 16 workers on 2 cores. Scaled down in the sanitizer lanes
// (SPINDLE_STRESS_SCALE_DEFAULT).

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/testing/lost_wake_hammer.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

// A hang shows where every fiber stands before Bazel's timeout kills the binary: the
// watchdog that runtime_testing.cc arms in every test binary that links it.

TEST(SchedulerStressTest, MillionFibersEachRunExactlyOnce) {
  ScopedRuntime runtime(2);
  const std::size_t n = Scaled(1000000);
  std::vector<std::atomic<std::uint8_t>> runs(n);
  std::atomic<std::size_t> done{0};
  // Half joinable, started and joined by a plain thread (the queued path, no inline
  // joins); half detached, started by fibers.
  {
    std::vector<Fiber> fibers;
    fibers.reserve(n / 2);
    for (std::size_t i = 0; i < n / 2; ++i) fibers.emplace_back([&runs, i] { ++runs[i]; });
    for (auto& f : fibers) f.join();
  }
  RunAsFiber([&] {
    for (std::size_t i = n / 2; i < n; ++i) {
      StartFiberDetached([&runs, &done, i] {
        ++runs[i];
        ++done;
      });
    }
  });
  ASSERT_TRUE(WaitFor([&] { return done.load() == n - n / 2; }, std::chrono::seconds(120)));
  std::size_t wrong = 0;
  for (const auto& r : runs) wrong += r.load() != 1;
  EXPECT_EQ(wrong, 0u);
}

TEST(SchedulerStressTest, LostWakeUpHammerHundredThousandRounds) {
  const int rounds = static_cast<int>(Scaled(100000));
  internal::LostWakeUpHammer(2, /*spin_us=*/0, rounds);
  internal::LostWakeUpHammer(2, /*spin_us=*/20, rounds / 4);
}

// ---- Pairs under perturbation.
//
// A pair is a waiter fiber that spins its worker's thread until its partner fiber has
// run, started first, and the partner, started right after it. The pair finishes only if
// the partner gets a second worker while the waiter holds the first, so a partner left
// queued while a worker of its group sleeps (a lost wake-up) shows as a round that does
// not finish by its deadline. This is the shape in which timed_waiter_test lost a
// wake-up on 16 cores (a claimed spinner that already held a fiber; see
// spinner_notifier.cc). On 2 cores the windows are made wide instead: every thread that
// reaches a step of the protocol sometimes pauses there for a few microseconds or gives
// up its CPU, and 8 or 16 workers oversubscribe the cores, so the OS preempts threads
// inside the windows too; spinners poll for 200 us so that more fibers are taken by a
// spinner. (Checked: with the claim hand-over removed from S3, 6 runs of this test out
// of 6 failed, 5 in the 8-worker case and 1 in the 2-worker case.)
//
// Under chaos scheduling (the _chaos twins) chaos mode's own pauses at the same steps
// replace this hook (and it perturbs more: random picks, migrations, pauses in the park
// and wake paths). SPINDLE_TEST_PROTOCOL_HOOK=0 leaves the hook out, to compare: with
// the S3 hand-over removed and no perturbation at all, 2 cores do not show the bug.
void BusyWaitMicros(unsigned micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void PerturbProtocolStep(internal::SchedulerTestPoint, std::size_t) {
  thread_local std::minstd_rand random(std::random_device{}());
  const unsigned draw = random() % 64;
  if (draw < 8) {
    BusyWaitMicros(draw);  // a short stall: a cache miss, an interrupt
  } else if (draw < 10) {
    std::this_thread::yield();  // preempted at this step
  } else if (draw < 14) {
    // Off the CPU for up to 100 us: long enough for the other threads to run whole
    // steps of the protocol meanwhile, even on 2 cores.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
}

class PerturbedPairsTest : public ::testing::TestWithParam<std::size_t> {};

INSTANTIATE_TEST_SUITE_P(Workers, PerturbedPairsTest, ::testing::Values(2, 8, 16),
                         testing::WorkerCountName);

// The waiter spins its thread (not Yield: that would let one worker run both) for at
// most `deadline`, so a lost wake-up fails the round instead of hanging the test.
bool SpinUntil(const std::atomic<bool>& flag, std::chrono::seconds deadline) {
  return WaitFor([&] { return flag.load(std::memory_order_acquire); }, deadline);
}

// Runs the pair rounds. With `partner_yields`, the partner is started first and calls
// Yield() until the waiter has started, then sets its flag: its worker may take the
// waiter in Yield() and re-queue the partner behind it, a push with no producer of its
// own to wake a worker.
void RunPerturbedPairs(std::size_t workers, bool partner_yields) {
  gflags::FlagSaver saver;
  FLAGS_fiber_worker_spin_time_us = 200;
  ScopedRuntime runtime(workers);
  const char* hook_env = std::getenv("SPINDLE_TEST_PROTOCOL_HOOK");
  // The hook is a test seam (runtime/internal/seams/test_seams.h): without the seams the
  // rounds run unperturbed.
  // Under chaos too: the chaos twin must be at least as strong as the plain target.
  const bool hook = internal::kTestSeams && (hook_env == nullptr || std::string(hook_env) != "0");
  if constexpr (internal::kTestSeams) {
    if (hook) internal::SetSchedulerTestHook(&PerturbProtocolStep);
  }
  const int rounds = static_cast<int>(Scaled(4000));
  int failed_round = 0;
  for (int round = 1; round <= rounds && failed_round == 0; ++round) {
    // Shared with the fibers, so a failed round can leave them behind safely.
    struct Pair {
      std::atomic<bool> waiter_started{false}, partner_ran{false}, waiter_ok{false},
          waiter_done{false};
    };
    auto pair = std::make_shared<Pair>();
    auto start_pair = [pair, partner_yields] {
      // Detached, and waited for through flags: a join() could run a fiber inline on
      // the joiner, which is not the path under test.
      auto waiter = [pair] {
        pair->waiter_started.store(true, std::memory_order_release);
        pair->waiter_ok = SpinUntil(pair->partner_ran, std::chrono::seconds(10));
        pair->waiter_done.store(true, std::memory_order_release);
      };
      auto partner = [pair, partner_yields] {
        if (partner_yields) {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!pair->waiter_started.load(std::memory_order_acquire) &&
                 std::chrono::steady_clock::now() < give_up) {
            this_fiber::Yield();
          }
        }
        pair->partner_ran.store(true, std::memory_order_release);
      };
      if (partner_yields) StartFiberDetached(partner);
      StartFiberDetached(waiter);
      // A gap of 0-31 us between the two starts: the waiter's worker and the others
      // move on meanwhile (spinners give up, sleepers settle).
      thread_local std::minstd_rand random(std::random_device{}());
      BusyWaitMicros(random() % 32);
      if (!partner_yields) StartFiberDetached(partner);
    };
    // Even rounds: started from this plain thread; odd rounds: from a fiber, so the
    // producer is a worker of the group.
    if (round % 2 == 0) {
      start_pair();
    } else {
      RunAsFiber(start_pair);
    }
    if (!WaitFor([&] { return pair->waiter_done.load(std::memory_order_acquire); },
                 std::chrono::seconds(30)) ||
        !pair->waiter_ok.load()) {
      failed_round = round;
    }
  }
  if constexpr (internal::kTestSeams) {
    if (hook) internal::SetSchedulerTestHook(nullptr);
  }
  EXPECT_EQ(failed_round, 0) << "round " << failed_round << ": the partner did not run "
                             << "within 10 s while its waiter spun, or the waiter never ran";
}

TEST_P(PerturbedPairsTest, PartnerOfASpinningFiberAlwaysGetsAWorker) {
  RunPerturbedPairs(GetParam(), /*partner_yields=*/false);
}

TEST_P(PerturbedPairsTest, PartnerThatYieldsAlwaysGetsAWorkerBack) {
  RunPerturbedPairs(GetParam(), /*partner_yields=*/true);
}

}  // namespace
}  // namespace spindle
