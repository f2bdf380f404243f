// Copyright 2026 The Spindle Authors.

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <csignal>
#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/run_blocking.h"
#include "io/stream.h"
#include "runtime/internal/observability/dump_signal.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/barrier.h"
#include "sync/condition_variable.h"
#include "sync/event.h"
#include "sync/future.h"
#include "sync/latch.h"
#include "sync/mutex.h"
#include "sync/semaphore.h"
#include "sync/shared_mutex.h"

// The fibers' entry functions: named, out of line, and each doing something after its
// wait (no tail call), so each one's frame and symbol are in its fiber's stack.
std::atomic<int> g_after_wait{0};

__attribute__((noinline)) void ParkOnMutex(spindle::Mutex* mutex) {
  mutex->lock();
  mutex->unlock();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnConditionVariable(spindle::Mutex* mutex,
                                                       spindle::ConditionVariable* cv,
                                                       const bool* go) {
  std::unique_lock<spindle::Mutex> lock(*mutex);
  cv->wait(lock, [go] { return *go; });
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnEvent(spindle::Event* event) {
  event->Wait();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnLatch(spindle::Latch* latch) {
  latch->wait();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnFuture(spindle::Future<int> future) {
  g_after_wait.fetch_add(spindle::BlockingGet(std::move(future)),
                         std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnTimer(const std::atomic<bool>* stop) {
  // acquire: pairs with the test's release store.
  while (!stop->load(std::memory_order_acquire)) {
    spindle::this_fiber::SleepFor(std::chrono::milliseconds(20));
  }
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnSocket(int fd) {
  auto stream = spindle::io::Stream::Adopt(fd, spindle::io::Address());
  ASSERT_TRUE(stream.ok()) << stream.status();
  char byte;
  auto read = stream->Read(&byte, 1);
  ASSERT_TRUE(read.ok()) << read.status();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnSharedMutex(spindle::SharedMutex* mutex) {
  mutex->lock_shared();
  mutex->unlock_shared();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnSemaphore(spindle::CountingSemaphore<>* semaphore) {
  semaphore->acquire();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnBarrier(spindle::Barrier* barrier) {
  barrier->arrive_and_wait();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

// The fiber ParkOnJoin() joins, for the dump's "waiting on join of fiber N".
std::atomic<std::uint64_t> g_joined_child{0};

__attribute__((noinline)) void ParkOnJoin(spindle::Event* child_go) {
  // The child must be running before join(), which would otherwise run it inline.
  spindle::Event child_started;
  spindle::Fiber child([child_go, &child_started] {
    child_started.Set();
    child_go->Wait();
  });
  child_started.Wait();
  g_joined_child.store(child.get_id());
  child.join();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void ParkOnRunBlocking(std::shared_future<void> go) {
  spindle::io::RunBlocking([&go] { go.wait(); });
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void DumpFromFiberEntry(std::string* out) {
  std::ostringstream dump;
  spindle::DumpFibers(dump);
  *out = dump.str();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void HungTestEntry(spindle::Event* never) {
  never->Wait();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

namespace spindle {
namespace {

using namespace std::chrono_literals;

// The dump's block of each fiber (from "fiber " to the next one).
std::vector<std::string> FiberBlocks(const std::string& dump) {
  std::vector<std::string> blocks;
  std::size_t begin = dump.find("\nfiber ");
  while (begin != std::string::npos) {
    const std::size_t end = dump.find("\nfiber ", begin + 1);
    blocks.push_back(
        dump.substr(begin + 1, end == std::string::npos ? end : end - begin));
    begin = end;
  }
  return blocks;
}

// Whether one fiber's block says `state` in its header and has `entry` in its stack.
bool HasFiber(const std::string& dump, const std::string& state,
              const std::string& entry) {
  for (const std::string& block : FiberBlocks(dump)) {
    const std::string header = block.substr(0, block.find('\n'));
    if (header.find(state) != std::string::npos &&
        block.find(entry, header.size()) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string Dump() {
  std::ostringstream out;
  DumpFibers(out);
  return out.str();
}

TEST(FiberDumpTest, NamesAFiberParkedOnEachPrimitiveWithItsEntry) {
  testing::ScopedRuntime runtime(2);
  const testing::TestWatchdog watchdog(120s,
                                       "NamesAFiberParkedOnEachPrimitiveWithItsEntry");
  Mutex mutex;
  mutex.lock();
  Mutex cv_mutex;
  ConditionVariable cv;
  bool cv_go = false;
  Event event;
  Latch latch(1);
  Promise<int> promise;
  std::atomic<bool> stop_sleeping{false};
  int sockets[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
  SharedMutex shared_mutex;
  shared_mutex.lock();
  CountingSemaphore<> semaphore(0);
  Barrier barrier(2);
  Event child_go;
  std::promise<void> blocking_go;

  std::vector<Fiber> fibers;
  fibers.emplace_back([&] { ParkOnMutex(&mutex); });
  fibers.emplace_back([&] { ParkOnConditionVariable(&cv_mutex, &cv, &cv_go); });
  fibers.emplace_back([&] { ParkOnEvent(&event); });
  fibers.emplace_back([&] { ParkOnLatch(&latch); });
  fibers.emplace_back(
      [future = promise.GetFuture()]() mutable { ParkOnFuture(std::move(future)); });
  fibers.emplace_back([&] { ParkOnTimer(&stop_sleeping); });
  fibers.emplace_back([fd = sockets[0]] { ParkOnSocket(fd); });
  fibers.emplace_back([&] { ParkOnSharedMutex(&shared_mutex); });
  fibers.emplace_back([&] { ParkOnSemaphore(&semaphore); });
  fibers.emplace_back([&] { ParkOnBarrier(&barrier); });
  fibers.emplace_back([&] { ParkOnJoin(&child_go); });
  fibers.emplace_back([go = blocking_go.get_future().share()] { ParkOnRunBlocking(go); });

  const std::vector<std::pair<std::string, std::string>> expected = {
      {"waiting on mutex", "ParkOnMutex"},
      {"waiting on condition_variable", "ParkOnConditionVariable"},
      {"waiting on event", "ParkOnEvent"},
      {"waiting on latch", "ParkOnLatch"},
      {"waiting on future", "ParkOnFuture"},
      {"waiting on timer", "ParkOnTimer"},
      {"waiting on socket", "ParkOnSocket"},
      {"waiting on shared_mutex", "ParkOnSharedMutex"},
      {"waiting on semaphore", "ParkOnSemaphore"},
      {"waiting on barrier", "ParkOnBarrier"},
      {"waiting on join of fiber", "ParkOnJoin"},
      {"waiting on run_blocking", "ParkOnRunBlocking"},
  };
  std::string dump;
  std::string missing;
  // Each fiber parks soon after it starts; the sleeper is between naps most of the time.
  const bool all_found = testing::WaitFor(
      [&] {
        dump = Dump();
        missing.clear();
        for (const auto& [state, entry] : expected) {
          if (!HasFiber(dump, state, entry)) missing += " " + entry;
        }
        return missing.empty();
      },
      60s);
  EXPECT_TRUE(all_found) << "missing:" << missing << "\n" << dump;
  EXPECT_TRUE(HasFiber(dump, "waiting on join of fiber " + std::to_string(g_joined_child.load()),
                       "ParkOnJoin"))
      << "the joiner should name fiber " << g_joined_child.load() << "\n" << dump;
  EXPECT_NE(dump.find("--- fiber dump: "), std::string::npos) << dump;
  EXPECT_NE(dump.find("--- end of fiber dump ---"), std::string::npos) << dump;

  mutex.unlock();
  {
    std::lock_guard<Mutex> lock(cv_mutex);
    cv_go = true;
  }
  cv.notify_all();
  event.Set();
  latch.count_down();
  promise.SetValue(0);
  stop_sleeping.store(true,
                      std::memory_order_release);  // release: pairs with ParkOnTimer
  ASSERT_EQ(write(sockets[1], "x", 1), 1);
  shared_mutex.unlock();
  semaphore.release();
  barrier.arrive_and_wait();
  child_go.Set();
  blocking_go.set_value();
  for (Fiber& fiber : fibers) fiber.join();
  close(sockets[1]);
}

TEST(FiberDumpTest, AFiberDumpingShowsItsOwnStack) {
  testing::ScopedRuntime runtime(2);
  std::string dump;
  RunAsFiber([&] { DumpFromFiberEntry(&dump); });
  EXPECT_TRUE(HasFiber(dump, "(this fiber, taking the dump)", "DumpFromFiberEntry"))
      << dump;
}

TEST(FiberDumpTest, ARunningFiberIsShownWithItsWorker) {
  testing::ScopedRuntime runtime(1);
  Event hold_worker;
  Event started;
  // The only worker parks nowhere: it is busy in this fiber until we say so, so the
  // fiber started next can only be queued (or instantiated but not run).
  Fiber busy([&] {
    started.Set();
    while (!hold_worker.IsSet()) {
    }
  });
  started.Wait();
  Fiber queued([] {});
  const std::string dump = Dump();
  EXPECT_NE(dump.find("running on worker 0"), std::string::npos) << dump;
  hold_worker.Set();
  busy.join();
  queued.join();
}

// A bounded dump: at most max_fibers captured and written, the rest counted.
TEST(FiberDumpTest, ABoundedDumpShowsAtMostMaxFibersAndCountsTheRest) {
  testing::ScopedRuntime runtime(2);
  constexpr int kParked = 30;
  Event release;
  std::vector<Fiber> parked;
  for (int i = 0; i < kParked; ++i) parked.emplace_back([&] { release.Wait(); });
  ASSERT_TRUE(testing::WaitFor([&] {
    std::ostringstream dump;
    DumpFibers(dump);
    std::size_t waiting = 0;
    for (std::size_t at = 0; (at = dump.str().find("waiting on event", at)) != std::string::npos;
         ++at) {
      ++waiting;
    }
    return waiting >= static_cast<std::size_t>(kParked);
  }));
  std::ostringstream out;
  DumpFibersOptions options;
  options.max_fibers = 5;
  DumpFibers(out, options);
  const std::string dump = out.str();
  std::size_t blocks = 0;
  for (std::size_t at = 0; (at = dump.find("\nfiber ", at)) != std::string::npos; ++at) {
    ++blocks;
  }
  EXPECT_EQ(blocks, 5u) << dump;
  EXPECT_NE(dump.find("more fibers with a stack not shown"), std::string::npos) << dump;
  EXPECT_NE(dump.find("--- end of fiber dump ---"), std::string::npos);
  release.Set();
  for (Fiber& fiber : parked) fiber.join();
}

// From a fiber, the dump yields between fibers: on one worker, a fiber made ready
// before the dump runs before the dump returns (it could not otherwise: the worker is
// busy in the dump), and with yield_between_fibers off it does not.
TEST(FiberDumpTest, ADumpFromAFiberYieldsBetweenFibers) {
  testing::ScopedRuntime runtime(1);
  Event release;
  std::vector<Fiber> parked;
  for (int i = 0; i < 5; ++i) parked.emplace_back([&] { release.Wait(); });
  for (bool yield : {false, true}) {
    SCOPED_TRACE(yield ? "yielding" : "not yielding");
    RunAsFiber([yield] {
      std::atomic<bool> witness_ran{false};
      Fiber witness([&] { witness_ran.store(true); });
      std::ostringstream out;
      DumpFibersOptions options;
      options.yield_between_fibers = yield;
      DumpFibers(out, options);
      EXPECT_EQ(witness_ran.load(), yield) << out.str();
      witness.join();
    });
  }
  release.Set();
  for (Fiber& fiber : parked) fiber.join();
}

TEST(FiberDumpTest, TerminateRuntimeLogsAndDumpsTheFibersItWaitsFor) {
  const testing::TestWatchdog watchdog(120s,
                                       "TerminateRuntimeLogsAndDumpsTheFibersItWaitsFor");
  FLAGS_fiber_concurrency = 2;
  FLAGS_fiber_scheduling_strategy = testing::TestStrategy();
  FLAGS_fiber_terminate_grace_ms = 50;
  StartRuntime();
  testing::LogCollector sink;
  // The straggler sleeps in short naps until told to stop through a plain atomic: a
  // plain thread that woke it through an Event could still be inside the scheduler
  // (waking a worker) when the fiber finishes and TerminateRuntime() frees it.
  std::atomic<bool> stop{false};
  Fiber([&] { ParkOnTimer(&stop); }).detach();
  std::thread terminator([] { TerminateRuntime(); });
  // Logged after one grace period, and again after each further one.
  const bool logged_twice = testing::WaitFor(
      [&] {
        const std::string text = sink.text();
        const std::size_t first = text.find("still waiting for 1 fibers");
        return first != std::string::npos &&
               text.find("still waiting for 1 fibers", first + 1) != std::string::npos;
      },
      60s);
  stop.store(true, std::memory_order_release);  // release: pairs with ParkOnTimer
  terminator.join();
  FLAGS_fiber_terminate_grace_ms = 10000;
  FLAGS_fiber_concurrency = 0;
  const std::string text = sink.text();
  EXPECT_TRUE(logged_twice) << text;
  EXPECT_NE(text.find("--fiber_terminate_grace_ms"), std::string::npos) << text;
  EXPECT_TRUE(HasFiber(text, "waiting on timer", "ParkOnTimer")) << text;
}

TEST(FiberDumpTest, TheDumpSignalDumpsToStderr) {
  FLAGS_fiber_dump_signal = SIGUSR2;
  const std::uint64_t before = internal::DumpSignalDumpsWritten();
  std::string output;
  {
    testing::ScopedRuntime runtime(2);
    Event event;
    Fiber parked([&] { ParkOnEvent(&event); });
    ASSERT_TRUE(testing::WaitFor(
        [&] { return HasFiber(Dump(), "waiting on event", "ParkOnEvent"); }));
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(raise(SIGUSR2), 0);
    const bool dumped =
        testing::WaitFor([&] { return internal::DumpSignalDumpsWritten() > before; });
    output = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(dumped);
    event.Set();
    parked.join();
  }
  FLAGS_fiber_dump_signal = 0;
  EXPECT_TRUE(HasFiber(output, "waiting on event", "ParkOnEvent")) << output;
}

TEST(FiberDumpTest, FlagsAreValidated) {
  internal::RuntimeOptions options = internal::RuntimeOptionsFromFlags();
  options.dump_signal = 65;
  EXPECT_NE(internal::ValidateRuntimeOptions(options).find("--fiber_dump_signal=65"),
            std::string::npos);
  options.dump_signal = SIGKILL;
  EXPECT_NE(internal::ValidateRuntimeOptions(options).find("--fiber_dump_signal"),
            std::string::npos);
  options.dump_signal = 0;
  options.terminate_grace = std::chrono::milliseconds(86400001);
  EXPECT_NE(internal::ValidateRuntimeOptions(options).find("--fiber_terminate_grace_ms"),
            std::string::npos);
  options.terminate_grace = std::chrono::milliseconds(0);
  for (std::uint64_t period : {0, 3, 48, 131072}) {
    options.ready_latency_sample_period = period;
    EXPECT_NE(internal::ValidateRuntimeOptions(options).find(
                  "--fiber_ready_latency_sample_period=" + std::to_string(period) +
                  " is invalid: expected a power of two in [1, 65536]"),
              std::string::npos)
        << period;
  }
  for (std::uint64_t period : {1, 64, 65536}) {
    options.ready_latency_sample_period = period;
    EXPECT_EQ(internal::ValidateRuntimeOptions(options), "") << period;
  }
}

TEST(FiberDumpDeathTest, TheTestWatchdogDumpsEveryFiberBeforeFailing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        testing::ScopedRuntime runtime(2);
        Event never;
        Fiber([&] { HungTestEntry(&never); }).detach();
        const testing::TestWatchdog watchdog(300ms, "a deliberately hung test");
        Event forever;
        forever.Wait();  // a plain thread blocks: the hang
      },
      "TestWatchdog: a deliberately hung test exceeded its deadline of 300 ms.*"
      "--- fiber dump: .*waiting on event.*HungTestEntry.*--- end of fiber dump ---");
}

}  // namespace
}  // namespace spindle
