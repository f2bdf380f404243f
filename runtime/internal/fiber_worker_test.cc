// Copyright 2026 The Spindle Authors.
//
// Work stealing end to end: fibers started into one group run on another group's
// workers (on the same node always, across nodes only when enabled), and
// scheduling_group_local fibers never leave their group. Multi-node cases run on any
// machine through --fiber_numa_topology_override.

#include "runtime/internal/fiber_worker.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/lost_wake_hammer.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/base/topology.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"
#include "sync/event.h"

namespace spindle::internal {
namespace {

using spindle::testing::Scaled;
using spindle::testing::WaitFor;

// A runtime started from flags for the lifetime of the object; every flag is restored
// afterwards.
// With no fake topology the layout is not NUMA-aware (one pool of CPUs), so the shape
// does not depend on the test machine's nodes.
class FlagRuntime {
 public:
  FlagRuntime(const std::string& topology, std::size_t workers, std::size_t group_size,
              std::size_t ratio = 16, std::size_t cross_ratio = 0) {
    gflags::SetCommandLineOption("fiber_scheduling_strategy",
                                 spindle::testing::TestStrategy().c_str());
    gflags::SetCommandLineOption("fiber_numa_topology_override", topology.c_str());
    gflags::SetCommandLineOption("fiber_numa_aware", topology.empty() ? "false" : "auto");
    gflags::SetCommandLineOption("fiber_concurrency", std::to_string(workers).c_str());
    gflags::SetCommandLineOption("fiber_scheduling_group_size",
                                 std::to_string(group_size).c_str());
    gflags::SetCommandLineOption("fiber_work_stealing_ratio", std::to_string(ratio).c_str());
    gflags::SetCommandLineOption("fiber_cross_numa_work_stealing_ratio",
                                 std::to_string(cross_ratio).c_str());
    StartRuntime();
  }
  ~FlagRuntime() { TerminateRuntime(); }

