// Copyright 2026 The Spindle Authors.

#include "benchmarks/workload.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace spindle {
namespace bench {

const std::vector<Workload>& AllWorkloads() {
  static const std::vector<Workload> workloads = {
      {"parked_memory",
       "100k fibers parked on one Event; RSS growth per 1000 parked fibers, RSS "
       "still above the start once the idle memory was given back, and ms from the first "
       "start to the last exit (each repetition in a fresh process)",
       {},
       RunParkedMemory,
       /*own_process=*/true},
      {"spawn_join",
       "1M empty fibers started by one fiber, then joined; ns per fiber",
       {},
       RunSpawnJoin},
      {"yield",
       "two fibers yielding to each other on one worker, 10M switches; ns per switch",
       {1, 1},
       RunYield},
      {"pingpong",
       "two fibers on two workers waking each other through two BinarySemaphores, "
       "100k round trips; us per round trip and process CPU seconds",
       {2, 1},
       RunPingPong},
      {"skynet", "a 10-ary tree of fibers with 1M leaves, sum checked; ms", {}, RunSkynet},
      {"fib", "fib(30) with a fiber per call, result checked; ms", {}, RunFib},
      {"mutex", "64 fibers x 100k lock/increment/unlock of one Mutex; ns per lock", {}, RunMutex},
      {"sleep",
       "100k fibers each SleepFor(1 ms); total ms and mean oversleep us, none early",
       {},
       RunSleep},
      {"timer_churn",
       "1000 fibers each arm a timer an hour away and kill it, 1000 times; ns per "
       "arm+kill pair, none fired",
       {},
       RunTimerChurn},
      {"deadline_wait",
       "16 pairs of fibers taking turns to wait on an Event with a 1 s deadline and set "
       "the other's, 10k rounds each; ns per round trip (two deadline waits), none "
       "timed out",
       {},
       RunDeadlineWait},
      {"merge_sort",
       "parallel merge sort of 4M ints, a fiber per split above a cutoff; ms",
       {},
       RunMergeSort},
      {"single_spawner",
       "seed 000: one fiber spawns 100k short fibers (10 yields each); ns per fiber",
       {},
       RunSingleSpawner},
      {"slow_thread",
       "seed 000: one 100 ms busy fiber among 10k short ones; ms until the short ones "
       "finish, and in all",
       {},
       RunSlowThread},
      {"different_spawners",
       "seed 000: 10 spawner fibers at once, 10k short fibers each; ns per fiber",
       {},
       RunDifferentSpawners},
      {"fairness",
       "seed 000: 1000 fibers yielding in a loop beside 4 hogs computing 75 us slices, "
       "300 ms; yield-to-run wait p50/p99/max us, spread of progress, hogs' CPU share",
       {},
       RunFairness},
      {"locality",
       "a pair of fibers per worker handing a ball back and forth through two "
       "BinarySemaphores, 1M hand-offs in all; ns per hand-off and process CPU seconds",
       {},
       RunLocality},
      {"phone_factory",
       "seed 004: 10k phones, each waiting for 3 assemblies of 3 parts; us per phone",
       {},
       RunPhoneFactory},
      {"chan_pingpong",
       "two fibers bounce a counter over two rendezvous channels, 1M round trips; ns per "
       "one-way hand-off",
       {},
       RunChanPingPong},
      {"chan_fanin",
       "8 producer fibers send 1M values in all into one channel of capacity 1024 read by "
       "8 consumers, sum checked; ns per value",
       {},
       RunChanFanIn},
      {"chan_select",
       "one fiber selects over two channels of capacity 64 fed 500k values each and one "
       "never ready, sum checked; ns per value",
       {},
       RunChanSelect},
  };
  return workloads;
}

void Fail(const std::string& workload, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "\nspindle_bench: workload %s failed: %s\n", workload.c_str(),
               message.c_str());
  std::fflush(stderr);
  // _Exit: the runtime's workers may still hold fibers of the failed workload.
  std::_Exit(1);
}

std::int64_t Scaled(std::int64_t base, double scale, std::int64_t min) {
  return std::max<std::int64_t>(min, std::llround(static_cast<double>(base) * scale));
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * sysconf(_SC_PAGESIZE);
}

}  // namespace bench
}  // namespace spindle
