// Copyright 2026 The Spindle Authors.
//
// The exceptions being handled belong to the fiber that handles them: a fiber that
// parks inside a catch block (or in a destructor run by unwinding) finds its own
// exception, and its own std::uncaught_exceptions(), when it resumes, whatever other
// fibers on the same thread threw and caught meanwhile.

#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/internal/exception_state.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/mutex.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;

// The message of the exception being handled on this fiber, "<none>" if there is none.
std::string CurrentMessage() {
  const std::exception_ptr current = std::current_exception();
  if (!current) return "<none>";
  try {
    std::rethrow_exception(current);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "<not a std::exception>";
  }
}

// Parks the fiber: mostly a Yield(); every fourth time a short sleep, every fourth a
// contended Mutex (both park through the wait queue).
void Park(int i, Mutex& mutex) {
  switch (i % 4) {
    case 0:
      this_fiber::SleepFor(1us);
      break;
    case 1: {
      std::lock_guard<Mutex> lock(mutex);
      this_fiber::Yield();
      break;
    }
    default:
      this_fiber::Yield();
  }
}

// Runs body(f) on eight fibers at once, f = 0..7, and joins them.
template <class Body>
void OnEightFibers(Body body) {
  std::vector<Fiber> fibers;
  for (int f = 0; f < 8; ++f) fibers.emplace_back([&body, f] { body(f); });
  for (auto& fiber : fibers) fiber.join();
}

class ExceptionStateTest : public ::testing::TestWithParam<std::size_t> {};

INSTANTIATE_TEST_SUITE_P(Workers, ExceptionStateTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// The scenario: 8 fibers each throw, park inside the catch block, then rethrow
// the current exception and check it is theirs.
TEST_P(ExceptionStateTest, ParkingInsideACatchKeepsTheFibersOwnException) {
  ScopedRuntime runtime(GetParam());
  const int iterations = static_cast<int>(Scaled(1000));
  std::atomic<int> wrong{0}, checks{0};
  Mutex mutex;
  OnEightFibers([&](int f) {
    for (int i = 0; i < iterations; ++i) {
      const std::string mine = "fiber " + std::to_string(f) + " round " + std::to_string(i);
      try {
        throw std::runtime_error(mine);
      } catch (const std::exception& caught) {
        if (std::uncaught_exceptions() != 0) ++wrong;
        Park(i, mutex);
        if (std::uncaught_exceptions() != 0) ++wrong;
        try {
          std::rethrow_exception(std::current_exception());
        } catch (const std::exception& again) {
          if (&again != &caught || std::string(again.what()) != mine) ++wrong;
        }
        if (CurrentMessage() != mine) ++wrong;
        ++checks;
      }
      if (std::current_exception()) ++wrong;  // left the catch: nothing handled
    }
  });
  EXPECT_EQ(checks.load(), 8 * iterations);
  EXPECT_EQ(wrong.load(), 0);
}

// A destructor that parks while unwinding sees its own uncaught count before and after
// the park, while fibers with other counts run on the same workers.
struct ParkingGuard {
  int expected_uncaught;
  std::atomic<int>* wrong;
  Mutex* mutex;
  int i;
  ~ParkingGuard() {
    if (std::uncaught_exceptions() != expected_uncaught) ++*wrong;
    Park(i, *mutex);
    if (std::uncaught_exceptions() != expected_uncaught) ++*wrong;
  }
};

TEST_P(ExceptionStateTest, UncaughtExceptionsIsPerFiberDuringUnwinding) {
  ScopedRuntime runtime(GetParam());
  const int iterations = static_cast<int>(Scaled(500));
  std::atomic<int> wrong{0};
  Mutex mutex;
  OnEightFibers([&](int f) {
    for (int i = 0; i < iterations; ++i) {
      if (f % 2 == 0) {
        try {
          ParkingGuard guard{1, &wrong, &mutex, i};
          throw f;
        } catch (int) {
        }
      } else {
        ParkingGuard guard{0, &wrong, &mutex, i};  // no exception: count 0
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// Inside a catch: a nested try/catch that parks, a park between `throw;` levels, and the
// outer exception still current after each.
TEST_P(ExceptionStateTest, NestedHandlersAndRethrowLevelsSurviveParks) {
  ScopedRuntime runtime(GetParam());
  const int iterations = static_cast<int>(Scaled(300));
  std::atomic<int> wrong{0};
  Mutex mutex;
  OnEightFibers([&](int f) {
    const std::string outer = "outer " + std::to_string(f);
    const std::string inner = "inner " + std::to_string(f);
    for (int i = 0; i < iterations; ++i) {
      try {
        throw std::runtime_error(outer);
      } catch (const std::exception& first) {
        try {
          throw std::logic_error(inner);
        } catch (const std::exception&) {
          Park(i, mutex);
          if (CurrentMessage() != inner) ++wrong;
        }
        Park(i + 1, mutex);
        if (CurrentMessage() != outer) ++wrong;
        try {
          throw;  // the outer exception again, one level deeper
        } catch (const std::exception& second) {
          Park(i + 2, mutex);
          if (&second != &first || CurrentMessage() != outer) ++wrong;
        }
        Park(i + 3, mutex);
        if (CurrentMessage() != outer) ++wrong;
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// A child joined from inside a catch block (run inline by join() when it has not
// started, on the joiner's stack) throws and catches its own exception, parking in its
// handler; the joiner's exception is current again afterwards.
TEST_P(ExceptionStateTest, ChildJoinedInsideACatchHandlesItsOwnException) {
  ScopedRuntime runtime(GetParam());
  const int iterations = static_cast<int>(Scaled(300));
  std::atomic<int> wrong{0};
  Mutex mutex;
  RunAsFiber([&] {
    for (int i = 0; i < iterations; ++i) {
      try {
        throw std::runtime_error("joiner");
      } catch (const std::exception&) {
        Fiber child([&, i] {
          try {
            throw std::runtime_error("child");
          } catch (const std::exception&) {
            Park(i, mutex);
            if (CurrentMessage() != "child") ++wrong;
          }
        });
        child.join();
        if (CurrentMessage() != "joiner" || std::uncaught_exceptions() != 0) ++wrong;
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// RunAsFiber from a plain thread that is inside a catch block: the fiber starts with no
// exception of its own, and the thread's exception is current again afterwards.
TEST_P(ExceptionStateTest, RunAsFiberFromACatchBlockStartsClean) {
  ScopedRuntime runtime(GetParam());
  try {
    throw std::runtime_error("thread");
  } catch (const std::exception&) {
    const std::string seen = RunAsFiber([] {
      std::string result = CurrentMessage();
      try {
        throw std::runtime_error("fiber");
      } catch (const std::exception&) {
        this_fiber::Yield();
        result += "/" + CurrentMessage();
      }
      return result;
    });
    EXPECT_EQ(seen, "<none>/fiber");
    EXPECT_EQ(CurrentMessage(), "thread");
  }
}

// A fiber whose exception state is left non-empty when it finishes (only an ABI hack or
// a corrupted runtime can do that) stops the process with a clear message instead of
// passing the state on to the next fiber.
TEST(ExceptionStateDeathTest, FinishingWithAnExceptionBeingHandledAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(1);
        RunAsFiber([] { internal::ThisThreadExceptionState()->uncaught_exceptions += 1; });
      },
      "finished while an exception was still being handled in it");
}

}  // namespace
}  // namespace spindle