 private:
  gflags::FlagSaver saver_;  // destroyed after the runtime stops
};

std::size_t CurrentGroup() { return CurrentFiberWorker()->group()->index(); }

Fiber::Attributes OnGroup(std::size_t group, bool local = false) {
  Fiber::Attributes attributes;
  attributes.scheduling_group = group;
  attributes.scheduling_group_local = local;
  return attributes;
}

void BusyFor(std::chrono::microseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The proof that same-node stealing happens: group 0 has one worker, held by a fiber
// (group-local, so it cannot be stolen itself) that does not give it back until a
// second fiber queued behind it on group 0 has run. Only a thief can run that fiber.
class SameNodeStealTest : public ::testing::TestWithParam<std::size_t> {};

INSTANTIATE_TEST_SUITE_P(Ratios, SameNodeStealTest, ::testing::Values(1, 16, 1000),
                         [](const auto& info) { return "Every" + std::to_string(info.param); });

// The stolen fiber then yields and sleeps: it stays in the thief's group (it belongs
// to it now; group 0's worker is still held, so it cannot be stolen back).
TEST_P(SameNodeStealTest, AFiberStuckBehindABusyWorkerIsStolen) {
  FlagRuntime runtime("0:0-1", 2, 1, GetParam());
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  std::atomic<bool> blocker_running{false};
  std::atomic<bool> stolen_ran{false};
  std::atomic<std::size_t> stolen_group{99};
  std::atomic<int> left_thief{0};
  StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
    blocker_running.store(true);
    EXPECT_TRUE(WaitFor([&] { return stolen_ran.load(); }, std::chrono::seconds(20)));
  });
  ASSERT_TRUE(WaitFor([&] { return blocker_running.load(); }));
  StartFiberDetached(OnGroup(0), [&] {
    stolen_group.store(CurrentGroup());
    this_fiber::Yield();
    if (CurrentGroup() != stolen_group.load()) left_thief.fetch_add(1);
    this_fiber::SleepFor(std::chrono::microseconds(100));
    if (CurrentGroup() != stolen_group.load()) left_thief.fetch_add(1);
    stolen_ran.store(true);
  });
  ASSERT_TRUE(WaitFor([&] { return stolen_ran.load(); }, std::chrono::seconds(20)));
  EXPECT_EQ(stolen_group.load(), 1u);
  EXPECT_EQ(left_thief.load(), 0);
  const auto stats = GetSchedulingGroupStats();
  EXPECT_GE(stats[1].steals_in_same_node, 1u);
  EXPECT_GE(stats[0].steals_out, 1u);
  EXPECT_EQ(stats[1].steals_in_cross_node, 0u);
}

// All fibers are started into group 0 of a node with two groups: group 1's workers run
// some of them too. Over the real machine (not NUMA-aware: one pool) and a fake node.
class ImbalanceTest : public ::testing::TestWithParam<const char*> {};

INSTANTIATE_TEST_SUITE_P(Topologies, ImbalanceTest, ::testing::Values("", "0:0-1"),
                         [](const auto& info) {
                           return std::string(info.param).empty() ? "RealMachine"
                                                                  : "FakeOneNode";
                         });

TEST_P(ImbalanceTest, GroupOneRunsFibersStartedIntoGroupZero) {
  FlagRuntime runtime(GetParam(), 4, 2);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  const int n = static_cast<int>(Scaled(2000));
  std::atomic<int> done{0};
  std::atomic<int> ran_on[2] = {0, 0};
  // Fibers running in group 0 keep their worker busy until group 1 has stolen one (or
  // a deadline passes): the test is about stealing, not about a race that group 0 can
  // win by running every fiber before a thief is scheduled (which a loaded CI machine
  // under a sanitizer and chaos did once).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto group_one_stole = [] { return GetSchedulingGroupStats()[1].steals_in_same_node > 0; };
  for (int i = 0; i < n; ++i) {
    StartFiberDetached(OnGroup(0), [&] {
      do {
        BusyFor(std::chrono::microseconds(20));
      } while (CurrentGroup() == 0 && !group_one_stole() &&
               std::chrono::steady_clock::now() < deadline);
      ran_on[CurrentGroup()].fetch_add(1);
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() == n; }));
  EXPECT_GT(ran_on[1].load(), 0);
  const auto stats = GetSchedulingGroupStats();
  EXPECT_GT(stats[1].steals_in_same_node, 0u);
  // Chaos mode moves fibers to group 1 too (its D2), and group 0 then steals them back.
  if (testing::UnderChaos()) return;
  // A steal takes a batch (StealBatch) and the thief queues the rest as its own, so
  // group 0, once idle, may steal some of them back: every stolen entry is counted out
  // of one group and into the other, and none crossed a node.
  EXPECT_EQ(stats[1].steals_in_same_node, stats[0].steals_out);
  EXPECT_EQ(stats[0].steals_in_same_node, stats[1].steals_out);
  EXPECT_EQ(stats[1].steals_in_cross_node + stats[0].steals_in_cross_node, 0u);
}

// Holds workers of a runtime's first two groups with group-local fibers (they cannot
// be stolen) until released. Its fibers refer to it: the destructor releases them all
// and waits for them to end.
class GroupHolders {
 public:
  GroupHolders() = default;
  GroupHolders(const GroupHolders&) = delete;
  GroupHolders& operator=(const GroupHolders&) = delete;
  ~GroupHolders() {
    Release(0);
    Release(1);
    EXPECT_TRUE(WaitFor([&] { return ended_.load() == started_; }));
  }

