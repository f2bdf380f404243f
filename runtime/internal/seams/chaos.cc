// Copyright 2026 The Spindle Authors.

#include "runtime/internal/seams/chaos.h"

#include <sched.h>
#include <time.h>

#include "fiber/internal/spinlock.h"
#include "glog/logging.h"

// The whole of chaos mode exists only with the test seams (test_seams.h).
#if SPINDLE_HAS_TEST_SEAMS

namespace spindle::internal {
namespace chaos_internal {
std::atomic<bool> g_on{false};
std::atomic<bool> g_decisions{false};
}  // namespace chaos_internal

namespace {

constexpr std::size_t kMaxGroups = 1024;

// Written by StartChaos()/StopChaos() while no worker runs (see chaos_internal::g_on);
// relaxed: the runtime's start publishes them to its workers, and other threads read
// them only while chaos is on.
std::atomic<std::uint64_t> g_seed{0};
// Bumped by every StartChaos(): a thread whose streams belong to an older epoch seeds
// them again on its next draw.
std::atomic<std::uint64_t> g_epoch{0};
// Numbers the streams of threads that are not bound workers, in the order they draw.
std::atomic<std::uint64_t> g_next_unbound{0};
// Runtimes started under chaos so far (numbering the runs), and the test override.
std::atomic<std::uint64_t> g_starts{0};
std::atomic<int> g_forced_decisions{-1};
// The running test's key (SetChaosTestKeyForTesting) and the runtimes it started.
std::atomic<std::uint64_t> g_test_key{0};
std::atomic<std::uint64_t> g_starts_in_test{0};
ChaosGroup g_groups[kMaxGroups];
// Statistics: relaxed, nothing is ordered by them.
std::atomic<std::uint64_t> g_events[static_cast<int>(ChaosEvent::kCount)];
std::atomic<std::size_t> g_group_count{0};

std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// xoshiro256** (Blackman and Vigna): small, fast, and good enough for test choices.
struct Stream {
  std::uint64_t s[4];
  void Seed(std::uint64_t seed) {
    for (std::uint64_t& word : s) word = SplitMix64(seed);
  }
  std::uint64_t Next() {
    const std::uint64_t result = Rotl(s[1] * 5, 7) * 9;
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = Rotl(s[3], 45);
    return result;
  }
};

struct ThreadStreams {
  std::uint64_t epoch = 0;  // 0: never seeded
  // Bound workers: 1 + group * 64 + worker; 0: not bound (numbered at seeding).
  std::uint64_t bound_id = 0;
  Stream decisions;
  Stream timing;
};

// Only ever used by a call that does not switch fibers, so the address of this thread's
// copy cannot go stale inside it (no switch-safe accessor needed); the functions below
// are not inlined into fiber code.
thread_local ThreadStreams tls_streams;

ThreadStreams& Streams() {
  ThreadStreams& streams = tls_streams;
  const std::uint64_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (streams.epoch != epoch) {
    streams.epoch = epoch;
    // Unbound threads get ids above every worker's (2^32 + n).
    const std::uint64_t id =
        streams.bound_id != 0
            ? streams.bound_id
            : (std::uint64_t{1} << 32) + g_next_unbound.fetch_add(1, std::memory_order_relaxed);
    std::uint64_t mix = g_seed.load(std::memory_order_relaxed) ^ (id * 0xd1b54a32d192ed03ULL);
    streams.decisions.Seed(SplitMix64(mix));
    streams.timing.Seed(SplitMix64(mix));
  }
  return streams;
}

}  // namespace

bool StartChaos(std::uint64_t seed, std::vector<ChaosGroup> groups) {
  CHECK_NE(seed, 0u) << "chaos mode needs a nonzero seed";
  CHECK_LE(groups.size(), kMaxGroups) << "chaos mode handles at most " << kMaxGroups
                                      << " scheduling groups";
  for (std::size_t i = 0; i < groups.size(); ++i) g_groups[i] = groups[i];
  g_group_count.store(groups.size(), std::memory_order_relaxed);
  g_seed.store(seed, std::memory_order_relaxed);
  g_next_unbound.store(0, std::memory_order_relaxed);
  for (auto& count : g_events) count.store(0, std::memory_order_relaxed);
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t test_key = g_test_key.load(std::memory_order_relaxed);
  const std::uint64_t run = test_key != 0
                                ? g_starts_in_test.fetch_add(1, std::memory_order_relaxed)
                                : g_starts.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t mix = seed + run + test_key * 0x9e3779b97f4a7c15ULL;
  const int forced = g_forced_decisions.load(std::memory_order_relaxed);
  const bool decisions = forced >= 0 ? forced == 1 : (SplitMix64(mix) & 1) != 0;
  chaos_internal::g_decisions.store(decisions, std::memory_order_relaxed);
  chaos_internal::g_on.store(true, std::memory_order_relaxed);
  return decisions;
}

void SetChaosDecisionsForTesting(int decisions) {
  g_forced_decisions.store(decisions, std::memory_order_relaxed);
}

void SetChaosTestKeyForTesting(std::uint64_t key) {
  g_test_key.store(key, std::memory_order_relaxed);
  g_starts_in_test.store(0, std::memory_order_relaxed);
}

void StopChaos() {
  chaos_internal::g_on.store(false, std::memory_order_relaxed);
  chaos_internal::g_decisions.store(false, std::memory_order_relaxed);
  g_group_count.store(0, std::memory_order_relaxed);
  g_seed.store(0, std::memory_order_relaxed);
}

std::uint64_t ChaosSeed() { return g_seed.load(std::memory_order_relaxed); }

void ChaosBindWorker(std::size_t group, std::size_t worker) {
  tls_streams.bound_id = 1 + group * 64 + worker;
  tls_streams.epoch = 0;  // seed again from the new id on the next draw
}

void ChaosCount(ChaosEvent event) {
  g_events[static_cast<int>(event)].fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t ChaosEvents(ChaosEvent event) {
  return g_events[static_cast<int>(event)].load(std::memory_order_relaxed);
}

bool ChaosOneIn(std::uint32_t n) { return Streams().decisions.Next() % n == 0; }

std::uint64_t ChaosBelow(std::uint64_t n) { return Streams().decisions.Next() % n; }

SchedulingGroup* ChaosGroupOnNode(SchedulingGroup* home, int numa_node) {
  const std::size_t count = g_group_count.load(std::memory_order_relaxed);
  std::size_t same_node = 0;
  for (std::size_t i = 0; i < count; ++i) same_node += g_groups[i].numa_node == numa_node;
  if (same_node <= 1) return home;
  std::uint64_t pick = ChaosBelow(same_node);
  for (std::size_t i = 0; i < count; ++i) {
    if (g_groups[i].numa_node != numa_node) continue;
    if (pick-- == 0) return g_groups[i].group;
  }
  return home;
}

void ChaosPauseSlow() {
  const std::uint64_t draw = Streams().timing.Next();
  const unsigned kind = static_cast<unsigned>(draw % 64);
  const std::uint64_t amount = draw >> 32;
  if (kind < 44) return;  // most steps run at full speed
  ChaosCount(ChaosEvent::kPause);
  if (kind < 56) {
    // A short stall (a cache miss, an interrupt): up to ~2 us.
    for (std::uint64_t i = amount % 512; i != 0; --i) CpuRelax();
  } else if (kind < 62) {
    sched_yield();  // preempted at this step
  } else {
    // Off the CPU for up to 100 us: other threads run whole protocol steps meanwhile.
    timespec pause{0, static_cast<long>(amount % 100000)};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace spindle::internal

#endif  // SPINDLE_HAS_TEST_SEAMS
