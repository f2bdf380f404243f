// Copyright 2026 The Spindle Authors.

#include "runtime/internal/base/os_lock_check.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "sync/event.h"
#include "sync/mutex.h"

namespace spindle::internal {
namespace {

using namespace std::chrono_literals;
using testing::ScopedRuntime;
using testing::WaitFor;

#define SPINDLE_SKIP_WITHOUT_CHECK()                                            \
  if (!kOsLockCheckEnabled) {                                                   \
    GTEST_SKIP() << "the OS-lock check is compiled out (NDEBUG, no sanitizer)"; \
  }                                                                             \
  static_assert(true)

void AnchorInThisProgram() {}

// Whether the definition of `name` that the program uses lies in the executable itself
// (ours) rather than in a shared library (the C library, a sanitizer runtime).
bool DefinedByTheExecutable(const char* name) {
  void* symbol = dlsym(RTLD_DEFAULT, name);
  Dl_info symbol_info{};
  Dl_info anchor_info{};
  if (symbol == nullptr || dladdr(symbol, &symbol_info) == 0 ||
      dladdr(reinterpret_cast<void*>(&AnchorInThisProgram), &anchor_info) == 0) {
    ADD_FAILURE() << "cannot locate " << name;
    return false;
  }
  return symbol_info.dli_fbase == anchor_info.dli_fbase;
}

// In the builds with the check every pthread mutex function is ours; in -c opt none is
// (the check costs nothing there).
TEST(OsLockCheckTest, InterposedExactlyWhenEnabled) {
  for (const char* name :
       {"pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
        "pthread_mutex_clocklock", "pthread_mutex_unlock"}) {
    EXPECT_EQ(DefinedByTheExecutable(name), kOsLockCheckEnabled) << name;
  }
}

TEST(OsLockCheckTest, CountsStdMutexOnThisThread) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  std::mutex mutex;
  EXPECT_EQ(OsMutexesHeldByThisThread(), 0);
  mutex.lock();
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  {
    std::mutex other;
    std::lock_guard<std::mutex> lock(other);
    EXPECT_EQ(OsMutexesHeldByThisThread(), 2);
  }
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  mutex.unlock();
  EXPECT_EQ(OsMutexesHeldByThisThread(), 0);
}

TEST(OsLockCheckTest, FailedTryLockDoesNotCount) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  std::mutex mutex;
  std::atomic<bool> locked{false};
  std::atomic<bool> release{false};
  std::thread owner([&] {
    std::lock_guard<std::mutex> lock(mutex);
    locked.store(true);
    WaitFor([&] { return release.load(); });
  });
  EXPECT_TRUE(WaitFor([&] { return locked.load(); }));
  EXPECT_FALSE(mutex.try_lock());  // the owner's count, not ours
  EXPECT_EQ(OsMutexesHeldByThisThread(), 0);
  release.store(true);
  owner.join();
  std::mutex free_mutex;
  ASSERT_TRUE(free_mutex.try_lock());
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  free_mutex.unlock();
  EXPECT_EQ(OsMutexesHeldByThisThread(), 0);
}

TEST(OsLockCheckTest, RecursiveMutexCountsEachLevel) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  std::recursive_mutex mutex;
  mutex.lock();
  mutex.lock();
  ASSERT_TRUE(mutex.try_lock());
  EXPECT_EQ(OsMutexesHeldByThisThread(), 3);
  mutex.unlock();
  mutex.unlock();
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  mutex.unlock();
  EXPECT_EQ(OsMutexesHeldByThisThread(), 0);
}

TEST(OsLockCheckTest, TimedLocksCount) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  std::timed_mutex timed;
#if !defined(__SANITIZE_THREAD__)
  // GCC 12's TSan runtime has no pthread_mutex_clocklock interceptor, so it would take
  // the unlock below for an unlock of an unlocked mutex (with or without this check).
  ASSERT_TRUE(timed.try_lock_for(10ms));  // pthread_mutex_clocklock
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  timed.unlock();
#endif
  ASSERT_TRUE(
      timed.try_lock_until(std::chrono::system_clock::now() + 10ms));  // timedlock
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  timed.unlock();
  EXPECT_EQ(OsMutexesHeldByThisThread(), 0);
}

TEST(OsLockCheckTest, FailedUnlockDoesNotCount) {
  SPINDLE_SKIP_WITHOUT_CHECK();
#if defined(__SANITIZE_THREAD__)
  // TSan reports the bad unlock below itself, which shows that its interceptor is
  // reached through ours; the count is checked in the other lanes.
  GTEST_SKIP() << "ThreadSanitizer reports an unlock of an unlocked mutex";
#endif
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_t checked;
  pthread_mutex_init(&checked, &attr);
  pthread_mutexattr_destroy(&attr);
  std::mutex held;
  held.lock();
  EXPECT_EQ(pthread_mutex_unlock(&checked), EPERM);  // not ours: nothing released
  EXPECT_EQ(OsMutexesHeldByThisThread(), 1);
  held.unlock();
  pthread_mutex_destroy(&checked);
}