  // Holds `count` workers of `group` (all of them by default); returns once they hold.
  void Hold(std::size_t group, std::size_t count = SIZE_MAX) {
    if (count == SIZE_MAX) count = GetSchedulingGroupStats()[group].workers;
    const std::size_t target = held_[group].load() + count;
    for (std::size_t i = 0; i < count; ++i) {
      ++started_;
      StartFiberDetached(OnGroup(group, /*local=*/true), [this, group] {
        held_[group].fetch_add(1);
        EXPECT_TRUE(WaitFor([&] { return release_[group].load(); }, std::chrono::seconds(60)));
        ended_.fetch_add(1);
      });
    }
    EXPECT_TRUE(WaitFor([&] { return held_[group].load() == target; }));
  }
  void Release(std::size_t group) { release_[group].store(true); }

 private:
  std::atomic<bool> release_[2] = {false, false};
  std::atomic<std::size_t> held_[2] = {0, 0};
  std::atomic<std::size_t> ended_{0};
  std::size_t started_ = 0;  // by the test's thread only
};

// One steal between groups feeds the thief's whole group (StealBatch): group 0's two
// workers are held by group-local fibers, 16 fibers wait in group 0, and each of them,
// once running, holds its worker until the end. Group 1's workers are held too until
// all 16 are queued, so that their first steal sees them all (on a machine with many
// cores a thief woken by the first push stole it alone, and the next one, and was
// held: 2). Stealing one fiber per attempt, group 1's two workers could take two of
// them at most; a batch puts the rest of the first steal into group 1's own queues.
TEST(BatchStealTest, OneStealFeedsTheThiefsGroup) {
  FlagRuntime runtime("0:0-1", 4, 2);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  std::atomic<bool> release{false};
  constexpr int kQueued = 16;
  std::atomic<int> done{0};
  {
    GroupHolders holders;
    holders.Hold(0);
    holders.Hold(1);
    for (int i = 0; i < kQueued; ++i) {
      StartFiberDetached(OnGroup(0), [&] {
        EXPECT_TRUE(WaitFor([&] { return release.load(); }, std::chrono::seconds(60)));
        done.fetch_add(1);
      });
    }
    holders.Release(1);  // all 16 are queued
    // Chaos mode may queue some of them in group 1 directly (its D2): group 1's workers
    // are then held without stealing. v1 steals one fiber at a time (StrategyV1::
    // StealBatch).
    if (!testing::UnderChaos() && spindle::testing::TestStrategy() != "v1") {
      // (Within the holders' 60 s, so that a failure here is the only one.)
      EXPECT_TRUE(
          WaitFor([] { return GetSchedulingGroupStats()[1].steals_in_same_node >= 3; },
                  std::chrono::seconds(30)))
          << "group 1 stole " << GetSchedulingGroupStats()[1].steals_in_same_node;
    }
    release.store(true);
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() == kQueued; }));
}

// A fiber woken by a worker of another group of its node that may steal from it is
// queued in the waker's group and runs there (SchedulingGroup::QueueReady), without a
// steal: a fork-join parent resumed by a child that another group stole must not wait
// in its own group's global queue. Group 0's workers are all held while group 1 wakes
// the fiber, so group 0 cannot run it (or steal it back); without the adoption group 1
// could still run it, but only by stealing it, which the counters would show.
// Waits until the fiber published in `fiber` has parked: its state, read under its
// lock. The fiber must not be able to end meanwhile.
bool WaitUntilParked(const std::atomic<FiberEntity*>& fiber) {
  return WaitFor([&] {
    FiberEntity* entity = fiber.load();
    if (entity == nullptr) return false;
    std::lock_guard<Spinlock> lock(entity->scheduler_lock);
    return entity->state() == FiberState::kWaiting;
  });
}

struct WakeOutcome {
  std::size_t ran_in = 99;       // the group the woken fiber ran in
  std::uint64_t steals_by_1 = 0;  // group 1's steals meanwhile
};

