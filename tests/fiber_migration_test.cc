// Copyright 2026 The Spindle Authors.
//
// A fiber migrates between worker threads at every park: it parks on one worker and
// resumes on whichever takes it. Whatever it reads of a thread-local after the park
// must be the new thread's. A compiler that keeps a thread-local's address (or the
// thread pointer) across the switch reads the old thread's copy instead (brpc #1776,
// #3380); it shows only when the switch and the park are optimised, and across
// translation units only with -flto, so this test also runs optimised (the cmake lane)
// and linked with -flto (its _lto twin there: docs/internals/testing-and-ci.md).
//
// Each fiber parks many times (yields, timer sleeps, mutex hand-offs) and, after every
// resumption, reads
//   - the runtime's thread-locals, through the accessors the runtime itself uses: the
//     current fiber (must be itself), the current FiberWorker and the worker binding
//     of the scheduling group (must agree with each other), and the thread's master
//     fiber; each thread must show one worker and one master fiber, and each worker and
//     master fiber one thread (gettid(), a system call no compiler can cache);
//   - a thread-local of the user's, through an out-of-line accessor (the way
//     docs/fibers.md tells users to read one in fiber code): it must hold the thread's
//     own id.
// A cached address shows as a fiber that sees another thread's worker, master or value.

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/fiber_worker.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/mutex.h"

namespace spindle {
namespace {

using testing::Scaled;
using testing::ScopedRuntime;

long Gettid() { return syscall(SYS_gettid); }

// The user's thread-local, read through an out-of-line function: its id, set by the
// thread's first read.
thread_local long user_thread_id = 0;
__attribute__((noinline)) long UserThreadId() {
  if (user_thread_id == 0) user_thread_id = Gettid();
  return user_thread_id;
}

// What one thread showed: the first worker and master fiber seen on it. Thread-safe.
class ThreadMap {
 public:
  // Records what the fiber saw on thread `tid`; returns a description of the first
  // inconsistency with earlier sightings, or "".
  std::string Check(long tid, const void* worker, const void* master) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = by_thread_.emplace(tid, Seen{worker, master});
    if (!fresh && (it->second.worker != worker || it->second.master != master)) {
      return "thread " + std::to_string(tid) + " showed another worker or master fiber";
    }
    auto [w, w_fresh] = thread_of_worker_.emplace(worker, tid);
    if (!w_fresh && w->second != tid) {
      return "one worker showed on threads " + std::to_string(w->second) + " and " +
             std::to_string(tid);
    }
    auto [m, m_fresh] = thread_of_master_.emplace(master, tid);
    if (!m_fresh && m->second != tid) {
      return "one master fiber showed on threads " + std::to_string(m->second) + " and " +
             std::to_string(tid);
    }
    return "";
  }

 private:
  struct Seen {
    const void* worker;
    const void* master;
  };
  std::mutex mutex_;
  std::map<long, Seen> by_thread_;
  std::map<const void*, long> thread_of_worker_;
  std::map<const void*, long> thread_of_master_;
};

class FiberMigrationTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  std::size_t workers() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Workers, FiberMigrationTest, ::testing::Values(2, 4),
                         [](const auto& info) {
                           return std::to_string(info.param) + "Workers";
                         });

TEST_P(FiberMigrationTest, ThreadLocalsReadAfterAParkAreTheNewThreads) {
  ScopedRuntime runtime(workers());
  ThreadMap threads;
  Mutex mutex;
  std::atomic<std::size_t> migrations{0};
  std::atomic<std::size_t> wrong{0};
  std::mutex first_error_lock;
  std::string first_error;
  auto fail = [&](const std::string& what) {
    wrong.fetch_add(1);
    std::lock_guard<std::mutex> lock(first_error_lock);
    if (first_error.empty()) first_error = what;
  };
  const std::size_t fibers = 8 * workers();
  const int steps = static_cast<int>(Scaled(1000));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int rounds = 0;
  do {
    ++rounds;
    std::vector<Fiber> started;
    for (std::size_t i = 0; i < fibers; ++i) {
      started.emplace_back([&] {
        internal::FiberEntity* const self = internal::GetCurrentFiberEntity();
        long before = Gettid();
        for (int step = 0; step < steps; ++step) {
          // Read before the park too, in this same function: a compiler that keeps the
          // address (or the value of a call it thinks cannot change) across the park
          // hands the same worker and master to the reads below, on another thread.
          const std::string seen_before = threads.Check(
              before, internal::CurrentFiberWorker(), internal::GetMasterFiberEntity());
          if (!seen_before.empty()) fail(seen_before);
          switch (step % 3) {
            case 0:
              this_fiber::Yield();
              break;
            case 1:
              this_fiber::SleepFor(std::chrono::microseconds(20));  // a timer wakes it
              break;
            default: {
              std::lock_guard<Mutex> lock(mutex);
              this_fiber::Yield();  // others park on the mutex meanwhile
            }
          }
          const long now = Gettid();
          if (now != before) migrations.fetch_add(1, std::memory_order_relaxed);
          before = now;
          if (internal::GetCurrentFiberEntity() != self) {
            fail("the current fiber is another after a park");
          }
          internal::FiberWorker* worker = internal::CurrentFiberWorker();
          std::size_t bound_index = 0;
          internal::SchedulingGroup* bound = internal::ThisThreadWorkerGroup(&bound_index);
          if (worker == nullptr || bound != worker->group() || bound_index != worker->index()) {
            fail("the current worker and the group's worker binding disagree");
          }
          const std::string seen =
              threads.Check(now, worker, internal::GetMasterFiberEntity());
          if (!seen.empty()) fail(seen);
          if (UserThreadId() != now) fail("the user's thread-local is another thread's");
        }
      });
    }
    for (auto& f : started) f.join();
  } while (migrations.load() == 0 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(wrong.load(), 0u) << first_error;
  EXPECT_GT(migrations.load(), 0u) << "no fiber moved between workers in " << rounds
                                   << " rounds; the test did not show migration";
}

}  // namespace
}  // namespace spindle
