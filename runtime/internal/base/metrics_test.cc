// Copyright 2026 The Spindle Authors.

#include "runtime/internal/base/metrics.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

TEST(ThreadCounterTest, SumsOverThreadsIncludingExitedOnes) {
  ThreadCounter counter;
  constexpr int kThreads = 8;
  constexpr std::uint64_t kPerThread = 100'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter] {
      for (std::uint64_t i = 0; i < kPerThread; ++i) counter.Add(1);
    });
  }
  counter.Add(5);  // this thread's own row
  for (std::thread& thread : threads) thread.join();
  // The workers exited: their rows were folded into the retired sums.
  EXPECT_EQ(counter.Read(), kThreads * kPerThread + 5);
}

TEST(ThreadCounterTest, ReadWhileWritersRunNeverGoesBackwards) {
  ThreadCounter counter;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) counter.Add(1);
    });
  }
  std::uint64_t last = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t now = counter.Read();
    ASSERT_GE(now, last);
    last = now;
  }
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& writer : writers) writer.join();
  EXPECT_GE(counter.Read(), last);
}

TEST(ThreadCounterTest, ASlotReusedByANewCounterStartsAtZero) {
  const std::size_t before = ThreadCounterSlotsInUseForTesting();
  {
    auto first = std::make_unique<ThreadCounter>();
    first->Add(41);
    std::thread([&] { first->Add(1); }).join();
    EXPECT_EQ(first->Read(), 42u);
    EXPECT_EQ(ThreadCounterSlotsInUseForTesting(), before + 1);
  }
  EXPECT_EQ(ThreadCounterSlotsInUseForTesting(), before);
  ThreadCounter second;  // takes the freed slot
  EXPECT_EQ(second.Read(), 0u);
  second.Add(3);
  EXPECT_EQ(second.Read(), 3u);
}

TEST(ThreadCounterTest, ManyCountersSpanChunks) {
  std::vector<std::unique_ptr<ThreadCounter>> counters;
  for (int i = 0; i < 1500; ++i) counters.push_back(std::make_unique<ThreadCounter>());
  std::thread([&] {
    for (std::size_t i = 0; i < counters.size(); ++i) counters[i]->Add(i);
  }).join();
  for (std::size_t i = 0; i < counters.size(); ++i) EXPECT_EQ(counters[i]->Read(), i);
}

TEST(HistogramTest, BucketsAreContiguousAndBoundsMatch) {
  std::size_t last = 0;
  for (std::uint64_t v = 0; v < (1u << 16); ++v) {
    const std::size_t b = HistogramBucketOf(v);
    ASSERT_TRUE(b == last || b == last + 1) << v;
    ASSERT_LE(HistogramBucketLowerBound(b), v);
    ASSERT_GT(HistogramBucketLowerBound(b + 1), v);
    last = b;
  }
  EXPECT_EQ(HistogramBucketOf(~std::uint64_t{0}), kHistogramBuckets - 1);
  EXPECT_EQ(HistogramBucketOf(std::uint64_t{1} << kHistogramMaxLog2),
            kHistogramBuckets - 1);
  EXPECT_EQ(HistogramBucketOf((std::uint64_t{1} << kHistogramMaxLog2) - 1),
            kHistogramBuckets - 2);
}

TEST(HistogramTest, PercentilesWithinABucketsWidth) {
  SingleWriterHistogram histogram;
  // 1..10000: p50 = 5000, p99 = 9900, p999 = 9990.
  for (std::uint64_t v = 1; v <= 10000; ++v) histogram.Record(v);
  HistogramSnapshot snapshot;
  histogram.AddTo(snapshot);
  EXPECT_EQ(snapshot.count, 10000u);
  EXPECT_DOUBLE_EQ(snapshot.sum, 10000.0 * 10001 / 2);
  EXPECT_NEAR(snapshot.Percentile(0.5), 5000, 5000 * 0.125);
  EXPECT_NEAR(snapshot.Percentile(0.99), 9900, 9900 * 0.125);
  EXPECT_NEAR(snapshot.Percentile(0.999), 9990, 9990 * 0.125);
  EXPECT_NEAR(snapshot.Percentile(1.0), 10000, 10000 * 0.125);
  EXPECT_NEAR(snapshot.Mean(), 5000.5, 1e-9);
}

TEST(HistogramTest, SinceSubtractsAnEarlierSnapshot) {
  SingleWriterHistogram histogram;
  for (int i = 0; i < 100; ++i) histogram.Record(10);
  HistogramSnapshot before;
  histogram.AddTo(before);
  for (int i = 0; i < 50; ++i) histogram.Record(1000);
  HistogramSnapshot after;
  histogram.AddTo(after);
  const HistogramSnapshot delta = after.Since(before);
  EXPECT_EQ(delta.count, 50u);
  EXPECT_NEAR(delta.Percentile(0.01), 1000, 125);
  EXPECT_DOUBLE_EQ(delta.sum, 50000.0);
  EXPECT_EQ(HistogramSnapshot().Percentile(0.5), 0.0);
}

TEST(CycleClockTest, TicksConvertToNanoseconds) {
  const double nanos_per_tick = CycleClockNanosPerTick();  // calibrates once
  EXPECT_EQ(CycleClockNanosPerTick(), nanos_per_tick);
  // Two reads of each clock, nested: outer_start, t0, inner_start ... inner_end, t1,
  // outer_end. The cycle clock's interval [t0, t1] lies inside the outer steady-clock
  // interval and contains the inner one, whatever the machine does between the reads
  // (a preemption stretches both clocks alike), so its length in nanoseconds lies
  // between the two, up to the calibration's error (10% allowed).
  using Clock = std::chrono::steady_clock;
  const auto outer_start = Clock::now();
  const std::uint64_t t0 = CycleClockNow();
  const auto inner_start = Clock::now();
  auto inner_end = inner_start;
  while (inner_end - inner_start < std::chrono::milliseconds(20)) inner_end = Clock::now();
  const std::uint64_t t1 = CycleClockNow();
  const auto outer_end = Clock::now();
  ASSERT_GT(t1, t0);
  const double ns = static_cast<double>(t1 - t0) * nanos_per_tick;
  const double inner_ns = std::chrono::duration<double, std::nano>(inner_end - inner_start).count();
  const double outer_ns = std::chrono::duration<double, std::nano>(outer_end - outer_start).count();
  EXPECT_GE(ns, inner_ns * 0.9) << "outer " << outer_ns << " ns";
  EXPECT_LE(ns, outer_ns * 1.1) << "inner " << inner_ns << " ns";
}

}  // namespace
}  // namespace spindle::internal
