// Copyright 2026 The Spindle Authors.
//
// The harness finds what it is for: the store-buffering pattern that every wake-up
// protocol here relies on (a producer stores "queued" then reads "sleeping"; a sleeper
// stores "sleeping" then reads "queued") loses a wake-up without a seq_cst fence
// between each side's store and load, and keeps it with one. If Relacy, or the seam
// over it (model_atomic.h), stopped modelling store buffering, the second test fails.

#include <fstream>
#include <iterator>
#include <string>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

template <bool kFence>
struct StoreBuffering : rl::test_suite<StoreBuffering<kFence>, 2> {
  Atomic<int> queued{0};
  Atomic<int> sleeping{0};
  int producer_saw_sleeper = -1;
  int sleeper_saw_queued = -1;

  void thread(unsigned index) {
    Atomic<int>& mine = index == 0 ? queued : sleeping;
    Atomic<int>& theirs = index == 0 ? sleeping : queued;
    mine.store(1, std::memory_order_relaxed);
    if (kFence) AtomicFence(std::memory_order_seq_cst);
    const int seen = theirs.load(std::memory_order_relaxed);
    (index == 0 ? producer_saw_sleeper : sleeper_saw_queued) = seen;
  }

  // Lost: the producer wakes nobody and the sleeper sleeps with the item queued.
  void after() { RL_ASSERT(producer_saw_sleeper == 1 || sleeper_saw_queued == 1); }
};

TEST(ModelTestingTest, StoreBufferingHoldsWithTheFence) {
  rl::test_params params = testing::ModelParams(1000);
  params.search_type = rl::sched_full;  // tiny: every interleaving
  EXPECT_TRUE(testing::RunModel<StoreBuffering<true>>(params))
      << testing::DescribeModelRun(params);
}

TEST(ModelTestingTest, StoreBufferingLosesTheWakeUpWithoutTheFence) {
  rl::test_params params = testing::ModelParams(1000);
  params.search_type = rl::sched_full;
  // The expected failure's trace goes to a file, not the test's output. An ofstream:
  // its buffer is allocated when it opens, outside the run (Relacy's operator new hands
  // out its own memory inside a run, which must not be freed after it).
  const std::string path = ::testing::TempDir() + "/store_buffering_trace.txt";
  {
    std::ofstream trace(path);
    params.output_stream = &trace;
    EXPECT_FALSE(testing::RunModel<StoreBuffering<false>>(params));
  }
  EXPECT_EQ(params.test_result, rl::test_result_user_assert_failed)
      << testing::DescribeModelRun(params);
  std::ifstream in(path);
  const std::string trace((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  EXPECT_NE(trace.find("USER ASSERT FAILED"), std::string::npos) << trace;
}

}  // namespace
}  // namespace spindle::internal
