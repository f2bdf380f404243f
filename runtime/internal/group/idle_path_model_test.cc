// Copyright 2026 The Spindle Authors.
//
// Models of the idle path itself (idle_path.cc and busy_poll.cc, the real source built
// against Relacy) over the real strategies v1 and v2 built the same way: workers run
// IdlePath::FindRunnable() (own queues, I2-I4, W1-W4 and the sleep on their slots, with
// the real search rounds) against plain threads that start fibers, as GroupIdleModel
// (notifier_model.h) drives them: each entry but the last keeps its worker busy until
// all are taken, one may yield, and the worker that takes the last stops the group
// through its strategy (Stop(): the flag IdlePath reads, and WakeAll). A lost wake-up is
// a worker asleep while an entry stays queued: Relacy reports the deadlock.
//
// The group is a SchedulingGroup whose constructor is defined below (the real one,
// scheduling_group.cc, is built with the runtime's atomics and not linked): its options
// and the strategy from the strategy's own create(), as the registry makes it. No other
// groups (so no steals), no poller and no timers: those paths do not touch the
// notifier. MakeRunning() hands the entry back as the "fiber" the model runs; entries
// are even words, which the strategies never read through on these paths.

#include <cstdint>
#include <memory>

#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/group/parking.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/group/idle_path.h"
#include "runtime/internal/idle/notifier_model.h"
#include "runtime/internal/strategies/scheduling_strategy.h"
#include "runtime/internal/strategies/strategy_model_group.h"
#include "runtime/internal/strategies/strategy_v1.h"
#include "runtime/internal/strategies/strategy_v2.h"

namespace spindle::internal {

// ---- What IdlePath needs of its group (scheduling_group.cc's, not linked).

namespace {

// The registry's look-up (strategy_registry.cc), over the strategies built for models.
std::unique_ptr<SchedulingStrategy> MakeModelStrategy(const SchedulingGroupOptions& options) {
  for (const StrategyEntry* entry : {&kStrategyV1Entry, &kStrategyV2Entry}) {
    if (options.strategy == entry->name) return entry->create(options);
  }
  LOG(FATAL) << "no strategy '" << options.strategy << "' in the models (v1, v2)";
  return nullptr;
}

}  // namespace

SchedulingGroup::SchedulingGroup(const SchedulingGroupOptions& options)
    : options_(options),
      strategy_(MakeModelStrategy(options)),
      strategy_v2_(dynamic_cast<StrategyV2*>(strategy_.get())),
      busy_poll_(*strategy_, options.workers),
      stats_(options.workers) {}

SchedulingGroup::~SchedulingGroup() = default;

std::uintptr_t SchedulingGroup::StealEntryFrom(SchedulingGroup*, std::size_t) {
  LOG(FATAL) << "a model's group has no victims";
  return 0;
}

FiberEntity* MakeRunning(SchedulingGroup*, std::uintptr_t entry, std::size_t) {
  return reinterpret_cast<FiberEntity*>(entry);  // never read through: see the top
}

namespace {

using testing::ExpectIdleModelHolds;
using testing::GroupIdleModel;

// A group of kWorkers workers under the strategy `kEntry`, each with its IdlePath.
template <std::size_t kWorkers, const StrategyEntry& kEntry>
class IdlePathGroup : public testing::StrategyModelGroup {
 public:
  IdlePathGroup() : group_(Options()) {
    Drive(group_.strategy());
    for (std::size_t w = 0; w < kWorkers; ++w) {
      paths_[w] = std::make_unique<IdlePath>(&group_, w);
    }
  }

  // The worker's loop: FindRunnable() until it makes an entry Running.
  std::uintptr_t FindRunnable(std::size_t w) {
    return reinterpret_cast<std::uintptr_t>(paths_[w]->FindRunnable());
  }

 private:
  static SchedulingGroupOptions Options() {
    SchedulingGroupOptions options;
    options.workers = kWorkers;
    options.run_queue_capacity = 8;
    options.strategy = kEntry.name;
    options.spin_time = std::chrono::nanoseconds(0);  // a searcher's 16 rounds, no more
    return options;
  }

