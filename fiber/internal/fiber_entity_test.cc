// Copyright 2026 The Spindle Authors.

#include "fiber/internal/fiber_entity.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fiber/internal/fiber_entity_testing.h"
#include "fiber/internal/sanitizers.h"
#include "fiber/internal/stack_overflow.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

using testing::NewFiber;
using testing::RunFromMaster;
using testing::SwitchToReady;

// Parks `self` (Running -> Waiting) and switches to the calling thread's master; the
// scheduler lock taken here is released by the master's landing hook, not by `self`.
void ParkToMaster(FiberEntity* self) {
  self->scheduler_lock.lock();
  self->SetState(FiberState::kWaiting);
  self->SwitchTo(GetMasterFiberEntity(),
                 LandingHook{[](void* fiber) {
                               static_cast<FiberEntity*>(fiber)->scheduler_lock.unlock();
                             },
                             self});
}

TEST(FiberEntityTest, RunsStartProcAndRecyclesTheStack) {
  int runs = 0;
  FiberEntity* fiber = NewFiber([&] { ++runs; });
  const Stack stack = fiber->stack();
  RunFromMaster(fiber);
  EXPECT_EQ(runs, 1);
  // The dead fiber's stack went back to this thread's cache: the next fiber reuses it.
  FiberEntity* next = NewFiber([] {});
  EXPECT_EQ(next->stack().base, stack.base);
  RunFromMaster(next);
}

#ifdef SPINDLE_TSAN
// Under ThreadSanitizer a dead fiber's TSan fiber serves the next fiber to first run on
// the same thread (__tsan_create_fiber costs milliseconds): 3,000 fibers one after
// another create a handful (one per kTsanFiberMaxUses = 1,024 fibers, as a cap on a
// leaked shadow frame), not 3,000. Two at a time, each parking once, so a pooled TSan
// fiber also serves a fiber that switched in and out before it died; and each fiber
// writes what the next reads, checked by TSan as ordered through the switches.
TEST(FiberEntityTest, TsanFibersAreReusedByTheNextFibersOnTheThread) {
  const std::uint64_t created_before = TsanFibersCreated();
  int shared = 0;
  for (int i = 0; i < 1500; ++i) {
    FiberEntity* first = NewFiber([&] {
      FiberEntity* self = GetCurrentFiberEntity();
      shared = 2 * i;
      ParkToMaster(self);
      EXPECT_EQ(shared, 2 * i + 1);
    });
    FiberEntity* second = NewFiber([&] {
      EXPECT_EQ(shared, 2 * i);
      shared = 2 * i + 1;
    });
    RunFromMaster(first);   // parks
    RunFromMaster(second);  // dies
    {
      std::lock_guard<Spinlock> lock(first->scheduler_lock);
      first->SetState(FiberState::kReady);
    }
    RunFromMaster(first);  // dies
  }
  const std::uint64_t created = TsanFibersCreated() - created_before;
  RecordProperty("tsan_fibers_created", static_cast<int>(created));
  EXPECT_LE(created, 2u + 3000u / 1024u + 1u) << "TSan fibers were not reused";
}
#endif  // SPINDLE_TSAN

TEST(FiberEntityTest, ControlBlockSitsAtTheTopOfTheStackWithAMagic) {
  FiberEntity* fiber = NewFiber([] {});
  const Stack& stack = fiber->stack();
  const char* block = reinterpret_cast<const char*>(fiber);
  EXPECT_EQ(block, stack.top() - FiberControlBlockSize());
  std::uint64_t magic = 0;
  std::memcpy(&magic, block, sizeof(magic));
  EXPECT_EQ(magic, kFiberEntityMagic);
  EXPECT_EQ(std::string(block, 8), "SPINDLE!");
  EXPECT_TRUE(fiber->locals.empty());
  StackCache::ForThisThread().Put(DestroyFiberEntity(fiber));  // never started
}

TEST(FiberEntityTest, IdsAreUniqueAcrossThreads) {
  std::mutex lock;
  std::set<std::uint64_t> ids;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::uint64_t> mine;
      for (int i = 0; i < 5000; ++i) mine.push_back(NewFiberId());
      std::lock_guard<std::mutex> guard(lock);
      ids.insert(mine.begin(), mine.end());
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ids.size(), 20000u);
  EXPECT_EQ(ids.count(0), 0u);
}

TEST(FiberEntityTest, CurrentFiberFollowsSwitches) {
  FiberEntity* master = GetMasterFiberEntity();
  EXPECT_EQ(GetCurrentFiberEntity(), master);
  FiberEntity* fiber = nullptr;
  FiberEntity* seen = nullptr;
  fiber = NewFiber([&] { seen = GetCurrentFiberEntity(); });
  RunFromMaster(fiber);
  EXPECT_EQ(seen, fiber);
  EXPECT_EQ(GetCurrentFiberEntity(), master);
}

