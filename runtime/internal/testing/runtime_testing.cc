// Copyright 2026 The Spindle Authors.
//
// Chaos mode for a whole test binary: SPINDLE_TEST_CHAOS_SEED in the environment sets
// --fiber_chaos_seed before the first test, so every runtime the tests start (through
// ScopedRuntime or StartRuntime) runs under chaos scheduling with that seed. The
// _chaos twins of each test target (bazel/testing.bzl) set it. Test binaries use
// gtest_main, which does not parse gflags, hence the variable.

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/observability/fiber_dump.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::testing {
namespace {

class ChaosFromEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* env = std::getenv("SPINDLE_TEST_CHAOS_SEED");
    if (env == nullptr || *env == '\0') return;
    char* rest = nullptr;
    const unsigned long long seed = std::strtoull(env, &rest, 10);
    if (*rest != '\0' || env[0] == '-') {
      std::fprintf(stderr,
                   "SPINDLE_TEST_CHAOS_SEED=%s is not a seed; expected an integer in "
                   "[0, 18446744073709551615] (0 = off)\n",
                   env);
      std::exit(2);
    }
    if (!internal::kTestSeams && seed != 0) {
      std::fprintf(stderr,
                   "SPINDLE_TEST_CHAOS_SEED=%s: chaos scheduling is a test seam, and this "
                   "test binary was built without it; build with --config=seams\n",
                   env);
      std::exit(2);
    }
    FLAGS_fiber_chaos_seed = seed;
    std::fprintf(stderr, "chaos scheduling on: --fiber_chaos_seed=%llu\n", seed);
  }
};

// Gives chaos mode a key of each test as it starts (SetChaosTestKeyForTesting): the
// test's full name (with its parameter) and how many times that name ran before in this
// process (--gtest_repeat), so that the chaos a test's runtimes get is the same whatever
// ran before it (--gtest_filter, sharding, --gtest_shuffle).
class ChaosKeyPerTest : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override {
    if constexpr (!internal::kTestSeams) return;
    const std::string name = std::string(info.test_suite_name()) + "." + info.name();
    const std::uint64_t occurrence = ++seen_[name];
    std::uint64_t key = 1469598103934665603ULL;  // FNV-1a over the name
    for (const char c : name) {
      key = (key ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    }
    key ^= occurrence * 0xd1b54a32d192ed03ULL;
    internal::SetChaosTestKeyForTesting(key == 0 ? 1 : key);
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    if constexpr (internal::kTestSeams) internal::SetChaosTestKeyForTesting(0);
  }

 private:
  std::map<std::string, std::uint64_t> seen_;  // the test thread only
};

// gtest owns the environment and the listener.
const bool kRegistered = (::testing::AddGlobalTestEnvironment(new ChaosFromEnvironment),
                          ::testing::UnitTest::GetInstance()->listeners().Append(
                              new ChaosKeyPerTest),
                          true);

}  // namespace

int CurrentThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

bool WaitUntilThreadBlocked(int tid, std::chrono::milliseconds timeout) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
  return WaitFor(
      [&] {
        std::ifstream stat(path);
        std::string line;
        if (!std::getline(stat, line)) return false;
        const std::size_t close = line.rfind(')');
        if (close == std::string::npos || close + 2 >= line.size()) return false;
        const char state = line[close + 2];
        return state == 'S' || state == 'D';
      },
      timeout);
}

bool WaitUntilWaitingIn(std::uint64_t fiber_id, internal::WaitKind kind,
                        std::chrono::milliseconds timeout) {
  return WaitFor(
      [&] {
        for (const internal::FiberSnapshot& fiber : internal::SnapshotFibers()) {
          if (fiber.id == fiber_id) {
            return fiber.state == internal::FiberState::kWaiting && fiber.wait_kind == kind;
          }
        }
        return false;
      },
      timeout);
}

}  // namespace spindle::testing
