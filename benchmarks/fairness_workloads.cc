// Copyright 2026 The Spindle Authors.
//
// Workloads of the scheduler's policy rather than its raw speed: how fairly it shares
// the workers among many more ready fibers than workers (seed 000's YieldAndFairness,
// measured instead of asserted), and whether fibers that hand work to each other stay
// on one worker (cache locality). Both run under every scheduling strategy and use the
// command line's worker count.

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "benchmarks/workload.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "runtime/runtime.h"
#include "sync/latch.h"
#include "sync/semaphore.h"

namespace spindle {
namespace bench {
namespace {

std::uint64_t NanosecondsBetween(std::chrono::steady_clock::time_point from,
                                 std::chrono::steady_clock::time_point to) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// CPU time of the calling thread, in nanoseconds. In a fiber, compare two readings only
// across code that cannot switch fibers: at a switch the fiber may move to another
// worker thread.
std::uint64_t ThreadCpuNanoseconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Waits in nanoseconds, counted in log-linear buckets: one per value below 16 ns, then
// eight per power of two, so a bucket is at most 1/8 of its lower bound wide and a
// percentile read at its midpoint is within about 6% of the true value. Fixed size:
// Record() allocates nothing. One writer at a time (a fiber's own histogram); read or
// merged once that writer was joined.
class WaitHistogram {
 public:
  void Record(std::uint64_t ns) {
    ++buckets_[BucketOf(ns)];
    ++count_;
    max_ = std::max(max_, ns);
  }

  void MergeFrom(const WaitHistogram& other) {
    for (int b = 0; b < kBuckets; ++b) buckets_[b] += other.buckets_[b];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
  }

  // The midpoint of the bucket holding the ceil(q * count)-th smallest wait (at most
  // the largest wait), for q in [0, 1]; 0 when empty.
  double Percentile(double q) const {
    const std::uint64_t rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += buckets_[b];
      if (seen >= rank) {
        return std::min(LowerBound(b) + Width(b) / 2, static_cast<double>(max_));
      }
    }
    return 0;
  }

  std::uint64_t count() const { return count_; }
  std::uint64_t max() const { return max_; }

 private:
  static constexpr int kSubBits = 3;             // 8 buckets per power of two
  static constexpr int kLinear = 2 << kSubBits;  // values below this have a bucket each
  static constexpr int kLinearBits = kSubBits + 1;
  static constexpr int kBuckets = kLinear + ((64 - kLinearBits) << kSubBits);

  static int BucketOf(std::uint64_t ns) {
    if (ns < kLinear) return static_cast<int>(ns);
    const int exponent = 63 - __builtin_clzll(ns);  // >= kLinearBits
    const int sub = static_cast<int>((ns >> (exponent - kSubBits)) & ((1 << kSubBits) - 1));
    return kLinear + ((exponent - kLinearBits) << kSubBits) + sub;
  }
  static int ExponentOf(int bucket) { return ((bucket - kLinear) >> kSubBits) + kLinearBits; }
  static double LowerBound(int bucket) {
    if (bucket < kLinear) return bucket;
    const int sub = (bucket - kLinear) & ((1 << kSubBits) - 1);
    return std::ldexp((1 << kSubBits) + sub, ExponentOf(bucket) - kSubBits);
  }
  static double Width(int bucket) {
    return bucket < kLinear ? 1 : std::ldexp(1, ExponentOf(bucket) - kSubBits);
  }