TEST(FiberEntityTest, LandingHookRunsOnTheTargetBeforeItContinues) {
  std::vector<std::string> events;
  FiberEntity* master = GetMasterFiberEntity();
  FiberEntity* fiber = nullptr;
  auto record = [](void* arg) {
    auto* log = static_cast<std::vector<std::string>*>(arg);
    log->push_back("hook on " + std::to_string(GetCurrentFiberEntity()->id));
  };
  fiber = NewFiber([&] {
    events.push_back("fiber starts");
    {
      std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
      fiber->SetState(FiberState::kReady);
    }
    fiber->SwitchTo(master, LandingHook{record, &events});
    events.push_back("fiber resumed");
  });
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kRunning);
  }
  master->SwitchTo(fiber, LandingHook{record, &events});  // first entry: via FiberProc
  events.push_back("master resumed");
  const std::uint64_t fiber_id = fiber->id;  // the entity is gone once the fiber ends
  RunFromMaster(fiber);
  const std::vector<std::string> expected = {
      "hook on " + std::to_string(fiber_id),  // ran on the new fiber, before its body
      "fiber starts",
      "hook on " + std::to_string(master->id),  // ran on the master, before it went on
      "master resumed",
      "fiber resumed",
  };
  EXPECT_EQ(events, expected);
}

TEST(FiberEntityTest, ParkedFiberIsUnlockedByTheLandingHook) {
  FiberEntity* fiber = nullptr;
  bool resumed = false;
  fiber = NewFiber([&] {
    ParkToMaster(fiber);
    resumed = true;
  });
  RunFromMaster(fiber);
  // Back on the master: the fiber is saved, Waiting, and its lock was released by the
  // hook that ran here.
  EXPECT_FALSE(fiber->scheduler_lock.IsLocked());
  EXPECT_EQ(fiber->state(), FiberState::kWaiting);
  EXPECT_FALSE(resumed);
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kReady);
  }
  RunFromMaster(fiber);
  EXPECT_TRUE(resumed);
}

// The race the landing hook closes: a fiber parks on one thread while another thread is
// already trying to wake it. The waker takes the fiber's scheduler lock, and the lock is
// released only once the parking switch has saved the fiber's registers, so the waker
// can never run the fiber on a half-saved stack. Two threads keep handing one fiber to
// each other, so every resumption also migrates it: the fiber checks that the current
// fiber and the thread it runs on are looked up afresh after each switch. (The thread is
// identified by gettid(), a real system call: std::this_thread::get_id() is built on
// pthread_self(), which glibc declares `const`, and an optimising compiler reuses its
// result across the switch, which is the very hazard GetCurrentFiberEntity() avoids.)
TEST(FiberEntityTest, CrossThreadParkAndResumeRace) {
  const int kIterations = kUnderSanitizer ? 2000 : 20000;
  std::atomic<int> owner_token{-1};  // token of the thread that ran the fiber last
  std::atomic<bool> done{false};
  std::atomic<int> migrations{0};
  std::atomic<int> wrong_current{0};
  FiberEntity* fiber = nullptr;
  fiber = NewFiber([&] {
    for (int i = 0; i < kIterations; ++i) {
      const long before = syscall(SYS_gettid);
      ParkToMaster(fiber);
      if (syscall(SYS_gettid) != before) migrations.fetch_add(1);
      if (GetCurrentFiberEntity() != fiber) wrong_current.fetch_add(1);
    }
    done.store(true);
  });
  auto waker = [&](int token) {
    while (!done.load()) {
      std::unique_lock<Spinlock> lock(fiber->scheduler_lock);
      if (done.load()) break;
      if (owner_token.load() == token) continue;  // the other thread's turn
      if (fiber->state() != FiberState::kWaiting && owner_token.load() != -1) continue;
      if (owner_token.load() == -1 && token != 0) continue;  // thread 0 starts it
      owner_token.store(token);
      if (fiber->state() == FiberState::kWaiting) fiber->SetState(FiberState::kReady);
      fiber->SetState(FiberState::kRunning);
      lock.unlock();
      GetMasterFiberEntity()->SwitchTo(fiber);
    }
  };
  std::thread a(waker, 0);
  std::thread b(waker, 1);
  a.join();
  b.join();
  EXPECT_EQ(migrations.load(), kIterations);
  EXPECT_EQ(wrong_current.load(), 0);
}