WakeOutcome WakeAFiberOfGroupZeroFromGroupOne(bool local) {
  spindle::Event event;
  std::atomic<FiberEntity*> parked{nullptr};
  std::atomic<std::size_t> parked_in{99};
  std::atomic<std::size_t> ran_in{99};
  std::atomic<bool> woke{false};
  WakeOutcome outcome;
  {
    GroupHolders holders;
    // Group 1 held while the fiber starts and parks: it cannot be stolen before.
    holders.Hold(1);
    StartFiberDetached(OnGroup(0, local), [&] {
      parked_in.store(CurrentGroup());
      parked.store(GetCurrentFiberEntity());
      event.Wait();
      ran_in.store(CurrentGroup());  // the last access to this frame's locals
    });
    // (It cannot end before the event is set.)
    EXPECT_TRUE(WaitUntilParked(parked));
    EXPECT_EQ(parked_in.load(), 0u);
    holders.Hold(0);
    holders.Release(1);
    const std::uint64_t steals_before = GetSchedulingGroupStats()[1].steals_in_same_node +
                                        GetSchedulingGroupStats()[1].steals_in_cross_node;
    StartFiberDetached(OnGroup(1, /*local=*/true), [&] {
      event.Set();
      woke.store(true);  // the last access to this frame's locals
    });
    EXPECT_TRUE(WaitFor([&] { return woke.load(); }));
    // Adopted: it runs in group 1 while group 0 is held. Else it waits for group 0, or
    // for a thief: release group 0 once it has run, or after a while without it.
    WaitFor([&] { return ran_in.load() != 99; }, std::chrono::milliseconds(200));
    holders.Release(0);
    EXPECT_TRUE(WaitFor([&] { return ran_in.load() != 99; }));
    outcome.ran_in = ran_in.load();
    outcome.steals_by_1 = GetSchedulingGroupStats()[1].steals_in_same_node +
                          GetSchedulingGroupStats()[1].steals_in_cross_node - steals_before;
  }
  return outcome;
}

TEST(AdoptOnWakeTest, AFiberWokenByAnotherGroupOfItsNodeRunsThereWithoutASteal) {
  FlagRuntime runtime("0:0-1", 4, 2);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  const WakeOutcome outcome = WakeAFiberOfGroupZeroFromGroupOne(/*local=*/false);
  if (testing::UnderChaos()) return;  // chaos queues wake-ups in any group (its D2)
  EXPECT_EQ(outcome.ran_in, 1u);
  EXPECT_EQ(outcome.steals_by_1, 0u);
}

// The same through join(): the child's exit wakes its joiner directly (no ReadyBatch).
// The child runs in group 1 (group-local, so the joiner cannot claim it) and ends once
// its joiner has parked and group 0's workers are held.
TEST(AdoptOnWakeTest, AJoinerWokenByAChildInAnotherGroupRunsThere) {
  FlagRuntime runtime("0:0-1", 4, 2);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  std::atomic<bool> child_running{false};
  std::atomic<bool> child_may_end{false};
  std::atomic<FiberEntity*> joiner{nullptr};
  std::atomic<std::size_t> joined_in{99};
  std::atomic<std::size_t> ran_in{99};
  GroupHolders holders;
  Fiber child(OnGroup(1, /*local=*/true), [&] {
    child_running.store(true);
    EXPECT_TRUE(WaitFor([&] { return child_may_end.load(); }, std::chrono::seconds(60)));
  });
  ASSERT_TRUE(WaitFor([&] { return child_running.load(); }));
  holders.Hold(1, GetSchedulingGroupStats()[1].workers - 1);  // group 1 is full: no steal
  StartFiberDetached(OnGroup(0), [&, child = std::move(child)]() mutable {
    joined_in.store(CurrentGroup());
    joiner.store(GetCurrentFiberEntity());
    child.join();
    ran_in.store(CurrentGroup());  // the last access to the test's locals
  });
  EXPECT_TRUE(WaitUntilParked(joiner));  // (it cannot end before the child does)
  EXPECT_EQ(joined_in.load(), 0u);
  holders.Hold(0);
  const std::uint64_t steals_before = GetSchedulingGroupStats()[1].steals_in_same_node;
  holders.Release(1);
  child_may_end.store(true);
  WaitFor([&] { return ran_in.load() != 99; }, std::chrono::milliseconds(200));
  holders.Release(0);
  ASSERT_TRUE(WaitFor([&] { return ran_in.load() != 99; }));
  if (testing::UnderChaos()) return;
  EXPECT_EQ(ran_in.load(), 1u);
  EXPECT_EQ(GetSchedulingGroupStats()[1].steals_in_same_node - steals_before, 0u);
}

