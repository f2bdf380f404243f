// Copyright 2026 The Spindle Authors.

#include "runtime/internal/runtime_options.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace spindle::internal
