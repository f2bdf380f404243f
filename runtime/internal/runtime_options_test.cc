// Copyright 2026 The Spindle Authors.

#include "runtime/internal/runtime_options.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

// A fake /sys/fs/cgroup under the test's temporary directory.
class CgroupQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/cgroup_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    MakeDirs("");
  }

  void MakeDirs(const std::string& relative) {
    std::string path = root_;
    mkdir(path.c_str(), 0755);
    std::size_t start = 0;
    while (start < relative.size()) {
      const std::size_t slash = relative.find('/', start + 1);
      path = root_ + relative.substr(0, slash);
      mkdir(path.c_str(), 0755);
      if (slash == std::string::npos) break;
      start = slash;
    }
  }
  void Write(const std::string& dir, const std::string& file, const std::string& text) {
    MakeDirs(dir);
    std::ofstream(root_ + dir + "/" + file) << text << "\n";
  }
  std::size_t Quota(const std::string& proc_self_cgroup) {
    return CgroupCpuQuota(root_, proc_self_cgroup);
  }

  std::string root_;
};

TEST_F(CgroupQuotaTest, V2InsideACgroupNamespaceRoundsUp) {
  Write("", "cpu.max", "150000 100000");
  EXPECT_EQ(Quota("0::/\n"), 2u);
}

TEST_F(CgroupQuotaTest, V2TheSmallestLimitUpTheTreeBinds) {
  Write("/a/b", "cpu.max", "max 100000");
  Write("/a", "cpu.max", "300000 100000");
  EXPECT_EQ(Quota("0::/a/b\n"), 3u);
  Write("/a/b", "cpu.max", "100000 100000");
  EXPECT_EQ(Quota("0::/a/b\n"), 1u);
}

TEST_F(CgroupQuotaTest, V2WithoutALimitIsZero) {
  Write("", "cpu.max", "max 100000");
  EXPECT_EQ(Quota("0::/\n"), 0u);
  EXPECT_EQ(Quota(""), 0u);
  EXPECT_EQ(Quota("garbage"), 0u);
}

TEST_F(CgroupQuotaTest, V1ReadsTheCfsQuotaOfTheCpuHierarchy) {
  Write("/cpu,cpuacct/docker/x", "cpu.cfs_quota_us", "250000");
  Write("/cpu,cpuacct/docker/x", "cpu.cfs_period_us", "100000");
  EXPECT_EQ(Quota("5:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n"), 3u);
}

TEST_F(CgroupQuotaTest, V1WithoutANamespaceFallsBackToTheMountRoot) {
  // The container sees the host's path, but its own cgroup is mounted at the root.
  Write("/cpu,cpuacct", "cpu.cfs_quota_us", "50000");
  Write("/cpu,cpuacct", "cpu.cfs_period_us", "100000");
  EXPECT_EQ(Quota("4:cpu,cpuacct:/kubepods/pod1/c1\n"), 1u);
}

TEST_F(CgroupQuotaTest, V1QuotaOfMinusOneIsNoLimit) {
  Write("/cpu", "cpu.cfs_quota_us", "-1");
  Write("/cpu", "cpu.cfs_period_us", "100000");
  EXPECT_EQ(Quota("3:cpu:/\n"), 0u);
}

TEST_F(CgroupQuotaTest, HybridTakesTheSmallerOfV1AndV2) {
  Write("/cpu,cpuacct", "cpu.cfs_quota_us", "400000");
  Write("/cpu,cpuacct", "cpu.cfs_period_us", "100000");
  Write("", "cpu.max", "200000 100000");
  EXPECT_EQ(Quota("4:cpu,cpuacct:/\n0::/\n"), 2u);
}

// ---- --fiber_pools

TEST(FiberPoolsFlagTest, EmptyMeansTheDefaultPoolAlone) {
  std::vector<PoolOptions> pools;
  ASSERT_EQ(ParseFiberPools("", 0, &pools), "");
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].name, "default");
  EXPECT_EQ(pools[0].workers, 0u);  // auto
  EXPECT_EQ(pools[0].max_fibers, 0u);
  // --fiber_max_fibers caps the default pool.
  ASSERT_EQ(ParseFiberPools("", 500, &pools), "");
  EXPECT_EQ(pools[0].max_fibers, 500u);
}