TEST(AdoptOnWakeTest, AGroupLocalFiberStaysInItsGroup) {
  FlagRuntime runtime("0:0-1", 4, 2);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  EXPECT_EQ(WakeAFiberOfGroupZeroFromGroupOne(/*local=*/true).ran_in, 0u);
}

// Groups on two nodes, with stealing across nodes off (the default): no adoption
// either, the fiber's memory stays on its node.
TEST(AdoptOnWakeTest, NotAcrossNodesWhereNoStealingIs) {
  FlagRuntime runtime("0:0;1:1", 2, 1);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  EXPECT_EQ(WakeAFiberOfGroupZeroFromGroupOne(/*local=*/false).ran_in, 0u);
}

// Nor with stealing across nodes on: a wake-up does not move a fiber to another node;
// only a thief with nothing else to run does (here group 1's, so it runs there, stolen).
TEST(AdoptOnWakeTest, NotAcrossNodesEvenWhereStealingIs) {
  FlagRuntime runtime("0:0;1:1", 2, 1, /*ratio=*/16, /*cross_ratio=*/1);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  const WakeOutcome outcome = WakeAFiberOfGroupZeroFromGroupOne(/*local=*/false);
  if (testing::UnderChaos()) return;
  if (outcome.ran_in == 1) {
    EXPECT_EQ(outcome.steals_by_1, 1u) << "adopted across nodes";
  }
}

// Two nodes of one group each. With the default cross-node ratio (0) nothing crosses:
// group 0's only worker is held with fibers queued behind it while group 1's worker
// goes through its idle path (runs a fiber of its own, searches, sleeps) 20 times, each
// a chance to steal that a thief would take (HappensWhenEnabled below); no queued fiber
// runs until group 0 is released, and none runs in group 1. (Counted idle passes, not
// a window of time, which a slow machine would pass without one.)
TEST(CrossNodeStealTest, NeverWithTheDefaultRatio) {
  FlagRuntime runtime("0:0;1:1", 2, 0);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  const int n = 50;
  std::atomic<int> done{0};
  std::atomic<int> ran_on_1{0};
  std::atomic<bool> blocker_running{false}, release{false};
  StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
    blocker_running.store(true);
    EXPECT_TRUE(WaitFor([&] { return release.load(); }, std::chrono::seconds(60)));
  });
  ASSERT_TRUE(WaitFor([&] { return blocker_running.load(); }));
  for (int i = 0; i < n; ++i) {
    StartFiberDetached(OnGroup(0), [&] {
      if (CurrentGroup() == 1) ran_on_1.fetch_add(1);
      done.fetch_add(1);
    });
  }
  auto group_1_sleeps = [] { return GetRuntimeMetrics().groups[1].sleeps; };
  for (int pass = 0; pass < 20; ++pass) {
    const std::uint64_t sleeps = group_1_sleeps();
    Fiber own(OnGroup(1, /*local=*/true), [] {});
    own.join();
    ASSERT_TRUE(WaitFor([&] { return group_1_sleeps() > sleeps; }))
        << "group 1's worker did not go back to sleep";
  }
  EXPECT_EQ(done.load(), 0) << "a fiber queued behind group 0's held worker ran";
  release.store(true);
  ASSERT_TRUE(WaitFor([&] { return done.load() == n; }));
  EXPECT_EQ(ran_on_1.load(), 0);
  const auto stats = GetSchedulingGroupStats();
  EXPECT_EQ(stats[0].numa_node, 0);
  EXPECT_EQ(stats[1].numa_node, 1);
  EXPECT_EQ(stats[1].steals_in_cross_node, 0u);
  EXPECT_EQ(stats[1].steals_in_same_node, 0u);
  EXPECT_EQ(stats[0].steals_out, 0u);
}