TEST(FiberEntityTest, ExitBarrierHookRunsOnTheFiberBeforeReclaim) {
  static std::vector<std::string>* events = nullptr;
  std::vector<std::string> log;
  events = &log;
  FiberEntity* fiber = NewFiber([] { events->push_back("body"); });
  fiber->exit_barrier_hook = [](void* arg) {
    events->push_back(GetCurrentFiberEntity() == arg ? "exit hook on fiber"
                                                     : "exit hook elsewhere");
  };
  fiber->exit_barrier_arg = fiber;
  fiber->reclaim = [](FiberEntity* dead) {
    events->push_back(dead->state() == FiberState::kDead && GetCurrentFiberEntity()->is_master()
                          ? "reclaim dead on master"
                          : "reclaim in wrong state");
    StackCache::ForThisThread().Put(DestroyFiberEntity(dead));
  };
  RunFromMaster(fiber);
  EXPECT_EQ(log, (std::vector<std::string>{"body", "exit hook on fiber",
                                           "reclaim dead on master"}));
  events = nullptr;
}

TEST(FiberEntityTest, LegalStateTransitions) {
  FiberEntity* fiber = NewFiber([] {});
  fiber->scheduler_lock.lock();
  EXPECT_EQ(fiber->state(), FiberState::kReady);
  fiber->SetState(FiberState::kRunning);
  fiber->SetState(FiberState::kReady);
  fiber->SetState(FiberState::kRunning);
  fiber->SetState(FiberState::kWaiting);
  fiber->SetState(FiberState::kReady);
  EXPECT_EQ(fiber->state(), FiberState::kReady);
  fiber->scheduler_lock.unlock();
  StackCache::ForThisThread().Put(DestroyFiberEntity(fiber));
}

class FiberEntityDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

void ExpectIllegal(FiberState from_running_path, FiberState to, const char* message) {
  FiberEntity* fiber = NewFiber([] {});
  std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
  if (from_running_path != FiberState::kReady) fiber->SetState(FiberState::kRunning);
  if (from_running_path == FiberState::kWaiting || from_running_path == FiberState::kDead) {
    fiber->SetState(from_running_path);
  }
  EXPECT_DEATH(fiber->SetState(to), message);
}

TEST_F(FiberEntityDeathTest, IllegalTransitionsAreCheckFailures) {
  ExpectIllegal(FiberState::kReady, FiberState::kDead, "illegal state transition Ready -> Dead");
  ExpectIllegal(FiberState::kReady, FiberState::kWaiting,
                "illegal state transition Ready -> Waiting");
  ExpectIllegal(FiberState::kWaiting, FiberState::kRunning,
                "illegal state transition Waiting -> Running");
  ExpectIllegal(FiberState::kDead, FiberState::kReady, "illegal state transition Dead -> Ready");
  ExpectIllegal(FiberState::kRunning, FiberState::kRunning,
                "illegal state transition Running -> Running");
}

TEST_F(FiberEntityDeathTest, StateChangeWithoutTheLockIsACheckFailure) {
  FiberEntity* fiber = NewFiber([] {});
  EXPECT_DEATH(fiber->SetState(FiberState::kRunning), "without holding its scheduler lock");
  EXPECT_DEATH((fiber->Transition<FiberState::kReady, FiberState::kRunning>()),
               "without holding its scheduler lock");
}

TEST(FiberEntityTest, TransitionFromTheExpectedStateChangesIt) {
  FiberEntity* fiber = NewFiber([] {});
  fiber->scheduler_lock.lock();
  fiber->Transition<FiberState::kReady, FiberState::kRunning>();
  EXPECT_EQ(fiber->state(), FiberState::kRunning);
  fiber->Transition<FiberState::kRunning, FiberState::kReady>();
  EXPECT_EQ(fiber->state(), FiberState::kReady);
  fiber->scheduler_lock.unlock();
  StackCache::ForThisThread().Put(DestroyFiberEntity(fiber));
}

TEST_F(FiberEntityDeathTest, TransitionFromAnyOtherStateIsACheckFailure) {
  // Waiting -> Ready is an edge of the diagram, but not where Running was expected (a
  // yielder that is not running, a taken entry that is not ready).
  FiberEntity* fiber = NewFiber([] {});
  std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
  fiber->SetState(FiberState::kRunning);
  fiber->SetState(FiberState::kWaiting);
  EXPECT_DEATH((fiber->Transition<FiberState::kRunning, FiberState::kReady>()),
               "state Waiting where Running was expected, changing to Ready");
  EXPECT_DEATH((fiber->Transition<FiberState::kReady, FiberState::kRunning>()),
               "state Waiting where Ready was expected, changing to Running");
}

__attribute__((noinline)) int Recurse(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  if (depth > (1 << 30)) return frame[0];
  return Recurse(depth + 1) + frame[0];
}

