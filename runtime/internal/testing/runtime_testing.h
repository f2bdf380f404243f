// Copyright 2026 The Spindle Authors.
//
// Test support: start a runtime with a given shape, scale stress loops for the
// sanitizer lanes, and wait for a condition with a deadline (never a bare sleep).

#ifndef SPINDLE_RUNTIME_INTERNAL_RUNTIME_TESTING_H_
#define SPINDLE_RUNTIME_INTERNAL_RUNTIME_TESTING_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "fiber/internal/wait_types.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/timeout_testing.h"
#include "runtime/runtime.h"

#ifndef SPINDLE_STRESS_SCALE_DEFAULT
#define SPINDLE_STRESS_SCALE_DEFAULT 1.0
#endif

namespace spindle::testing {

// `n` scaled down for slow lanes: the sanitizer configs define
// SPINDLE_STRESS_SCALE_DEFAULT (TSan 0.1, ASan 0.25); SPINDLE_STRESS_SCALE in the
// environment overrides it; chaos scheduling halves it. At least 1.
inline std::size_t Scaled(std::size_t n) {
  double scale = SPINDLE_STRESS_SCALE_DEFAULT;
  if (const char* env = std::getenv("SPINDLE_STRESS_SCALE")) scale = std::atof(env);
  // Chaos scheduling makes every step slower: half the loops (runtime_testing.cc).
  if (const char* env = std::getenv("SPINDLE_TEST_CHAOS_SEED")) {
    if (std::strtoull(env, nullptr, 10) != 0) scale *= 0.5;
  }
  const auto scaled = static_cast<std::size_t>(static_cast<double>(n) * scale);
  return scaled == 0 ? 1 : scaled;
}

// Like Scaled(), for fibers that are all alive at the same time. ThreadSanitizer gives
// every fiber its own trace mapping (about 1.2 MiB), so thousands of simultaneously
// parked fibers exhaust vm.max_map_count in the TSan lane; there the count is capped.
inline std::size_t ScaledLiveFibers(std::size_t n) {
#if defined(__SANITIZE_THREAD__)
  constexpr std::size_t kTsanCap = 2000;
  return Scaled(n) < kTsanCap ? Scaled(n) : kTsanCap;
#else
  return Scaled(n);
#endif
}

// Polls `condition` until it holds or `timeout` passes; returns whether it held. The
// polling thread yields between checks; the deadline turns a lost wake-up into a test
// failure instead of a hang. The default is generous: the sanitizer lanes on 2 busy
// cores run some workloads ten times slower, and a too-tight default made them flaky.
template <class F>
bool WaitFor(F&& condition, std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Waits (as WaitFor) until the fiber `fiber_id` is parked (Waiting) in a wait of
// `kind`, as the fiber dump sees it under the fiber's lock: a test that needs a waiter
// queued before the event it is named after waits here, rather than hoping a yield or
// a sleep was enough. The fiber must not be able to end meanwhile.
bool WaitUntilWaitingIn(std::uint64_t fiber_id, internal::WaitKind kind,
                        std::chrono::milliseconds timeout = std::chrono::seconds(120));

// The calling thread's kernel id (gettid), for WaitUntilThreadBlocked.
int CurrentThreadId();
// Waits (as WaitFor) until the thread `tid` of this process is blocked in the kernel
// (state S or D in /proc/self/task/TID/stat): for a plain thread that publishes its id
// right before a wait, "blocked" means "in that wait".
bool WaitUntilThreadBlocked(int tid,
                            std::chrono::milliseconds timeout = std::chrono::seconds(120));

// The worker counts that scheduler-facing tests run over, and the test-name suffix for
// them: INSTANTIATE_TEST_SUITE_P(Workers, MyTest, WorkerCounts(), WorkerCountName).
// 1, 2, 4, 8 and 16: on a 2-core machine 8 and 16 oversubscribe the CPUs, which is what
// lets a small machine show the interleavings of a big one (16 workers make two groups
// of 8, so stealing runs too). SPINDLE_TEST_WORKER_COUNTS (a comma-separated list, read
// when the test binary starts) replaces the list; tools/stress_runner.sh uses it.
inline std::vector<std::size_t> WorkerCountList() {
  std::vector<std::size_t> counts;
  const char* env = std::getenv("SPINDLE_TEST_WORKER_COUNTS");
  const std::string list = env != nullptr && *env != '\0' ? env : "1,2,4,8,16";
  std::size_t begin = 0;
  while (begin <= list.size()) {
    std::size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(begin, end - begin);
    char* rest = nullptr;
    const unsigned long count = std::strtoul(item.c_str(), &rest, 10);
    if (item.empty() || *rest != '\0' || count < 1 || count > 64) {
      std::fprintf(stderr,
                   "SPINDLE_TEST_WORKER_COUNTS=%s: '%s' is not a worker count; expected "
                   "a comma-separated list of integers in [1, 64]\n",
                   list.c_str(), item.c_str());
      std::exit(2);
    }
    counts.push_back(count);
    begin = end + 1;
  }
  return counts;
}
inline auto WorkerCounts() { return ::testing::ValuesIn(WorkerCountList()); }
inline std::string WorkerCountName(const ::testing::TestParamInfo<std::size_t>& info) {
  return std::to_string(info.param) + "Workers";
}

// The scheduling strategy tests run under: SPINDLE_TEST_STRATEGY in the environment
// (v1, v2, relaxed or globalfifo; each test target has twins that set it to v2 and to
// relaxed, see bazel/testing.bzl), else v1, so the three targets cover every production
// strategy whichever is the flag's default; the baseline globalfifo runs under
// tools/stress_runner.sh.
inline std::string TestStrategy() {
  const char* env = std::getenv("SPINDLE_TEST_STRATEGY");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("v1");
}

// Whether the tests run under chaos scheduling (SPINDLE_TEST_CHAOS_SEED, see
// runtime_testing.cc): a check of an order or a placement that chaos mode changes on
// purpose (which fiber runs next, that a joiner runs its child inline) is skipped then.
inline bool UnderChaos() { return FLAGS_fiber_chaos_seed != 0; }

// Starts a runtime of `workers` workers (one group unless `group_size` says otherwise)
// under `strategy` (empty: TestStrategy()) for the lifetime of the object, restoring the flags afterwards. On the real machine
// the layout is not NUMA-aware (unless a test set --fiber_numa_aware), so the shape
// does not depend on how many nodes the test machine has; a fake topology
// (--fiber_numa_topology_override) keeps the flags as they are.
class ScopedRuntime {
 public:
  explicit ScopedRuntime(std::size_t workers, std::size_t group_size = 0,
                         std::size_t run_queue_size = 65536,
                         const std::string& strategy = "")
      : numa_aware_(FLAGS_fiber_numa_aware), strategy_(FLAGS_fiber_scheduling_strategy) {
    FLAGS_fiber_scheduling_strategy = strategy.empty() ? TestStrategy() : strategy;
    FLAGS_fiber_concurrency = workers;
    FLAGS_fiber_scheduling_group_size = group_size;
    FLAGS_fiber_run_queue_size = run_queue_size;
    if (FLAGS_fiber_numa_topology_override.empty() && FLAGS_fiber_numa_aware == "auto") {
      FLAGS_fiber_numa_aware = "false";
    }
    StartRuntime();
  }
  ~ScopedRuntime() {
    TerminateRuntime();
    FLAGS_fiber_concurrency = 0;
    FLAGS_fiber_scheduling_group_size = 0;
    FLAGS_fiber_run_queue_size = 65536;
    FLAGS_fiber_numa_aware = numa_aware_;
    FLAGS_fiber_scheduling_strategy = strategy_;
  }
  ScopedRuntime(const ScopedRuntime&) = delete;
  ScopedRuntime& operator=(const ScopedRuntime&) = delete;

 private:
  const std::string numa_aware_;
  const std::string strategy_;
};

// Collects every glog message logged while it lives (for tests of what the runtime
// logs: TerminateRuntime()'s stragglers, the blocking pool's report). Thread-safe.
class LogCollector : public google::LogSink {
 public:
  LogCollector() { google::AddLogSink(this); }
  ~LogCollector() override { google::RemoveLogSink(this); }
  LogCollector(const LogCollector&) = delete;
  LogCollector& operator=(const LogCollector&) = delete;

  using google::LogSink::send;
  void send(google::LogSeverity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message,
            std::size_t message_len) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(message, message_len).append("\n");
  }
  // Every message so far, one per line.
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

}  // namespace spindle::testing

#endif  // SPINDLE_RUNTIME_INTERNAL_RUNTIME_TESTING_H_