TEST(CrossNodeStealTest, HappensWhenEnabled) {
  FlagRuntime runtime("0:0;1:1", 2, 0, /*ratio=*/16, /*cross_ratio=*/4);
  std::atomic<bool> blocker_running{false};
  std::atomic<bool> stolen_ran{false};
  std::atomic<std::size_t> stolen_group{99};
  StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
    blocker_running.store(true);
    EXPECT_TRUE(WaitFor([&] { return stolen_ran.load(); }, std::chrono::seconds(20)));
  });
  ASSERT_TRUE(WaitFor([&] { return blocker_running.load(); }));
  StartFiberDetached(OnGroup(0), [&] {
    stolen_group.store(CurrentGroup());
    stolen_ran.store(true);
  });
  ASSERT_TRUE(WaitFor([&] { return stolen_ran.load(); }, std::chrono::seconds(20)));
  EXPECT_EQ(stolen_group.load(), 1u);
  const auto stats = GetSchedulingGroupStats();
  EXPECT_GE(stats[1].steals_in_cross_node, 1u);
  EXPECT_EQ(stats[1].steals_in_same_node, 0u);
}

// scheduling_group_local fibers are queued among stealable ones into a busy group
// while three other groups on the node steal at every idle round; each local fiber
// checks its group at start, after yields and after a timed sleep. (The first run of
// stealable fibers is queued behind a fiber that holds the group's only worker until
// one of them has been stolen.)
TEST(GroupLocalTest, LocalFibersNeverRunOutsideTheirGroup) {
  FlagRuntime runtime("0:0-1", 4, 1, /*ratio=*/1);
  ASSERT_EQ(GetSchedulingGroupCount(), 4u);
  const int n = static_cast<int>(Scaled(1000));
  std::atomic<int> done{0};
  std::atomic<int> escaped{0};
  std::atomic<int> stolen{0};
  // Holds group 0's only worker until a thief has taken one of the first stealable
  // fibers: from then on the test runs under proven stealing pressure.
  StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
    EXPECT_TRUE(WaitFor([&] { return stolen.load() > 0; }, std::chrono::seconds(20)));
    done.fetch_add(1);
  });
  for (int i = 0; i < n; ++i) {
    if (i % 50 == 0) {
      for (int j = 0; j < 50; ++j) {
        StartFiberDetached(OnGroup(0), [&] {
          BusyFor(std::chrono::microseconds(10));
          if (CurrentGroup() != 0) stolen.fetch_add(1);
          done.fetch_add(1);
        });
      }
    }
    StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
      for (int round = 0; round < 4; ++round) {
        if (CurrentGroup() != 0) escaped.fetch_add(1);
        BusyFor(std::chrono::microseconds(10));
        if (round == 2) {
          this_fiber::SleepFor(std::chrono::microseconds(100));
        } else {
          this_fiber::Yield();
        }
      }
      if (CurrentGroup() != 0) escaped.fetch_add(1);
      done.fetch_add(1);
    });
  }
  const int stealable = 50 * ((n + 49) / 50);
  ASSERT_TRUE(WaitFor([&] { return done.load() == 1 + n + stealable; }));
  EXPECT_EQ(escaped.load(), 0);
  EXPECT_GT(stolen.load(), 0);
}

