// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group_layout.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

using V = std::vector<int>;
using Sizes = std::vector<std::size_t>;

Topology Fake(const std::string& text) {
  Topology topology;
  EXPECT_EQ(ParseTopology(text, &topology), "") << text;
  return topology;
}

LayoutOptions Options(std::size_t concurrency, std::size_t group_size, bool numa_aware,
                      bool pinned = false) {
  LayoutOptions options;
  options.concurrency = concurrency;
  options.group_size = group_size;
  options.numa_aware = numa_aware;
  options.disallow_cpu_migration = pinned;
  return options;
}

Sizes WorkersOf(const std::vector<GroupPlan>& plans) {
  Sizes sizes;
  for (const GroupPlan& plan : plans) sizes.push_back(plan.workers);
  return sizes;
}

std::vector<int> NodesOf(const std::vector<GroupPlan>& plans) {
  std::vector<int> nodes;
  for (const GroupPlan& plan : plans) nodes.push_back(plan.node);
  return nodes;
}

TEST(ComputeGroupSizesTest, AutomaticAndExplicit) {
  EXPECT_EQ(ComputeGroupSizes(1, 0), Sizes({1}));
  EXPECT_EQ(ComputeGroupSizes(7, 0), Sizes({7}));
  EXPECT_EQ(ComputeGroupSizes(16, 0), Sizes({8, 8}));
  EXPECT_EQ(ComputeGroupSizes(31, 0), Sizes({11, 10, 10}));
  EXPECT_EQ(ComputeGroupSizes(5, 2), Sizes({2, 2, 1}));
  for (std::size_t n = 8; n <= 300; ++n) {
    for (std::size_t size : ComputeGroupSizes(n, 0)) {
      EXPECT_GE(size, 8u) << n;
      EXPECT_LE(size, 15u) << n;
    }
  }
}

TEST(GroupLayoutTest, OneNodeTwoCpus) {
  const Topology topology = Fake("0:0-1");
  auto plans = ComputeGroupLayout(topology, Options(2, 0, true));
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].node, 0);
  EXPECT_EQ(plans[0].workers, 2u);
  EXPECT_EQ(plans[0].cpus, V({0, 1}));
  EXPECT_TRUE(plans[0].worker_cpus.empty());
  plans = ComputeGroupLayout(topology, Options(2, 1, true, /*pinned=*/true));
  EXPECT_EQ(WorkersOf(plans), Sizes({1, 1}));
  EXPECT_EQ(plans[0].worker_cpus, V({0}));
  EXPECT_EQ(plans[1].worker_cpus, V({1}));
}

