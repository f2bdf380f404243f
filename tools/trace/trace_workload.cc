// Copyright 2026 The Spindle Authors.
//
// A known workload recorded by the scheduling trace, for trace_check.py: fibers spawned
// (a tree, joined), parked on a contended Mutex, sleeping, and waiting on a socket, on
// two workers in two groups (so there are steals). Writes the trace to --out and prints the runtime's metrics over exactly
// the window ("metrics fibers_run=... ") and the trace's own summary ("summary ...").
// The runtime is idle before the window opens and the workload has ended before it
// closes, so the two count the same things.

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "io/stream.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"
#include "runtime/trace.h"
#include "sync/mutex.h"

DEFINE_string(out, "", "Where to write the trace (Chrome trace-event JSON). Required.");

namespace {

using namespace std::chrono_literals;

void Workload() {
  // Contention: 8 fibers, 40 rounds each, on one mutex held across a yield.
  spindle::Mutex mutex;
  int counter = 0;
  std::vector<spindle::Fiber> fibers;
  for (int i = 0; i < 8; ++i) {
    fibers.emplace_back([&, i] {
      for (int round = 0; round < 40; ++round) {
        std::lock_guard<spindle::Mutex> lock(mutex);
        ++counter;
        spindle::this_fiber::Yield();
        if (round % 10 == i % 10) spindle::this_fiber::SleepFor(200us);
      }
    });
  }
  // Sleeps.
  for (int i = 0; i < 4; ++i) {
    fibers.emplace_back([] {
      spindle::this_fiber::SleepFor(1ms);
      spindle::this_fiber::SleepFor(2ms);
    });
  }
  // A socket wait: the reader parks until the writer, after a sleep, writes.
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) std::abort();
  fibers.emplace_back([fd = sockets[0]] {
    auto stream = spindle::io::Stream::Adopt(fd, spindle::io::Address());
    if (!stream.ok()) std::abort();
    char byte;
    if (!stream->Read(&byte, 1).ok()) std::abort();
  });
  fibers.emplace_back([fd = sockets[1]] {
    spindle::this_fiber::SleepFor(3ms);
    if (write(fd, "x", 1) != 1) std::abort();
  });
  // A tree of spawns, joined.
  fibers.emplace_back([] {
    std::vector<spindle::Fiber> children;
    for (int i = 0; i < 10; ++i) {
      children.emplace_back([] {
        spindle::Fiber grandchild([] { spindle::this_fiber::Yield(); });
        grandchild.join();
      });
    }
    for (auto& child : children) child.join();
  });
  for (auto& fiber : fibers) fiber.join();
  close(sockets[1]);
  if (counter != 8 * 40) std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  // Two groups of one worker: fibers move between them by stealing, which the trace
  // records too.
  gflags::SetCommandLineOptionWithMode("fiber_concurrency", "2", gflags::SET_FLAGS_DEFAULT);
  gflags::SetCommandLineOptionWithMode("fiber_scheduling_group_size", "1",
                                       gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_out.empty()) {
    std::fprintf(stderr, "trace_workload: --out=PATH is required\n");
    return 2;
  }
  spindle::StartRuntime();
  const spindle::RuntimeMetrics before = spindle::GetRuntimeMetrics();
  const std::string error = spindle::StartTracing();
  if (!error.empty()) {
    std::fprintf(stderr, "trace_workload: %s\n", error.c_str());
    return 2;
  }
  spindle::RunAsFiber(Workload);
  std::ofstream out(FLAGS_out);
  const spindle::TraceSummary summary = spindle::StopTracing(out);
  out.close();
  const spindle::GroupMetrics total = spindle::GetRuntimeMetrics().Since(before).Total();
  std::printf("metrics fibers_run=%llu fibers_started=%llu timers_fired=%llu steals=%llu "
              "sleeps=%llu\n",
              static_cast<unsigned long long>(total.fibers_run),
              static_cast<unsigned long long>(total.fibers_started),
              static_cast<unsigned long long>(total.timers_fired),
              static_cast<unsigned long long>(total.steals_in_same_node +
                                              total.steals_in_cross_node),
              static_cast<unsigned long long>(total.sleeps));
  std::printf("summary runs=%llu spawns=%llu wakes=%llu timers=%llu steals=%llu sleeps=%llu "
              "records=%llu dropped=%llu truncated=%d seconds=%.6f\n",
              static_cast<unsigned long long>(summary.runs),
              static_cast<unsigned long long>(summary.spawns),
              static_cast<unsigned long long>(summary.wakes),
              static_cast<unsigned long long>(summary.timers),
              static_cast<unsigned long long>(summary.steals),
              static_cast<unsigned long long>(summary.sleeps),
              static_cast<unsigned long long>(summary.records),
              static_cast<unsigned long long>(summary.dropped), summary.truncated ? 1 : 0,
              summary.seconds);
  spindle::TerminateRuntime();
  return summary.recorded && !summary.truncated ? 0 : 1;
}