// A scheduling_group_local fiber at the head of a busy group's queue must not hide the
// stealable fibers behind it from thieves (a thief used to look at the oldest entry
// only, and gave up there). Group 0's only worker is held until every stealable fiber
// has run, so only group 1's worker can run them; the local fibers run afterwards, in
// group 0.
TEST(GroupLocalTest, ALocalFiberAtTheHeadDoesNotHideStealableOnes) {
  FlagRuntime runtime("0:0-1", 2, 1, /*ratio=*/1);
  ASSERT_EQ(GetSchedulingGroupCount(), 2u);
  constexpr int kStealable = 20;
  std::atomic<bool> holding{false};
  std::atomic<int> stolen{0};
  std::atomic<int> local_ran{0};
  std::atomic<int> escaped{0};
  StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
    holding.store(true);
    EXPECT_TRUE(WaitFor([&] { return stolen.load() == kStealable; }, std::chrono::seconds(20)))
        << "stealable fibers stayed hidden behind local ones: " << stolen.load() << " of "
        << kStealable << " stolen";
  });
  ASSERT_TRUE(WaitFor([&] { return holding.load(); }));
  for (int i = 0; i < kStealable; ++i) {
    // Each stealable fiber behind two local ones.
    for (int j = 0; j < 2; ++j) {
      StartFiberDetached(OnGroup(0, /*local=*/true), [&] {
        if (CurrentGroup() != 0) escaped.fetch_add(1);
        local_ran.fetch_add(1);
      });
    }
    StartFiberDetached(OnGroup(0), [&] {
      if (CurrentGroup() == 1) stolen.fetch_add(1);
    });
  }
  ASSERT_TRUE(WaitFor([&] { return stolen.load() == kStealable; }, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return local_ran.load() == 2 * kStealable; }));
  EXPECT_EQ(escaped.load(), 0);
}

// Torture: fibers started from fibers of every group, yielding and sleeping, over one
// and two fake nodes with every kind of stealing at every idle round: each runs
// exactly once, and its steps never overlap (no fiber runs on two workers at once).
class StealingStressTest : public ::testing::TestWithParam<const char*> {};

INSTANTIATE_TEST_SUITE_P(Topologies, StealingStressTest,
                         ::testing::Values("0:0-1", "0:0;1:1"), [](const auto& info) {
                           return std::string(info.param) == "0:0-1" ? "OneNode"
                                                                     : "TwoNodes";
                         });

TEST_P(StealingStressTest, EachFiberRunsExactlyOnce) {
  FlagRuntime runtime(GetParam(), 4, 1, /*ratio=*/1, /*cross_ratio=*/1);
  const std::size_t groups = GetSchedulingGroupCount();
  ASSERT_EQ(groups, 4u);
  const std::size_t per_parent = Scaled(5000);
  const std::size_t n = groups * per_parent;
  std::vector<std::atomic<int>> runs(n);
  std::vector<std::atomic<int>> inside(n);
  std::atomic<std::size_t> done{0};
  std::atomic<int> overlaps{0};
  for (std::size_t g = 0; g < groups; ++g) {
    StartFiberDetached(OnGroup(g), [&, g] {
      for (std::size_t i = g * per_parent; i < (g + 1) * per_parent; ++i) {
        StartFiberDetached([&, i] {
          runs[i].fetch_add(1);
          for (int step = 0; step < 3; ++step) {
            if (inside[i].fetch_add(1) != 0) overlaps.fetch_add(1);
            inside[i].fetch_sub(1);
            if (i % 64 == 0 && step == 1) {
              this_fiber::SleepFor(std::chrono::microseconds(50));
            } else {
              this_fiber::Yield();
            }
          }
          done.fetch_add(1);
        });
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() == n; }, std::chrono::seconds(60)));
  std::size_t wrong = 0;
  for (const auto& r : runs) wrong += r.load() != 1;
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(overlaps.load(), 0);
  std::uint64_t steals = 0;
  std::uint64_t steals_out = 0;
  for (const auto& stats : GetSchedulingGroupStats()) {
    steals += stats.steals_in_same_node + stats.steals_in_cross_node;
    steals_out += stats.steals_out;
  }
  EXPECT_EQ(steals, steals_out);
}

// v1's no-lost-wake-up hammer with four groups of one worker stealing from each other
// at every idle round: stealing must not open a window for a lost wake-up.
TEST(StealingStressTest, NoLostWakeUpWhileGroupsSteal) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("fiber_work_stealing_ratio", "1");
  LostWakeUpHammer(4, /*spin_us=*/0, static_cast<int>(Scaled(5000)), /*group_size=*/1);
  LostWakeUpHammer(4, /*spin_us=*/20, static_cast<int>(Scaled(2000)), /*group_size=*/1);
}