TEST(GroupLayoutTest, TwoNodesOfFour) {
  const Topology topology = Fake("0:0-3;1:4-7");
  auto plans = ComputeGroupLayout(topology, Options(8, 0, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({4, 4}));
  EXPECT_EQ(NodesOf(plans), V({0, 1}));
  EXPECT_EQ(plans[0].cpus, V({0, 1, 2, 3}));
  EXPECT_EQ(plans[1].cpus, V({4, 5, 6, 7}));

  plans = ComputeGroupLayout(topology, Options(8, 2, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({2, 2, 2, 2}));
  EXPECT_EQ(NodesOf(plans), V({0, 0, 1, 1}));
  EXPECT_EQ(plans[1].cpus, V({0, 1, 2, 3}));
  EXPECT_EQ(plans[2].cpus, V({4, 5, 6, 7}));

  // Group size 3: ceil(4 / 3) = 2 groups per node.
  plans = ComputeGroupLayout(topology, Options(8, 3, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({3, 1, 3, 1}));
  EXPECT_EQ(NodesOf(plans), V({0, 0, 1, 1}));

  // Not NUMA-aware: the same CPUs, one pool, no node.
  plans = ComputeGroupLayout(topology, Options(8, 2, false));
  EXPECT_EQ(WorkersOf(plans), Sizes({2, 2, 2, 2}));
  EXPECT_EQ(NodesOf(plans), V({kNoNumaNode, kNoNumaNode, kNoNumaNode, kNoNumaNode}));
  EXPECT_EQ(plans[3].cpus, V({0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(GroupLayoutTest, FourNodesOfSixteen) {
  const Topology topology = Fake("0:0-15;1:16-31;2:32-47;3:48-63");
  auto plans = ComputeGroupLayout(topology, Options(64, 0, true));
  // 16 workers per node: two automatic groups of 8 each.
  EXPECT_EQ(WorkersOf(plans), Sizes(8, 8));
  EXPECT_EQ(NodesOf(plans), V({0, 0, 1, 1, 2, 2, 3, 3}));
  for (const GroupPlan& plan : plans) {
    ASSERT_EQ(plan.cpus.size(), 16u);
    EXPECT_EQ(plan.cpus.front(), plan.node * 16);
  }
  plans = ComputeGroupLayout(topology, Options(64, 15, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({15, 1, 15, 1, 15, 1, 15, 1}));
  plans = ComputeGroupLayout(topology, Options(64, 16, true, /*pinned=*/true));
  ASSERT_EQ(plans.size(), 4u);
  for (const GroupPlan& plan : plans) {
    ASSERT_EQ(plan.worker_cpus.size(), 16u);
    EXPECT_EQ(plan.worker_cpus, plan.cpus);  // one CPU each, all different
  }
  // Fewer workers than nodes: some nodes get none.
  plans = ComputeGroupLayout(topology, Options(2, 0, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({1, 1}));
  EXPECT_EQ(NodesOf(plans), V({0, 1}));
}

TEST(GroupLayoutTest, UnevenNodes) {
  const Topology topology = Fake("0:0-5;1:6-7");
  // 8 workers in proportion 6:2.
  auto plans = ComputeGroupLayout(topology, Options(8, 0, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({6, 2}));
  EXPECT_EQ(NodesOf(plans), V({0, 1}));
  // 5 workers: 3.75 and 1.25 -> 4 and 1.
  plans = ComputeGroupLayout(topology, Options(5, 0, true));
  EXPECT_EQ(WorkersOf(plans), Sizes({4, 1}));
  // More workers than CPUs, pinned: the turn wraps within the node.
  plans = ComputeGroupLayout(topology, Options(16, 4, true, /*pinned=*/true));
  EXPECT_EQ(WorkersOf(plans), Sizes({4, 4, 4, 4}));
  EXPECT_EQ(NodesOf(plans), V({0, 0, 0, 1}));
  EXPECT_EQ(plans[0].worker_cpus, V({0, 1, 2, 3}));
  EXPECT_EQ(plans[1].worker_cpus, V({4, 5, 0, 1}));
  EXPECT_EQ(plans[3].worker_cpus, V({6, 7, 6, 7}));
  // Non-contiguous node ids survive.
  plans = ComputeGroupLayout(Fake("3:0;5:1"), Options(2, 0, true));
  EXPECT_EQ(NodesOf(plans), V({3, 5}));
}

TEST(GroupLayoutTest, EveryWorkerPlacedAndGroupsWithinTheirNode) {
  const Topology topology = Fake("0:0-9;1:10-12;2:13-30");
  for (std::size_t concurrency = 1; concurrency <= 80; ++concurrency) {
    for (std::size_t size : {0, 1, 3, 8, 64}) {
      const auto plans = ComputeGroupLayout(topology, Options(concurrency, size, true));
      std::size_t workers = 0;
      for (const GroupPlan& plan : plans) {
        ASSERT_GE(plan.workers, 1u);
        if (size != 0) {
          EXPECT_LE(plan.workers, size);
        }
        for (int cpu : plan.cpus) EXPECT_EQ(topology.NodeOfCpu(cpu), plan.node);
        workers += plan.workers;
      }
      EXPECT_EQ(workers, concurrency) << concurrency << " / " << size;
    }
  }
}

TEST(GroupLayoutTest, Description) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  const auto plans = ComputeGroupLayout(Fake("0:0-3;1:4-7"), Options(8, 2, true));
  EXPECT_EQ(DescribeLayout(plans),
            "4 groups, 8 workers, 2 nodes, 8 CPUs: g0=node0:2w@0-3 g1=node0:2w@0-3 "
            "g2=node1:2w@4-7 g3=node1:2w@4-7");
}

}  // namespace
}  // namespace spindle::internal
