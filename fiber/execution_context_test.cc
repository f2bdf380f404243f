// Copyright 2026 The Spindle Authors.

#include "fiber/execution_context.h"

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/latch.h"

namespace spindle {
namespace {

using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

struct RequestInfo {
  static std::atomic<int> constructed;
  static std::atomic<int> destroyed;
  RequestInfo() { constructed.fetch_add(1); }
  ~RequestInfo() { destroyed.fetch_add(1); }
  std::string trace_id;
  std::atomic<int> visits{0};
};
std::atomic<int> RequestInfo::constructed{0};
std::atomic<int> RequestInfo::destroyed{0};

ExecutionLocal<RequestInfo> request_info;

class ExecutionContextTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    RequestInfo::constructed = 0;
    RequestInfo::destroyed = 0;
  }
  std::size_t workers() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Workers, ExecutionContextTest, spindle::testing::WorkerCounts(),
                         spindle::testing::WorkerCountName);

// What a fiber sees: the trace id of its context, or "none".
std::string SeenTraceId() {
  RequestInfo* info = request_info.get();
  return info != nullptr ? info->trace_id : "none";
}

TEST_P(ExecutionContextTest, ChildrenStartedWithInheritanceSeeTheContextOthersDoNot) {
  ScopedRuntime runtime(workers());
  Fiber::Attributes inherit;
  inherit.inherit_execution_context = true;
  const std::size_t rounds = Scaled(200);
  std::atomic<std::size_t> wrong{0};
  RunAsFiber([&] {
    for (std::size_t r = 0; r < rounds; ++r) {
      ScopedExecutionContext scope(ExecutionContext::Create());
      const std::string id = "req-" + std::to_string(r);
      request_info->trace_id = id;
      Latch detached(4);
      auto expect = [&](const std::string& want) {
        if (SeenTraceId() != want) wrong.fetch_add(1);
      };
      // Inheriting: a joinable child, its own child (inheriting again), a detached
      // fiber, and a captured function started in a batch.
      Fiber child(inherit, [&] {
        expect(id);
        this_fiber::Yield();
        expect(id);
        Fiber grandchild(inherit, [&] { expect(id); });
        grandchild.join();
        request_info->visits.fetch_add(1);
      });
      StartFiberDetached(inherit, [&] {
        expect(id);
        detached.count_down();
      });
      std::vector<absl::AnyInvocable<void()>> batch;
      batch.push_back(CaptureExecutionContext([&] {
        expect(id);
        detached.count_down();
      }));
      BatchStartFiberDetached(std::move(batch));
      // Not inheriting: none, even for a child that join() may run inline here.
      Fiber stranger([&] { expect("none"); });
      StartFiberDetached([&] {
        expect("none");
        detached.count_down();
      });
      std::thread thread([&] {
        expect("none");
        detached.count_down();
      });
      stranger.join();
      child.join();
      detached.wait();
      thread.join();
      if (request_info->visits.load() != 1) wrong.fetch_add(1);
      expect(id);
    }
    if (SeenTraceId() != "none") wrong.fetch_add(1);
  });
  EXPECT_EQ(wrong.load(), 0u);
  // The last round's detached fibers count down before they end, and each holds its
  // context until it ends: the last context may go a moment after RunAsFiber returns.
  const int contexts = static_cast<int>(rounds);
  EXPECT_TRUE(WaitFor([&] { return RequestInfo::destroyed.load() == contexts; }))
      << "each context's value is destroyed with the context: "
      << RequestInfo::destroyed.load() << " of " << rounds;
}

TEST_P(ExecutionContextTest, TheContextLivesUntilItsLastInheritorEnds) {
  ScopedRuntime runtime(workers());
  Fiber::Attributes inherit;
  inherit.inherit_execution_context = true;
  std::atomic<bool> release{false};
  std::atomic<bool> read_after_scope{false};
  RunAsFiber([&] {
    ScopedExecutionContext scope(ExecutionContext::Create());
    request_info->trace_id = "outlives";
    StartFiberDetached(inherit, [&] {
      while (!release.load()) this_fiber::SleepFor(std::chrono::microseconds(100));
      read_after_scope = SeenTraceId() == "outlives";
    });
  });
  EXPECT_EQ(RequestInfo::destroyed.load(), 0) << "destroyed while a fiber still runs in it";
  release = true;
  EXPECT_TRUE(WaitFor([] { return RequestInfo::destroyed.load() == 1; }));
  EXPECT_TRUE(read_after_scope.load());
}