  std::uint64_t buckets_[kBuckets] = {};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

// What one yielding fiber of `fairness` did; written by that fiber only, read after it
// was joined. Aligned so that neighbours' counters do not share a cache line.
struct alignas(64) YielderRecord {
  std::int64_t yields = 0;
  WaitHistogram waits;  // from each Yield() call to its return
};

// What one hog fiber of `fairness` did; as YielderRecord.
struct alignas(64) HogRecord {
  std::int64_t slices = 0;
  std::uint64_t cpu_ns = 0;  // the slices' CPU time, summed
  std::uint64_t steps = 0;   // the work: sum = 1 + 2 + ... + steps (mod 2^64)
  std::uint64_t sum = 0;
};

constexpr int kHogs = 4;
constexpr auto kHogSlice = std::chrono::microseconds(75);

// Loops until `stop`: yields, and records how long the yield took to come back, which
// is the fiber's wait from becoming ready again to running again, plus the switches and
// one steady_clock read (38 ns on the 2-vCPU development VM): a floor of some 100 ns
// under waits of tens of microseconds or more when fibers far outnumber the workers.
void YielderBody(const std::atomic<bool>& stop, YielderRecord* record) {
  // Relaxed: `stop` only ends the loop; the join orders the record for the reader.
  while (!stop.load(std::memory_order_relaxed)) {
    const auto before = std::chrono::steady_clock::now();
    this_fiber::Yield();
    record->waits.Record(NanosecondsBetween(before, std::chrono::steady_clock::now()));
    ++record->yields;
  }
}

// Loops until `stop`: computes for kHogSlice of wall time without parking, then yields.
// A slice has no switch, so it stays on one worker thread and that thread's CPU clock
// measures it (not its wall time, which counts time the OS ran other threads in it).
// The thread CPU clock is a system call (about 1 us here): 2 per 75 us slice.
void HogBody(const std::atomic<bool>& stop, HogRecord* record) {
  while (!stop.load(std::memory_order_relaxed)) {  // relaxed: as in YielderBody
    const std::uint64_t cpu_start = ThreadCpuNanoseconds();
    const auto until = std::chrono::steady_clock::now() + kHogSlice;
    do {
      for (int i = 0; i < 64; ++i) record->sum += ++record->steps;
    } while (std::chrono::steady_clock::now() < until);
    record->cpu_ns += ThreadCpuNanoseconds() - cpu_start;
    ++record->slices;
    this_fiber::Yield();
  }
}

// 1 + 2 + ... + n modulo 2^64: halve the even factor before multiplying.
std::uint64_t TriangularMod64(std::uint64_t n) {
  return n % 2 == 0 ? (n / 2) * (n + 1) : n * ((n + 1) / 2);
}

// Fails `fairness` unless every fiber made progress and the counts add up.
void CheckFairness(const std::vector<YielderRecord>& yielders, const std::vector<HogRecord>& hogs,
                   const WaitHistogram& waits, std::int64_t total_yields, double window_ms) {
  for (std::size_t i = 0; i < yielders.size(); ++i) {
    if (yielders[i].yields <= 0) {
      Fail("fairness", "yielding fiber " + std::to_string(i) + " of " +
                           std::to_string(yielders.size()) + " never came back from a yield in " +
                           std::to_string(window_ms) + " ms: starved");
    }
  }
  for (std::size_t i = 0; i < hogs.size(); ++i) {
    if (hogs[i].slices <= 0) {
      Fail("fairness", "hog " + std::to_string(i) + " never finished a slice in " +
                           std::to_string(window_ms) + " ms: starved");
    }
    if (hogs[i].sum != TriangularMod64(hogs[i].steps)) {
      Fail("fairness", "hog " + std::to_string(i) + "'s sum of 1.." +
                           std::to_string(hogs[i].steps) + " is " + std::to_string(hogs[i].sum));
    }
  }
  if (waits.count() != static_cast<std::uint64_t>(total_yields)) {
    Fail("fairness", "the merged histogram holds " + std::to_string(waits.count()) +
                         " waits, the fibers counted " + std::to_string(total_yields) + " yields");
  }
}

// The metrics of `fairness` from its checked records; `cpu_seconds`: the process's CPU
// time during the window.
std::vector<Metric> FairnessMetrics(const std::vector<YielderRecord>& yielders,
                                    const std::vector<HogRecord>& hogs, const WaitHistogram& waits,
                                    double cpu_seconds) {
  std::int64_t least = yielders[0].yields, most = least;
  double sum = 0, sum_of_squares = 0;
  for (const YielderRecord& r : yielders) {
    least = std::min(least, r.yields);
    most = std::max(most, r.yields);
    sum += static_cast<double>(r.yields);
    sum_of_squares += static_cast<double>(r.yields) * static_cast<double>(r.yields);
  }
  const double n = static_cast<double>(yielders.size());
  const double mean = sum / n;
  const double stddev = std::sqrt(std::max(0.0, sum_of_squares / n - mean * mean));
  double hog_cpu_seconds = 0;
  for (const HogRecord& h : hogs) hog_cpu_seconds += static_cast<double>(h.cpu_ns) * 1e-9;
  return {
      {"wait_p50", waits.Percentile(0.5) / 1e3, "us"},
      {"wait_p99", waits.Percentile(0.99) / 1e3, "us"},
      {"wait_max", static_cast<double>(waits.max()) / 1e3, "us"},
      {"progress_spread", static_cast<double>(most) / static_cast<double>(least), "x"},
      {"progress_cv", 100 * stddev / mean, "%"},
      {"hog_cpu", cpu_seconds > 0 ? 100 * hog_cpu_seconds / cpu_seconds : 0, "%"},
  };
}

}  // namespace

std::vector<Metric> RunFairness(double scale) {
  // Many more yielding fibers than workers, whatever the worker count: 1000 at scale 1,
  // 64 at least. The window: 300 ms at scale 1, at least 50 ms, so that at --scale=0.001
  // under TSan every fiber still gets turns and only a starved one fails the check.
  const std::int64_t yielder_count = Scaled(1000, scale, 64);
  const auto window = std::chrono::duration<double>(std::max(0.3 * scale, 0.05));
  std::vector<YielderRecord> yielders(static_cast<std::size_t>(yielder_count));
  std::vector<HogRecord> hogs(kHogs);
  std::atomic<bool> stop{false};
  Latch started(yielder_count + kHogs);
  Latch go(1);
  double window_seconds = 0, cpu_seconds = 0;
  RunAsFiber([&] {
    std::vector<Fiber> fibers;
    fibers.reserve(yielders.size() + hogs.size());
    for (YielderRecord& r : yielders) {
      fibers.emplace_back([&, record = &r] {
        started.count_down();
        go.wait();
        YielderBody(stop, record);
      });
    }
    for (HogRecord& h : hogs) {
      fibers.emplace_back([&, record = &h] {
        started.count_down();
        go.wait();
        HogBody(stop, record);
      });
    }
    // Every fiber has run and parks at `go`: all start together, and none is still
    // unstarted when joined below (join() would run it inline, after the window).
    started.wait();
    const double cpu_before = ProcessCpuSeconds();
    Stopwatch watch;
    go.count_down();
    this_fiber::SleepFor(window);
    stop.store(true, std::memory_order_relaxed);  // relaxed: see YielderBody
    window_seconds = watch.Seconds();
    cpu_seconds = ProcessCpuSeconds() - cpu_before;
    for (Fiber& f : fibers) f.join();
  });
  WaitHistogram waits;
  std::int64_t total_yields = 0;
  for (const YielderRecord& r : yielders) {
    waits.MergeFrom(r.waits);
    total_yields += r.yields;
  }
  CheckFairness(yielders, hogs, waits, total_yields, window_seconds * 1e3);
  return FairnessMetrics(yielders, hogs, waits, cpu_seconds);
}

namespace {

// Two fibers of `locality` passing a ball back and forth through two semaphores.
// Aligned so that pairs do not share a cache line.
struct alignas(64) HandOffPair {
  BinarySemaphore to_a{0};
  BinarySemaphore to_b{0};
  std::int64_t ball = 0;          // written by b, read by a; ordered by the semaphores
  std::int64_t wrong_round = -1;  // the first round in which a saw another round's ball
  std::int64_t a_rounds = 0;      // rounds each side completed, read after `done`
  std::int64_t b_rounds = 0;
};

}  // namespace

std::vector<Metric> RunLocality(double scale) {
  // A pair per worker: 2P fibers, about P of them runnable at any time.
  std::int64_t workers = 0;
  for (const SchedulingGroupStats& group : GetSchedulingGroupStats()) {
    workers += static_cast<std::int64_t>(group.workers);
  }
  const std::int64_t pair_count = std::max<std::int64_t>(1, workers);
  const std::int64_t hand_offs = Scaled(1000000, scale, 1000);
  const std::int64_t rounds = std::max<std::int64_t>(1, hand_offs / (2 * pair_count));
  std::vector<HandOffPair> pairs(static_cast<std::size_t>(pair_count));
  // Detached fibers and a Latch, not joined handles: join() would run a fiber that has
  // not started yet inline, on the joiner's worker, and pair it with nobody.
  Latch done(2 * pair_count);
  const double cpu_before = ProcessCpuSeconds();
  Stopwatch watch;
  for (HandOffPair& pair : pairs) {
    StartFiberDetached([&done, &pair, rounds] {
      for (std::int64_t i = 0; i < rounds; ++i) {
        pair.to_b.acquire();
        pair.ball = i + 1;
        ++pair.b_rounds;
        pair.to_a.release();
      }
      done.count_down();
    });
    StartFiberDetached([&done, &pair, rounds] {
      for (std::int64_t i = 0; i < rounds; ++i) {
        pair.to_b.release();
        pair.to_a.acquire();
        if (pair.ball != i + 1 && pair.wrong_round < 0) pair.wrong_round = i;
        ++pair.a_rounds;
      }
      done.count_down();
    });
  }
  done.wait();
  const double seconds = watch.Seconds();
  const double cpu = ProcessCpuSeconds() - cpu_before;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const HandOffPair& pair = pairs[p];
    if (pair.wrong_round >= 0 || pair.a_rounds != rounds || pair.b_rounds != rounds) {
      Fail("locality", "pair " + std::to_string(p) + " of " + std::to_string(pair_count) +
                           ": sides finished " + std::to_string(pair.a_rounds) + " and " +
                           std::to_string(pair.b_rounds) + " of " + std::to_string(rounds) +
                           " rounds, first wrong ball in round " +
                           std::to_string(pair.wrong_round) + " (-1: none)");
    }
  }
  const double total_hand_offs = 2.0 * static_cast<double>(rounds * pair_count);
  return {{"per_handoff", seconds * 1e9 / total_hand_offs, "ns"}, {"cpu", cpu, "s"}};
}

}  // namespace bench
}  // namespace spindle
