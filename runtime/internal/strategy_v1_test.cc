// Copyright 2026 The Spindle Authors.
//
// Strategy v1's two policies, each with a test that fails when it breaks: at most two
// workers spin (poll the queue) at once, and a producer that finds no spinner wakes the
// lowest-numbered sleeper. Plain threads play the workers through v1's public steps
// (SpinningTake, WaitForEntry), as a FiberWorker's idle loop would call them.

#include "runtime/internal/strategy_v1.h"

#include <atomic>
#include <bitset>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/internal/fiber_desc.h"
#include "runtime/internal/runtime_testing.h"
#include "runtime/internal/scheduling_strategy.h"

namespace spindle::internal {
namespace {

using namespace std::chrono_literals;
using spindle::testing::WaitFor;

struct StrategyDeleter {
  void operator()(StrategyV1* strategy) const { delete strategy; }
};
using StrategyPtr = std::unique_ptr<StrategyV1, StrategyDeleter>;

StrategyPtr MakeV1(std::size_t workers, std::chrono::nanoseconds spin_time) {
  SchedulingGroupOptions options;
  options.workers = workers;
  options.run_queue_capacity = 64;
  options.strategy = "v1";
  options.spin_time = spin_time;
  return StrategyPtr(new (kNoNumaNode) StrategyV1(options));
}

std::uintptr_t Desc() { return EncodeEntry(AllocateFiberDesc()); }
void Free(std::uintptr_t entry) { FreeFiberDesc(DecodeDesc(entry)); }
std::size_t Bits(std::uint64_t mask) { return std::bitset<64>(mask).count(); }

// Four workers want to spin; two may. The other two's SpinningTake returns at once
// (with nothing) while two spin, however long the spin time.
TEST(StrategyV1Test, AtMostTwoWorkersSpin) {
  StrategyPtr v1 = MakeV1(4, 60s);  // spinners leave only with a fiber or a claim
  std::vector<std::uintptr_t> taken(4, 0);
  std::atomic<int> returned{0};
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < 4; ++i) {
    workers.emplace_back([&, i] {
      taken[i] = v1->SpinningTake(i);
      returned.fetch_add(1);
    });
  }
  // Two spin and two came back empty-handed.
  ASSERT_TRUE(WaitFor([&] { return returned.load() == 2; }, 10s))
      << "spinners: " << std::bitset<4>(v1->spinning_workers());
  EXPECT_EQ(Bits(v1->spinning_workers()), 2u);
  // Nobody else joins them later.
  std::this_thread::yield();
  EXPECT_EQ(Bits(v1->spinning_workers()), 2u)
      << "spinners: " << std::bitset<4>(v1->spinning_workers());
  EXPECT_EQ(returned.load(), 2);
  // Release the spinners: each push claims the lowest spinner, but an unclaimed one may
  // pop the fiber first and leave the claimed one with nothing to take (in a real idle
  // loop that worker then re-checks on its way to sleep). So push until both have left
  // with a fiber, then take back what is left.
  int pushed = 0;
  while (returned.load() < 4) {
    ASSERT_LT(pushed, 1000) << "the spinners did not take the fibers pushed for them";
    v1->Enqueue(Desc(), true, ReadyReason::kStarted, SchedulingStrategy::kNoWorker);
    ++pushed;
    WaitFor([&] { return returned.load() == 4; }, 100ms);
  }
  for (auto& worker : workers) worker.join();
  std::size_t with_fiber = 0;
  for (std::uintptr_t entry : taken) {
    if (entry != 0) {
      ++with_fiber;
      Free(entry);
    }
  }
  // Every fiber pushed is taken exactly once: by a spinner or left in the queue.
  std::size_t left = 0;
  while (std::uintptr_t entry = v1->TakeNext(0)) {
    Free(entry);
    ++left;
  }
  EXPECT_GE(with_fiber, 1u);
  EXPECT_EQ(with_fiber + left, static_cast<std::size_t>(pushed));
  EXPECT_EQ(v1->spinning_workers(), 0u);
}

// Three workers sleep (no spinner). A producer's fiber goes to the lowest-numbered one,
// worker 0: v1 keeps the low workers busy and lets the high ones sleep on.
TEST(StrategyV1Test, AProducerWakesTheLowestSleeper) {
  StrategyPtr v1 = MakeV1(3, 0ns);
  std::atomic<bool> stop{false};
  std::atomic<int> taker{-1};
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < 3; ++i) {
    workers.emplace_back([&, i] {
      NoIdleHooks hooks;
      while (!stop.load()) {
        if (std::uintptr_t entry = v1->WaitForEntry(i, hooks)) {
          Free(entry);
          taker.store(static_cast<int>(i));
          return;  // the others keep sleeping
        }
      }
    });
  }
  // Marked sleeping is not enough: a worker between its mark (W1) and its re-check (W3)
  // would take the fiber itself. Wait until each has gone to sleep (its sleeps count).
  ASSERT_TRUE(WaitFor(
      [&] {
        return v1->sleeping_workers() == 0b111 && v1->sleeps(0) >= 1 &&
               v1->sleeps(1) >= 1 && v1->sleeps(2) >= 1;
      },
      10s))
      << "sleepers: " << std::bitset<3>(v1->sleeping_workers());
  v1->Enqueue(Desc(), true, ReadyReason::kStarted, SchedulingStrategy::kNoWorker);
  ASSERT_TRUE(WaitFor([&] { return taker.load() >= 0; }, 10s)) << "nobody woke";
  EXPECT_EQ(taker.load(), 0) << "the fiber went to worker " << taker.load();
  EXPECT_TRUE(WaitFor([&] { return v1->sleeping_workers() == 0b110; }, 10s))
      << "only the lowest sleeper should be woken; sleepers: "
      << std::bitset<3>(v1->sleeping_workers());
  stop = true;
  v1->Stop();  // wakes every sleeper
  for (auto& worker : workers) worker.join();
}

}  // namespace
}  // namespace spindle::internal