TEST_P(ExecutionContextTest, ScopesNestAndRestore) {
  ScopedRuntime runtime(workers());
  RunAsFiber([] {
    EXPECT_EQ(ExecutionContext::Current(), nullptr);
    auto outer = ExecutionContext::Create();
    auto inner = ExecutionContext::Create();
    {
      ScopedExecutionContext a(outer);
      EXPECT_EQ(ExecutionContext::Current(), outer.get());
      {
        ScopedExecutionContext b(inner);
        this_fiber::SleepFor(std::chrono::microseconds(100));  // may resume elsewhere
        EXPECT_EQ(ExecutionContext::Current(), inner.get());
        {
          ScopedExecutionContext none(nullptr);
          EXPECT_EQ(ExecutionContext::Current(), nullptr);
          EXPECT_EQ(request_info.get(), nullptr);
        }
        EXPECT_EQ(ExecutionContext::Current(), inner.get());
      }
      EXPECT_EQ(ExecutionContext::Current(), outer.get());
    }
    EXPECT_EQ(ExecutionContext::Current(), nullptr);
  });
}

// Many fibers of one context construct the value at once: they all get the same one.
TEST_P(ExecutionContextTest, ConcurrentFirstReadsAgreeOnOneValue) {
  ScopedRuntime runtime(workers());
  Fiber::Attributes inherit;
  inherit.inherit_execution_context = true;
  for (std::size_t round = 0; round < Scaled(50); ++round) {
    std::atomic<std::size_t> distinct{0};
    RunAsFiber([&] {
      ScopedExecutionContext scope(ExecutionContext::Create());
      std::vector<Fiber> fibers;
      std::vector<RequestInfo*> seen(16);
      for (std::size_t i = 0; i < seen.size(); ++i) {
        fibers.emplace_back(inherit, [&, i] { seen[i] = request_info.get(); });
      }
      for (auto& f : fibers) f.join();
      distinct = std::set<RequestInfo*>(seen.begin(), seen.end()).size();
    });
    EXPECT_EQ(distinct.load(), 1u);
  }
  // A value that lost a race to construct is destroyed at once, a winner with its
  // context: every value constructed is destroyed, one or more per context.
  EXPECT_EQ(RequestInfo::destroyed.load(), RequestInfo::constructed.load());
  EXPECT_GE(RequestInfo::destroyed.load(), static_cast<int>(Scaled(50)));
}

TEST(ExecutionContextPlainThreadTest, WorksOnPlainThreadsAndAcrossThem) {
  RequestInfo::destroyed = 0;
  {
    ScopedExecutionContext scope(ExecutionContext::Create());
    request_info->trace_id = "thread";
    std::string seen_by_captured;
    std::string seen_by_plain;
    std::thread captured(CaptureExecutionContext([&] { seen_by_captured = SeenTraceId(); }));
    std::thread plain([&] { seen_by_plain = SeenTraceId(); });
    captured.join();
    plain.join();
    EXPECT_EQ(seen_by_captured, "thread");
    EXPECT_EQ(seen_by_plain, "none");
    // Arguments and results pass through a captured function.
    auto add = CaptureExecutionContext(
        [](int a, int b) { return SeenTraceId() + ":" + std::to_string(a + b); });
    std::thread([&] { EXPECT_EQ(add(2, 3), "thread:5"); }).join();
  }
  EXPECT_EQ(RequestInfo::destroyed.load(), 1);
}

TEST(ExecutionContextPlainThreadTest, AReusedKeyDoesNotSeeTheOldKeysValue) {
  auto context = ExecutionContext::Create();
  ScopedExecutionContext scope(context);
  auto first = std::make_unique<ExecutionLocal<std::string>>();
  **first = "old";
  first.reset();
  ExecutionLocal<std::string> second;  // likely the same index
  EXPECT_EQ(*second, "");
  *second = "new";
  EXPECT_EQ(*second, "new");
}

TEST(ExecutionContextDeathTest, DereferencingOutsideAnyContextNamesTheMistake) {
  EXPECT_DEATH(request_info->trace_id = "x", "outside any execution context");
}

}  // namespace
}  // namespace spindle