  SchedulingGroup group_;
  std::unique_ptr<IdlePath> paths_[kWorkers];
};

// A group without FindRunnable would silently run notifier_model.h's copy of the order.
static_assert(testing::RunsIdlePath<IdlePathGroup<2, kStrategyV1Entry>>::value);
static_assert(testing::RunsIdlePath<IdlePathGroup<2, kStrategyV2Entry>>::value);

// Small local queues: a model's atomics are heavy, and a few entries never fill them.
// Set before the run, inherited by the model's child process.
class IdlePathModelTest : public ::testing::Test {
 protected:
  gflags::FlagSaver saver_;
  void SetUp() override { FLAGS_fiber_v2_local_queue_size = 8; }
};

// v1: two workers may both spin; one producer's two starts.
TEST_F(IdlePathModelTest, V1TwoWorkersOneProducerTwoStarts) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<2, kStrategyV1Entry>, 2, 1, 2>>(
      100000);
}

// v1: two producers race each other's claims of a spinner.
TEST_F(IdlePathModelTest, V1TwoWorkersTwoProducers) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<2, kStrategyV1Entry>, 2, 2, 1>>(
      100000);
}

// v1: a fiber yields, switching to the producer's other entry first.
TEST_F(IdlePathModelTest, V1TwoWorkersTwoStartsOneYield) {
  ExpectIdleModelHolds<
      GroupIdleModel<IdlePathGroup<2, kStrategyV1Entry>, 2, 1, 2, /*kYields=*/1>>(100000);
}

// v1: a worker's fiber starts a child while the other worker is busy or going idle:
// the child may wait in the starter's stage ("Staging" in strategy_v1.cc), which the
// other worker's polls and re-check must see (G3), or the producer's wake-up must
// reach it. Without G3, or without the Notify() after staging, the random search
// deadlocks within 40 iterations (both tried, 2026-11-29).
TEST_F(IdlePathModelTest, V1TwoWorkersOneStartOneStagedChild) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<2, kStrategyV1Entry>, 2, 1, 1,
                                      /*kYields=*/0, /*kSpawns=*/1>>(60000);
}

// v1: three workers, two producers' starts, one of which starts a child.
TEST_F(IdlePathModelTest, V1ThreeWorkersTwoProducersOneStagedChild) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<3, kStrategyV1Entry>, 3, 2, 1,
                                      /*kYields=*/0, /*kSpawns=*/1>>(50000);
}

// v2: a worker's fiber starts two children: the first, displaced from runnext by the
// second, may wait in the starter's stage ("Staging" in strategy_v2.cc), which the
// other workers' searches and re-checks must see (G3), or the wake-up must reach them.
// Without G3 the random search deadlocks at its second iteration (tried, 2026-11-29).
TEST_F(IdlePathModelTest, V2ThreeWorkersOneStartTwoChildrenOneStaged) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<3, kStrategyV2Entry>, 3, 1, 1,
                                      /*kYields=*/0, /*kSpawns=*/2>>(50000);
}

// v2: one worker may take both starts in one global batch (TK4) and must wake the
// other for the rest (M1).
TEST_F(IdlePathModelTest, V2TwoWorkersOneProducerTwoStarts) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<2, kStrategyV2Entry>, 2, 1, 2>>(
      100000);
}

TEST_F(IdlePathModelTest, V2TwoWorkersTwoProducers) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<2, kStrategyV2Entry>, 2, 2, 1>>(
      100000);
}

TEST_F(IdlePathModelTest, V2TwoWorkersTwoStartsOneYield) {
  ExpectIdleModelHolds<
      GroupIdleModel<IdlePathGroup<2, kStrategyV2Entry>, 2, 1, 2, /*kYields=*/1>>(100000);
}

// Three workers: two may search at once, and the third must be woken.
TEST_F(IdlePathModelTest, V2ThreeWorkersOneProducerThreeStarts) {
  ExpectIdleModelHolds<GroupIdleModel<IdlePathGroup<3, kStrategyV2Entry>, 3, 1, 3>>(
      50000);
}

}  // namespace
}  // namespace spindle::internal