TEST_F(FiberEntityDeathTest, StackOverflowIsReportedWithTheFiberId) {
  EXPECT_DEATH(
      {
        FiberEntity* fiber = NewFiber([] { Recurse(0); });
        RunFromMaster(fiber);
      },
      "fiber stack overflow: fiber [0-9]+ ran past its 131072-byte stack");
}

// Unguarded stacks (stack_allocator.cc, layout 3): past the mmap limit, without guard
// markers. The first stack of this allocator is mmapped, the rest are not.
StackAllocator& UnguardedStacks() {
  static auto* const allocator = [] {
    StackAllocatorOptions options;
    options.stack_size = 64 * 1024;
    options.guard_regions = false;
    options.mmap_limit = 1;
    auto* created = new StackAllocator(options);
    const Stack first = created->Create();
    EXPECT_EQ(first.origin, Stack::Origin::kMmapped);
    return created;
  }();
  return *allocator;
}

FiberEntity* NewUnguardedFiber(FiberFunction body) {
  const Stack stack = UnguardedStacks().Create();
  EXPECT_FALSE(stack.guarded);
  FiberEntity* fiber = InstantiateFiberEntity(stack, std::move(body));
  fiber->reclaim = [](FiberEntity* dead) { UnguardedStacks().Destroy(DestroyFiberEntity(dead)); };
  return fiber;
}

// Recurses until its frame is below `limit`; then, if `switch_there`, switches to the
// master fiber from that depth. Small frames that are all written (a return address, a
// frame pointer, a marker), as a runaway recursion's are: an array's ASan redzones
// would leave stretches of untouched bytes as long as the canary.
__attribute__((noinline)) int RecurseBelow(const char* limit, bool switch_there) {
  volatile std::uint64_t marker = 0x5a5a5a5a5a5a5a5a;
  if (static_cast<const char*>(__builtin_frame_address(0)) < limit) {
    if (switch_there) SwitchToReady(GetCurrentFiberEntity(), GetMasterFiberEntity());
    return static_cast<int>(marker & 1);
  }
  return RecurseBelow(limit, switch_there) + static_cast<int>(marker & 1);
}

TEST(FiberEntityTest, UnguardedStacksRunAndSwitchWithoutComplaint) {
  int switches = 0;
  FiberEntity* fiber = NewUnguardedFiber([&] {
    for (int i = 0; i < 3; ++i) {
      ++switches;
      // Deep, but within the stack: the canary stays intact.
      RecurseBelow(GetCurrentFiberEntity()->stack().base + 8 * 1024, /*switch_there=*/true);
    }
  });
  for (int i = 0; i < 4; ++i) RunFromMaster(fiber);
  EXPECT_EQ(switches, 3);
}

TEST_F(FiberEntityDeathTest, OverflowOfAnUnguardedStackIsFoundAtItsNextSwitch) {
  // The fiber runs 1 KiB past its stack, returns, and ends: the switch away from it
  // finds the canary overwritten.
  EXPECT_DEATH(
      {
        FiberEntity* fiber = NewUnguardedFiber([] {
          RecurseBelow(GetCurrentFiberEntity()->stack().base - 1024, false);
        });
        RunFromMaster(fiber);
      },
      "fiber stack overflow: fiber [0-9]+ ran past its 65536-byte stack \\(no guard "
      "page; found when it switched: the canary below the stack was overwritten\\)");
  // The fiber switches away while it is still past its stack.
  EXPECT_DEATH(
      {
        FiberEntity* fiber = NewUnguardedFiber([] {
          RecurseBelow(GetCurrentFiberEntity()->stack().base - 512, true);
        });
        RunFromMaster(fiber);
      },
      "fiber stack overflow: fiber [0-9]+ ran past its 65536-byte stack \\(no guard "
      "page; found when it switched: the stack pointer is below the stack\\)");
}

TEST_F(FiberEntityDeathTest, EscapingExceptionNamesTheFiber) {
  EXPECT_DEATH(
      {
        FiberEntity* fiber = NewFiber([] { throw std::runtime_error("boom"); });
        RunFromMaster(fiber);
      },
      "exception escaped fiber [0-9]+: boom");
}

TEST(StackOverflowTest, MessageFormatting) {
  GuardedStackInfo info;
  info.fiber_id = 42;
  info.stack_size = 65536;
  char buffer[256];
  const std::size_t length = FormatStackOverflowMessage(
      info, reinterpret_cast<void*>(0x7f00dead0000), buffer, sizeof(buffer));
  EXPECT_EQ(std::string(buffer, length),
            "fiber stack overflow: fiber 42 ran past its 65536-byte stack (fault at "
            "0x7f00dead0000 in the guard page); raise --fiber_stack_size\n");
}

}  // namespace
}  // namespace spindle::internal
