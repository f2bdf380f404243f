// Copyright 2026 The Spindle Authors.

#include "fiber/fiber_local.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
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
#include "sync/mutex.h"

namespace spindle {
namespace {

using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

// Counts constructions and destructions, and remembers which fiber destroyed it.
struct Counted {
  static std::atomic<int> constructed;
  static std::atomic<int> destroyed;
  Counted() { constructed.fetch_add(1); }
  ~Counted() {
    destroyed.fetch_add(1);
    if (on_destroy != nullptr) on_destroy->store(this_fiber::GetId());
  }
  std::uint64_t owner = 0;
  std::atomic<std::uint64_t>* on_destroy = nullptr;
};
std::atomic<int> Counted::constructed{0};
std::atomic<int> Counted::destroyed{0};

class FiberLocalTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    Counted::constructed = 0;
    Counted::destroyed = 0;
  }
  std::size_t workers() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Workers, FiberLocalTest, spindle::testing::WorkerCounts(),
                         spindle::testing::WorkerCountName);

// Each fiber writes its id, then yields, sleeps (parks on a timer) and contends on a
// mutex (parks on another fiber) many times, checking the value after each step and
// noting the worker threads it ran on. Repeats rounds until some fiber has moved
// between threads (so the test shows values follow migrations), within a deadline.
TEST_P(FiberLocalTest, ValuesArePerFiberAcrossYieldsParksAndMigrations) {
  ScopedRuntime runtime(workers());
  FiberLocal<std::uint64_t> mine;
  Mutex mutex;
  const std::size_t fibers = Scaled(64);
  std::atomic<std::size_t> wrong{0};
  std::atomic<std::size_t> migrated{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int rounds = 0;
  do {
    ++rounds;
    std::vector<Fiber> started;
    for (std::size_t i = 0; i < fibers; ++i) {
      started.emplace_back([&] {
        EXPECT_EQ(*mine, 0u) << "a new fiber's value is value-initialized";
        *mine = this_fiber::GetId();
        // gettid, not pthread_self(): glibc declares that one const, so a compiler may
        // reuse its result across the switches.
        std::set<long> threads{syscall(SYS_gettid)};
        for (int step = 0; step < 20; ++step) {
          switch (step % 3) {
            case 0:
              this_fiber::Yield();
              break;
            case 1:
              this_fiber::SleepFor(std::chrono::microseconds(50));
              break;
            default: {
              std::lock_guard<Mutex> lock(mutex);
              this_fiber::Yield();  // others park on the mutex meanwhile
            }
          }
          threads.insert(syscall(SYS_gettid));
          if (*mine != this_fiber::GetId()) wrong.fetch_add(1);
        }
        if (threads.size() > 1) migrated.fetch_add(1);
      });
    }
    for (auto& f : started) f.join();
  } while ((workers() > 1 && migrated.load() == 0) &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(wrong.load(), 0u) << "reads that saw another fiber's value";
  if (workers() > 1) {
    EXPECT_GT(migrated.load(), 0u) << "no fiber moved between workers in " << rounds
                                   << " rounds; the test did not show migration";
  }
}

TEST_P(FiberLocalTest, DestructorsRunExactlyOnceOnTheFiberBeforeJoinReturns) {
  ScopedRuntime runtime(workers());
  FiberLocal<Counted> local;
  const std::size_t n = Scaled(2000);
  std::atomic<std::size_t> not_before_join{0};
  std::atomic<std::size_t> not_on_the_fiber{0};
  RunAsFiber([&] {
    std::vector<std::unique_ptr<std::atomic<std::uint64_t>>> destroyed_by;
    std::vector<Fiber> started;
    for (std::size_t i = 0; i < n; ++i) {
      destroyed_by.push_back(std::make_unique<std::atomic<std::uint64_t>>(0));
      auto* slot = destroyed_by.back().get();
      started.emplace_back([&local, slot] {
        local->owner = this_fiber::GetId();
        local->on_destroy = slot;
        this_fiber::Yield();
      });
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t id = started[i].get_id();
      started[i].join();
      const std::uint64_t by = destroyed_by[i]->load();
      if (by == 0) {
        not_before_join.fetch_add(1);
      } else if (by != id && by != this_fiber::GetId()) {
        // Run inline by join(), GetId() is the joiner's; otherwise the child's own.
        not_on_the_fiber.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(not_before_join.load(), 0u) << "values still alive when join() returned";
  EXPECT_EQ(not_on_the_fiber.load(), 0u) << "values destroyed on another fiber";
  EXPECT_EQ(Counted::constructed.load(), static_cast<int>(n));
  EXPECT_EQ(Counted::destroyed.load(), static_cast<int>(n));
}

TEST_P(FiberLocalTest, AFiberThatNeverReadsItConstructsNothing) {
  ScopedRuntime runtime(workers());
  FiberLocal<Counted> local;
  Latch done(Scaled(1000));
  for (std::size_t i = 0; i < Scaled(1000); ++i) {
    StartFiberDetached([&] { done.count_down(); });
  }
  done.wait();
  EXPECT_EQ(Counted::constructed.load(), 0);
}

// Beyond the five inline slots, and with destructors that create values of other
// fiber-locals (destroyed in a later pass).
TEST_P(FiberLocalTest, ManyLocalsAndDestructorsThatCreateValues) {
  ScopedRuntime runtime(workers());
  constexpr int kLocals = 40;
  std::vector<std::unique_ptr<FiberLocal<Counted>>> locals;
  for (int i = 0; i < kLocals; ++i) locals.push_back(std::make_unique<FiberLocal<Counted>>());
  struct CreatesOnDestroy {
    FiberLocal<Counted>* other = nullptr;
    ~CreatesOnDestroy() {
      if (other != nullptr) other->get();
    }
  };
  FiberLocal<CreatesOnDestroy> creator;
  const std::size_t n = Scaled(200);
  std::atomic<std::size_t> wrong{0};
  RunAsFiber([&] {
    std::vector<Fiber> started;
    for (std::size_t i = 0; i < n; ++i) {
      started.emplace_back([&] {
        for (int k = 0; k < kLocals; ++k) (*locals[k])->owner = this_fiber::GetId() + k;
        // This destructor runs in the first pass and creates a Counted in a slot the
        // pass has already visited or will visit; either way it is destroyed.
        creator->other = locals[0].get();
        this_fiber::Yield();
        for (int k = 0; k < kLocals; ++k) {
          if ((*locals[k])->owner != this_fiber::GetId() + k) wrong.fetch_add(1);
        }
      });
    }
    for (auto& f : started) f.join();
  });
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(Counted::constructed.load(), Counted::destroyed.load());
  EXPECT_GE(Counted::constructed.load(), static_cast<int>(n) * kLocals);
}

// A FiberLocal destroyed while a fiber holds its value; the next FiberLocal gets the
// same index: the fiber sees a fresh value, and the stale one is destroyed once.
TEST_P(FiberLocalTest, AReusedKeyDoesNotSeeTheOldKeysValue) {
  ScopedRuntime runtime(workers());
  RunAsFiber([] {
    auto first = std::make_unique<FiberLocal<Counted>>();
    (*first)->owner = 42;
    first.reset();
    EXPECT_EQ(Counted::destroyed.load(), 0) << "the value outlives its key until reused";
    FiberLocal<Counted> second;
    EXPECT_EQ(second->owner, 0u) << "saw the destroyed key's value";
    EXPECT_EQ(Counted::destroyed.load(), 1) << "the stale value was destroyed";
    FiberLocal<std::string> third;
    *third = "a value of another type";
    EXPECT_EQ(*third, "a value of another type");
  });
  // RunAsFiber() returns when the function does; the fiber's values go a moment later.
  EXPECT_TRUE(WaitFor([] { return Counted::destroyed.load() == 2; }));
  EXPECT_EQ(Counted::constructed.load(), 2);
}

// join() may run a child that has not started yet inline on the joiner's stack: the
// child still sees values of its own, and the joiner keeps its own.
TEST_P(FiberLocalTest, AChildJoinedInlineHasItsOwnValues) {
  ScopedRuntime runtime(workers());
  FiberLocal<std::string> name;
  FiberLocal<Counted> counted;
  std::atomic<std::size_t> wrong{0};
  RunAsFiber([&] {
    *name = "joiner";
    counted->owner = 7;
    for (std::size_t i = 0; i < Scaled(2000); ++i) {
      Fiber child([&] {
        if (!name->empty()) wrong.fetch_add(1);
        *name = "child";
        counted->owner = 8;
      });
      child.join();
      if (*name != "joiner" || counted->owner != 7) wrong.fetch_add(1);
    }
  });
  EXPECT_EQ(wrong.load(), 0u);
  // RunAsFiber() returns when the function does; the joiner's values go a moment later.
  EXPECT_TRUE(WaitFor([] { return Counted::destroyed.load() == Counted::constructed.load(); }));
  EXPECT_EQ(Counted::constructed.load(), static_cast<int>(Scaled(2000)) + 1);
}

// A million fibers each with a heap-owning value: every value destroyed (the ASan
// lane's leak check at exit also sees anything a count would miss). The TSan and chaos
// lanes run a scaled-down count: they test interleavings, not volume.
TEST(FiberLocalLeakTest, AMillionFibersWithAValueLeakNothing) {
  Counted::constructed = 0;
  Counted::destroyed = 0;
  ScopedRuntime runtime(2);
#if defined(__SANITIZE_THREAD__)
  const std::size_t n = Scaled(1000000);
#else
  const std::size_t n = testing::UnderChaos() ? Scaled(1000000) : 1000000;
#endif
  FiberLocal<std::string> text;
  FiberLocal<Counted> counted;
  constexpr std::size_t kBatch = 10000;
  std::atomic<std::size_t> wrong{0};
  for (std::size_t begun = 0; begun < n; begun += kBatch) {
    const std::size_t batch = std::min(kBatch, n - begun);
    Latch done(static_cast<std::ptrdiff_t>(batch));
    std::vector<absl::AnyInvocable<void()>> procs;
    for (std::size_t i = 0; i < batch; ++i) {
      procs.push_back([&, i] {
        text->assign(40 + i % 8, 'x');  // past the small-string buffer: on the heap
        counted->owner = i;
        if (text->size() != 40 + i % 8 || counted->owner != i) wrong.fetch_add(1);
        done.count_down();
      });
    }
    BatchStartFiberDetached(std::move(procs));
    done.wait();
  }
  // A detached fiber destroys its values after its last statement (count_down):
  // wait for the last few.
  EXPECT_TRUE(WaitFor([&] { return Counted::destroyed.load() == static_cast<int>(n); }))
      << Counted::destroyed.load() << " of " << n << " values destroyed";
  EXPECT_EQ(Counted::constructed.load(), static_cast<int>(n));
  EXPECT_EQ(wrong.load(), 0u);
}

// Plain threads have their own values, destroyed at their exit. (Not the test's main
// thread: its values would outlive the test, and a repeat would find them stale.)
TEST(FiberLocalThreadTest, PlainThreadsHaveTheirOwnValuesDestroyedAtExit) {
  Counted::constructed = 0;
  Counted::destroyed = 0;
  FiberLocal<Counted> local;
  std::atomic<int> wrong{0};
  Latch both_set(2);
  auto body = [&](std::uint64_t mine) {
    if (local->owner != 0) wrong.fetch_add(1);
    local->owner = mine;
    both_set.arrive_and_wait();  // both values exist at once
    if (local->owner != mine) wrong.fetch_add(1);
  };
  std::thread first(body, 1);
  std::thread second(body, 2);
  first.join();
  second.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Counted::constructed.load(), 2);
  EXPECT_EQ(Counted::destroyed.load(), 2) << "each thread's value at its exit";
}

}  // namespace
}  // namespace spindle