// The death tests start a runtime in the child process, so each statement is a whole
// program run: a fiber that switches away under a std::mutex must take it down.
class OsLockCheckDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(OsLockCheckDeathTest, YieldUnderStdMutexAborts) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(2);
        std::mutex mutex;
        Fiber fiber([&] {
          std::lock_guard<std::mutex> lock(mutex);
          this_fiber::Yield();
        });
        fiber.join();
      },
      "fiber [0-9]+ tried to yield while holding 1 OS mutex ");
}

TEST_F(OsLockCheckDeathTest, ParkOnSpindleMutexUnderStdMutexAborts) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(2);
        std::mutex os_mutex;
        Mutex fiber_mutex;
        fiber_mutex.lock();  // held by this thread: the fiber below must park
        Fiber fiber([&] {
          std::lock_guard<std::mutex> lock(os_mutex);
          std::lock_guard<Mutex> parks(fiber_mutex);
        });
        fiber.join();
      },
      "fiber [0-9]+ tried to park while holding 1 OS mutex ");
}

TEST_F(OsLockCheckDeathTest, ParkOnEventUnderNestedStdMutexesAborts) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(1);
        std::recursive_mutex mutex;
        Event never_set;
        Fiber fiber([&] {
          std::lock_guard<std::recursive_mutex> outer(mutex);
          std::lock_guard<std::recursive_mutex> inner(mutex);
          never_set.WaitFor(30s);
        });
        fiber.join();
      },
      "fiber [0-9]+ tried to park while holding 2 OS mutexes ");
}

TEST_F(OsLockCheckDeathTest, DispatchUnderStdMutexAborts) {
  SPINDLE_SKIP_WITHOUT_CHECK();
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(1);
        std::mutex mutex;
        Fiber fiber([&] {
          std::lock_guard<std::mutex> lock(mutex);
          Fiber::Attributes dispatch;
          dispatch.launch_policy = Launch::kDispatch;
          Fiber child(dispatch, [] {});
          child.join();
        });
        fiber.join();
      },
      "fiber [0-9]+ tried to dispatch while holding 1 OS mutex ");
}

// What the check must let through, in every build.

TEST(OsLockCheckNegativeTest, FibersThatUnlockBeforeSwitchingRun) {
  ScopedRuntime runtime(2);
  std::mutex mutex;
  std::recursive_mutex recursive;
  long counter = 0;
  Event go;
  std::vector<Fiber> fibers;
  for (int i = 0; i < 8; ++i) {
    fibers.emplace_back([&] {
      go.Wait();  // parks with nothing held
      for (int round = 0; round < 200; ++round) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          ++counter;
        }
        {
          std::lock_guard<std::recursive_mutex> outer(recursive);
          std::lock_guard<std::recursive_mutex> inner(recursive);
        }
        this_fiber::Yield();
      }
      this_fiber::SleepFor(1ms);
    });
  }
  go.Set();
  for (Fiber& fiber : fibers) fiber.join();
  EXPECT_EQ(counter, 8 * 200);
}

TEST(OsLockCheckNegativeTest, FailedTryLockThenYieldIsFine) {
  ScopedRuntime runtime(2);
  std::mutex mutex;
  mutex.lock();  // this thread holds it; the fiber's try_lock fails
  std::atomic<bool> tried{false};
  Fiber fiber([&] {
    const bool locked = mutex.try_lock();
    tried.store(!locked);
    this_fiber::Yield();
  });
  fiber.join();
  mutex.unlock();
  EXPECT_TRUE(tried.load());
}

// A plain thread blocks itself, not a worker: holding a std::mutex while it waits on a
// Spindle primitive is legal.
TEST(OsLockCheckNegativeTest, PlainThreadMayWaitOnEventUnderStdMutex) {
  ScopedRuntime runtime(2);
  std::mutex mutex;
  Event event;
  bool woke = false;
  std::atomic<int> waiter_tid{0};
  std::thread waiter([&] {
    std::lock_guard<std::mutex> lock(mutex);
    waiter_tid.store(testing::CurrentThreadId());
    woke = event.WaitFor(30s);
  });
  // Set only once the thread blocks in its wait, holding the mutex.
  ASSERT_TRUE(testing::WaitFor([&] { return waiter_tid.load() != 0; }));
  ASSERT_TRUE(testing::WaitUntilThreadBlocked(waiter_tid.load()));
  Fiber setter([&] { event.Set(); });
  setter.join();
  waiter.join();
  EXPECT_TRUE(woke);
}

}  // namespace
}  // namespace spindle::internal
