// Copyright 2026 The Spindle Authors.

#include "runtime/internal/strategies/strategy_registry.h"

#include <set>
#include <string>

#include "gflags/gflags.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

TEST(StrategyRegistryTest, EveryStrategyIsFoundByItsNameAndBuildsAGroupsStrategy) {
  std::set<std::string> names;
  ASSERT_FALSE(Strategies().empty());
  for (const StrategyEntry* entry : Strategies()) {
    EXPECT_TRUE(names.insert(entry->name).second) << entry->name << " registered twice";
    EXPECT_EQ(FindStrategy(entry->name), entry);
    EXPECT_EQ(ValidateSchedulingStrategy(entry->name), "");
    EXPECT_EQ(entry->validate_flags(), "") << entry->name << ": its flags' defaults";
    SchedulingGroupOptions options;
    options.workers = 2;
    options.run_queue_capacity = 64;
    options.strategy = entry->name;
    std::unique_ptr<SchedulingStrategy> strategy = entry->create(options);
    ASSERT_NE(strategy, nullptr) << entry->name;
    EXPECT_TRUE(strategy->UnsafeEmpty()) << entry->name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"v1", "v2", "relaxed", "globalfifo"}));
  EXPECT_EQ(StrategyNames(), "v1, v2, relaxed, globalfifo");
}

TEST(StrategyRegistryTest, AnUnknownNameIsRefusedWithTheAcceptedOnes) {
  EXPECT_EQ(FindStrategy("v3"), nullptr);
  EXPECT_EQ(ValidateSchedulingStrategy("v3"),
            "--fiber_scheduling_strategy=v3 is invalid: expected one of: v1, v2, relaxed, "
            "globalfifo");
}

// A bad value of any strategy's own flag is refused by name, whichever strategy is
// chosen (ValidateStrategyFlags runs every entry's check).
TEST(StrategyRegistryTest, EachStrategysFlagsAreCheckedByItsEntry) {
  gflags::FlagSaver saver;
  EXPECT_EQ(ValidateStrategyFlags(), "");
  gflags::SetCommandLineOption("fiber_v2_steal", "all");
  EXPECT_EQ(ValidateStrategyFlags(),
            "--fiber_v2_steal=all is invalid: expected one of: half, one");
  EXPECT_EQ(FindStrategy("v1")->validate_flags(), "");
  gflags::SetCommandLineOption("fiber_v2_steal", "half");
  gflags::SetCommandLineOption("fiber_relaxed_lists_per_worker", "0");
  EXPECT_NE(FindStrategy("relaxed")->validate_flags().find(
                "--fiber_relaxed_lists_per_worker=0 is invalid"),
            std::string::npos);
  EXPECT_EQ(FindStrategy("v2")->validate_flags(), "");
  gflags::SetCommandLineOption("fiber_relaxed_lists_per_worker", "2");
  gflags::SetCommandLineOption("fiber_v2_global_take", "some");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(),
            "--fiber_v2_global_take=some is invalid: expected one of: share, one, all");
  gflags::SetCommandLineOption("fiber_v2_global_take", "all");
  gflags::SetCommandLineOption("fiber_v2_overflow", "all");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(),
            "--fiber_v2_overflow=all is invalid: expected one of: half, one");
  gflags::SetCommandLineOption("fiber_v2_overflow", "one");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(), "");
  gflags::SetCommandLineOption("fiber_v2_stage_size", "1000");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(),
            "--fiber_v2_stage_size=1000 is out of range: accepted [0, 256]");
  gflags::SetCommandLineOption("fiber_v2_stage_size", "0");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(), "");
  gflags::SetCommandLineOption("fiber_v2_runnext_grace_ns", "1000001");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(),
            "--fiber_v2_runnext_grace_ns=1000001 is out of range: accepted [0, 1000000]");
  gflags::SetCommandLineOption("fiber_v2_runnext_grace_ns", "0");
  EXPECT_EQ(FindStrategy("v2")->validate_flags(), "");
  gflags::SetCommandLineOption("fiber_v1_stage_size", "257");
  EXPECT_EQ(FindStrategy("v1")->validate_flags(),
            "--fiber_v1_stage_size=257 is out of range: accepted [0, 256]");
}

}  // namespace
}  // namespace spindle::internal