// A fiber started from a plain thread goes to a group of the calling CPU's node.
TEST(NearestGroupTest, StartsFromAPlainThreadStayOnTheCallersNode) {
  const std::vector<int> mask = CurrentAffinityCpus();
  const int cpu = mask.front();
  ASSERT_TRUE(SetCurrentThreadAffinity({cpu}, mask));
  {
    // Node 1 holds a CPU this machine lacks (its workers then run unrestricted). Two
    // groups of one worker per node.
    FlagRuntime runtime("0:" + std::to_string(cpu) + ";1:1023", 4, 1);
    ASSERT_EQ(GetSchedulingGroupCount(), 4u);
    const int n = 40;
    std::atomic<int> done{0};
    std::atomic<int> on_node_0{0};
    for (int i = 0; i < n; ++i) {
      StartFiberDetached([&] {
        if (CurrentFiberWorker()->group()->numa_node() == 0) on_node_0.fetch_add(1);
        done.fetch_add(1);
      });
    }
    ASSERT_TRUE(WaitFor([&] { return done.load() == n; }));
    EXPECT_EQ(on_node_0.load(), n);
    const auto stats = GetSchedulingGroupStats();
    EXPECT_EQ(stats[0].numa_node, 0);
    EXPECT_EQ(stats[1].numa_node, 0);
    EXPECT_EQ(stats[2].numa_node, 1);
    // Where each fiber was started (it ran once; stolen ones ran elsewhere): round-robin
    // over the two groups of node 0, none on node 1.
    std::int64_t started[4];
    for (std::size_t g = 0; g < 4; ++g) {
      started[g] = static_cast<std::int64_t>(stats[g].fibers_run + stats[g].steals_out) -
                   static_cast<std::int64_t>(stats[g].steals_in_same_node +
                                             stats[g].steals_in_cross_node);
    }
    if (!testing::UnderChaos()) {  // chaos moves fibers between the node's groups
      EXPECT_EQ(started[0], n / 2);
      EXPECT_EQ(started[1], n / 2);
    }
    EXPECT_EQ(started[2] + started[3], 0);
  }
  ASSERT_TRUE(SetCurrentThreadAffinity(mask, mask));
}

// --fiber_worker_disallow_cpu_migration: every worker thread is allowed one CPU, each
// a different one (one worker per CPU of the mask).
TEST(AffinityTest, PinnedWorkersHaveOneCpu) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("fiber_worker_disallow_cpu_migration", "true");
  const std::vector<int> mask = CurrentAffinityCpus();
  FlagRuntime runtime("", mask.size(), 1);
  std::set<int> pinned;
  for (std::size_t g = 0; g < GetSchedulingGroupCount(); ++g) {
    std::atomic<bool> done{false};
    std::vector<int> cpus;
    StartFiberDetached(OnGroup(g, /*local=*/true), [&] {
      cpus = CurrentAffinityCpus();
      done.store(true);
    });
    ASSERT_TRUE(WaitFor([&] { return done.load(); }));
    ASSERT_EQ(cpus.size(), 1u) << "group " << g;
    pinned.insert(cpus.front());
  }
  EXPECT_EQ(std::vector<int>(pinned.begin(), pinned.end()), mask);
}

}  // namespace
}  // namespace spindle::internal