TEST(FiberPoolsFlagTest, ParsesPoolsWithTheirOptionsDefaultFirst) {
  std::vector<PoolOptions> pools;
  ASSERT_EQ(ParseFiberPools("admin:1:cpus=3,batch:2:cpus=0-1,5:max_fibers=100:strategy=v1,"
                            "default:4:max_fibers=7",
                            9, &pools),
            "");
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[0].name, "default");
  EXPECT_EQ(pools[0].workers, 4u);
  EXPECT_EQ(pools[0].max_fibers, 7u);  // its own option beats --fiber_max_fibers
  EXPECT_EQ(pools[1].name, "admin");
  EXPECT_EQ(pools[1].workers, 1u);
  EXPECT_EQ(pools[1].cpus, "3");
  EXPECT_EQ(pools[1].max_fibers, 0u);  // --fiber_max_fibers is the default pool's only
  EXPECT_EQ(pools[2].name, "batch");
  EXPECT_EQ(pools[2].cpus, "0-1,5");  // the list's own comma
  EXPECT_EQ(pools[2].max_fibers, 100u);
  EXPECT_EQ(pools[2].strategy, "v1");
}

// Every bad value is refused with a message naming the flag, the pool and what is
// accepted.
TEST(FiberPoolsFlagTest, BadValuesAreRefusedByName) {
  const struct {
    const char* value;
    const char* expected;
  } cases[] = {
      {"admin", "pool \"admin\" has no worker count"},
      {"Admin:1", "pool name \"Admin\" is not [a-z][a-z0-9_]*"},
      {"a-b:1", "pool name \"a-b\""},
      {"admin:0", "pool admin has workers \"0\"; expected a worker count in [1, 1024]"},
      {"admin:2000", "expected a worker count in [1, 1024]"},
      {"admin:auto", "which only the default pool may have"},
      {"default:x", "or auto"},
      {"admin:1,admin:2", "pool admin is declared twice"},
      {"admin:1:cpus=", "without a value"},
      {"admin:1:cpus=x", "pool admin has cpus=x"},
      {"admin:1:max_fibers=-1", "expected live fibers in [0, 4294967296]"},
      {"admin:1:max_fibers=4294967297", "expected live fibers in [0, 4294967296]"},
      {"admin:1:strategy=v9", "pool admin: "},
      {"admin:1:color=red", "unknown option \"color\"; expected cpus, max_fibers or strategy"},
      {"a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,o:1,p:1",
       "expected at most 16"},
  };
  for (const auto& c : cases) {
    std::vector<PoolOptions> pools;
    const std::string error = ParseFiberPools(c.value, 0, &pools);
    EXPECT_NE(error.find(std::string("--fiber_pools=") + c.value + " is invalid"),
              std::string::npos)
        << c.value << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.value << ": " << error;
  }
}

TEST(FiberPoolsFlagTest, LayoutGivesEachPoolItsGroupsAndTheDefaultTheRest) {
  RuntimeOptions options;
  options.numa_topology_override = "0:0-7";
  options.numa_aware = "false";
  options.concurrency = 8;
  options.scheduling_strategy = "v2";
  options.pools = "admin:1:cpus=7,batch:2:strategy=v1:max_fibers=50";
  RuntimeLayout layout;
  ASSERT_EQ(ComputeRuntimeLayout(options, &layout), "");
  ASSERT_EQ(layout.pools.size(), 3u);
  EXPECT_EQ(layout.pools[0].name, "default");
  EXPECT_EQ(layout.pools[0].workers, 5u);  // 8 - 1 - 2
  EXPECT_EQ(layout.pools[1].workers, 1u);
  EXPECT_EQ(layout.pools[2].strategy, "v1");
  EXPECT_EQ(layout.pools[0].strategy, "v2");
  EXPECT_EQ(layout.pools[2].max_fibers, 50u);
  std::size_t workers = 0;
  for (std::size_t p = 0; p < layout.pools.size(); ++p) {
    const PoolPlan& pool = layout.pools[p];
    std::size_t pool_workers = 0;
    for (std::size_t g = pool.first_group; g < pool.first_group + pool.group_count; ++g) {
      EXPECT_EQ(layout.groups[g].pool, p);
      pool_workers += layout.groups[g].workers;
    }
    EXPECT_EQ(pool_workers, pool.workers) << pool.name;
    workers += pool_workers;
  }
  EXPECT_EQ(workers, 8u);
  EXPECT_EQ(layout.groups[layout.pools[1].first_group].cpus, std::vector<int>{7});

  // A pool's CPU the workers may not use is refused by name.
  options.pools = "admin:1:cpus=9";
  const std::string error = ComputeRuntimeLayout(options, &layout);
  EXPECT_NE(error.find("pool admin has CPU 9, which the workers may not use; expected CPUs "
                       "of 0-7"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace spindle::internal
