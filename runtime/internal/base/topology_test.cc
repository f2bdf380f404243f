// Copyright 2026 The Spindle Authors.

#include "runtime/internal/base/topology.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

using V = std::vector<int>;

TEST(ParseCpuListTest, RangesAndSingles) {
  V cpus;
  EXPECT_EQ(ParseCpuList("0-4,6", &cpus), "");
  EXPECT_EQ(cpus, V({0, 1, 2, 3, 4, 6}));
  EXPECT_EQ(ParseCpuList("7,3,5-5", &cpus), "");
  EXPECT_EQ(cpus, V({3, 5, 7}));
}

TEST(ParseCpuListTest, Malformed) {
  V cpus;
  EXPECT_NE(ParseCpuList("", &cpus), "");
  EXPECT_NE(ParseCpuList("a", &cpus), "");
  EXPECT_NE(ParseCpuList("1,,2", &cpus), "");
  EXPECT_NE(ParseCpuList("4-2", &cpus), "");
  EXPECT_NE(ParseCpuList("-1", &cpus), "");
  EXPECT_NE(ParseCpuList("1-", &cpus), "");
  EXPECT_NE(ParseCpuList("0-3,2", &cpus).find("listed twice"), std::string::npos);
  EXPECT_NE(ParseCpuList("99999", &cpus).find("highest CPU"), std::string::npos);
}

TEST(ParseTopologyTest, TwoNodes) {
  Topology topology;
  ASSERT_EQ(ParseTopology("1:4-7;0:0-3", &topology), "");
  ASSERT_EQ(topology.nodes.size(), 2u);
  EXPECT_EQ(topology.nodes[0].id, 0);
  EXPECT_EQ(topology.nodes[0].cpus, V({0, 1, 2, 3}));
  EXPECT_EQ(topology.nodes[1].id, 1);
  EXPECT_EQ(topology.nodes[1].cpus, V({4, 5, 6, 7}));
  EXPECT_FALSE(topology.numa_available);
  EXPECT_EQ(topology.cpu_count(), 8u);
  EXPECT_EQ(topology.NodeOfCpu(5), 1);
  EXPECT_EQ(topology.NodeOfCpu(8), kNoNumaNode);
}

TEST(ParseTopologyTest, Malformed) {
  Topology topology;
  EXPECT_NE(ParseTopology("", &topology), "");
  EXPECT_NE(ParseTopology("0-3", &topology), "");
  EXPECT_NE(ParseTopology("x:0-3", &topology), "");
  EXPECT_NE(ParseTopology("0:", &topology), "");
  EXPECT_NE(ParseTopology("0:0-3;", &topology), "");
  EXPECT_NE(ParseTopology("0:0-3;0:4", &topology).find("listed twice"), std::string::npos);
  EXPECT_NE(ParseTopology("0:0-3;1:3-4", &topology).find("in two nodes"), std::string::npos);
}

TEST(RestrictTopologyTest, DropsEmptyNodes) {
  Topology topology;
  ASSERT_EQ(ParseTopology("0:0-3;1:4-7;2:8", &topology), "");
  const Topology restricted = RestrictTopology(topology, {1, 2, 8});
  ASSERT_EQ(restricted.nodes.size(), 2u);
  EXPECT_EQ(restricted.nodes[0].cpus, V({1, 2}));
  EXPECT_EQ(restricted.nodes[1].id, 2);
}

// The real machine: whatever libnuma says, every CPU of the mask lands on one node.
TEST(DiscoverTopologyTest, CoversTheAffinityMask) {
  const V cpus = CurrentAffinityCpus();
  ASSERT_FALSE(cpus.empty());
  const Topology topology = DiscoverTopology(cpus);
  ASSERT_FALSE(topology.nodes.empty());
  EXPECT_EQ(topology.cpu_count(), cpus.size());
  for (int cpu : cpus) EXPECT_NE(topology.NodeOfCpu(cpu), kNoNumaNode) << cpu;
}

TEST(AllocateOnNodeTest, ZeroedAndWritable) {
  for (int node : {kNoNumaNode, 0, 7}) {
    auto* bytes = static_cast<unsigned char*>(AllocateOnNode(10000, node));
    for (int i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0);
    bytes[9999] = 1;
    FreeOnNode(bytes, 10000);
  }
  EXPECT_FALSE(CanBindMemoryToNode(kNoNumaNode));
}

TEST(AffinityTest, CpusOutsideTheMaskAreIgnored) {
  const V allowed = CurrentAffinityCpus();
  EXPECT_FALSE(SetCurrentThreadAffinity({4000}, allowed));  // no such CPU: unchanged
  EXPECT_TRUE(SetCurrentThreadAffinity(allowed, allowed));
  EXPECT_EQ(CurrentAffinityCpus(), allowed);
}

}  // namespace
}  // namespace spindle::internal
