// Copyright 2026 The Spindle Authors.

#include "fiber/internal/stack_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

StackAllocatorOptions SmallOptions() {
  StackAllocatorOptions options;
  options.stack_size = 64 * 1024;
  options.guard_page = true;
  options.guard_regions = false;  // PROT_NONE guards: the layout every kernel has
  options.mmap_limit = 1000;
  options.thread_cache_size = 8;   // batches of 4
  options.pool_idle_max = 1000;
  return options;
}

// Lines of /proc/self/maps: the process's VMAs.
std::size_t MappingCount() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  std::size_t lines = 0;
  char line[512];
  while (maps != nullptr && std::fgets(line, sizeof(line), maps) != nullptr) ++lines;
  if (maps != nullptr) std::fclose(maps);
  return lines;
}

// Resident pages of [begin, begin + length), by mincore().
std::size_t ResidentPages(const char* begin, std::size_t length) {
  const std::size_t page = static_cast<std::size_t>(getpagesize());
  std::vector<unsigned char> vec(length / page);
  if (mincore(const_cast<char*>(begin), length, vec.data()) != 0) return SIZE_MAX;
  std::size_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return resident;
}

// True if [address, address + 1) is mapped with no access rights. mincore() fails with
// ENOMEM on unmapped memory; a PROT_NONE page is mapped, so we look it up in
// /proc/self/maps instead.
bool IsProtNone(const void* address) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[512];
  bool result = false;
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    std::uintptr_t begin = 0, end = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &begin, &end, perms) == 3 && target >= begin &&
        target < end) {
      result = std::strncmp(perms, "---", 3) == 0;
      break;
    }
  }
  std::fclose(maps);
  return result;
}

TEST(StackAllocatorTest, CreatesUsableGuardedStacks) {
  StackAllocator allocator(SmallOptions());
  Stack stack = allocator.Create();
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack.size, 64u * 1024);
  EXPECT_EQ(stack.origin, Stack::Origin::kMmapped);
  EXPECT_TRUE(stack.guarded);
  std::memset(stack.base, 0xab, stack.size);  // every usable byte is writable
  EXPECT_TRUE(IsProtNone(stack.base - 1));    // the page below is the guard
  EXPECT_FALSE(IsProtNone(stack.base));
  EXPECT_EQ(allocator.mmapped_count(), 1u);
  allocator.Destroy(stack);
  EXPECT_EQ(allocator.mmapped_count(), 0u);
}

TEST(StackAllocatorTest, NoGuardPageWhenDisabledButACanary) {
  StackAllocatorOptions options = SmallOptions();
  options.guard_page = false;
  StackAllocator allocator(options);
  Stack stack = allocator.Create();
  EXPECT_FALSE(stack.guarded);
  EXPECT_EQ(stack.origin, Stack::Origin::kSlab);
  EXPECT_FALSE(IsProtNone(stack.base - 1));
  EXPECT_EQ(allocator.mmapped_count(), 0u);
  std::memset(stack.base, 0xab, stack.size);  // the stack itself leaves the canary be
  EXPECT_TRUE(StackCanaryIntact(stack));
  stack.base[-kStackCanaryBytes] = 1;  // the lowest canary byte: an overflow's depth
  EXPECT_FALSE(StackCanaryIntact(stack));
  // Released, the slot reads zero again and is the next one handed out.
  allocator.Destroy(stack);
  EXPECT_EQ(allocator.released_count(), 1u);
  Stack again = allocator.Create();
  EXPECT_EQ(again.base, stack.base);
  EXPECT_TRUE(StackCanaryIntact(again));
  EXPECT_EQ(again.base[0], 0);
  allocator.Destroy(again);
}

TEST(StackAllocatorTest, GuardMarkersGuardSlabStacksWithoutMappings) {
  if (!KernelHasGuardMarkers()) GTEST_SKIP() << "no MADV_GUARD_INSTALL (Linux < 6.13)";
  StackAllocatorOptions options = SmallOptions();
  options.guard_regions = true;
  StackAllocator allocator(options);
  ASSERT_TRUE(allocator.uses_guard_markers());
  const std::size_t maps_before = MappingCount();
  std::vector<Stack> stacks;
  for (int i = 0; i < 200; ++i) stacks.push_back(allocator.Create());
  // 200 PROT_NONE guards would be 400 VMAs; slabs of 16 MiB are a few (plus what a
  // sanitizer's allocator maps meanwhile).
  EXPECT_LE(MappingCount(), maps_before + 50);
  for (const Stack& stack : stacks) {
    EXPECT_EQ(stack.origin, Stack::Origin::kSlab);
    EXPECT_TRUE(stack.guarded);
  }
  std::memset(stacks[7].base, 0xab, stacks[7].size);
  EXPECT_DEATH(*reinterpret_cast<volatile char*>(stacks[7].base - 1) = 1, "");
  // The marker survives the release of the stack's memory.
  allocator.Destroy(stacks[7]);
  EXPECT_DEATH(*reinterpret_cast<volatile char*>(stacks[7].base - 1) = 1, "");
  stacks[7] = allocator.Create();
  for (const Stack& stack : stacks) allocator.Destroy(stack);
}

TEST(StackAllocatorTest, CacheReusesStacksLastInFirstOut) {
  StackAllocator allocator(SmallOptions());
  StackCache cache(&allocator);
  Stack a = cache.Get();
  Stack b = cache.Get();
  EXPECT_NE(a.base, b.base);
  cache.Put(a);
  cache.Put(b);
  EXPECT_EQ(cache.Get().base, b.base);
  EXPECT_EQ(cache.Get().base, a.base);
  EXPECT_EQ(allocator.mmapped_count(), 2u);  // reuse created nothing new
  cache.Put(a);
  cache.Put(b);
}

TEST(StackAllocatorTest, CacheSpillsBatchesToThePoolAndTakesThemBack) {
  StackAllocator allocator(SmallOptions());  // batch size 4
  std::vector<Stack> stacks;
  {
    StackCache cache(&allocator);
    for (int i = 0; i < 8; ++i) stacks.push_back(cache.Get());
    for (const Stack& s : stacks) cache.Put(s);
    // Two batches cached is the spill point: one batch went to the pool.
    EXPECT_EQ(cache.cached_count(), 4u);
    EXPECT_EQ(allocator.pooled_count(), 4u);
  }
  // The destructor gave the rest back.
  EXPECT_EQ(allocator.pooled_count(), 8u);
  // Another thread's cache takes a whole batch at once and reuses those stacks.
  std::thread other([&] {
    StackCache cache(&allocator);
    std::set<char*> bases;
    for (int i = 0; i < 8; ++i) bases.insert(cache.Get().base);
    EXPECT_EQ(bases.size(), 8u);
    EXPECT_EQ(allocator.mmapped_count(), 8u);  // nothing new was mapped
    EXPECT_EQ(allocator.pooled_count(), 0u);
    for (char* base : bases) {
      for (const Stack& s : stacks) {
        if (s.base == base) cache.Put(s);
      }
    }
  });
  other.join();
  EXPECT_EQ(allocator.pooled_count(), 8u);
}

// A thread cache that runs dry creates a batch in one lock round (TryCreateBatch):
// neighbouring slab slots, guarded by markers where the kernel has them, registered for
// the dump, none resident until used; a batch stops at the end of the current slab;
// released slots are handed out first, one run of neighbours at a time; threads that
// create batches at once get distinct stacks.
TEST(StackAllocatorTest, CreatesBatchesOfSlabStacks) {
  for (const bool markers : {false, true}) {
    if (markers && !KernelHasGuardMarkers()) continue;
    SCOPED_TRACE(markers ? "guard markers" : "unguarded slab stacks");
    StackAllocatorOptions options = SmallOptions();
    options.guard_page = markers;
    options.guard_regions = markers;
    options.release_delay_ms = 0;
    StackAllocator allocator(options);
    const std::size_t slot = options.stack_size + static_cast<std::size_t>(getpagesize());
    std::vector<Stack> batch;
    std::string why;
    ASSERT_EQ(allocator.TryCreateBatch(&batch, 4, &why), 4u) << why;
    std::set<char*> bases;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ(batch[i].origin, Stack::Origin::kSlab);
      EXPECT_EQ(batch[i].guarded, markers);
      EXPECT_EQ(batch[i].size, options.stack_size);
      if (i > 0) {
        EXPECT_EQ(batch[i].base, batch[i - 1].base + slot);
      }
      EXPECT_EQ(ResidentPages(batch[i].base, batch[i].size), 0u);
      EXPECT_EQ(StackLiveness(batch[i]).load(), kStackVacant);
      bases.insert(batch[i].base);
    }
    std::size_t registered = 0;
    ForEachRegisteredStack([&](const Stack& stack) {
      if (bases.count(stack.base) != 0) {
        ++registered;
        EXPECT_EQ(stack.guarded, markers);
      }
    });
    EXPECT_EQ(registered, 4u);
    std::memset(batch[2].base, 0xab, batch[2].size);
    if (markers) {
      EXPECT_DEATH(*reinterpret_cast<volatile char*>(batch[2].base - 1) = 1, "");
    } else {
      EXPECT_TRUE(StackCanaryIntact(batch[2]));
    }
    // The first slab holds kSlabBytes / slot slots (16 MiB of 68 KiB slots: 240); a
    // batch asking for more gets the rest of it, the next one starts a new slab.
    const std::size_t per_slab = (16u << 20) / slot;
    ASSERT_EQ(allocator.TryCreateBatch(&batch, 1000, &why), per_slab - 4);
    ASSERT_EQ(allocator.TryCreateBatch(&batch, 3, &why), 3u);
    EXPECT_EQ(allocator.slab_count(), per_slab + 3);
    // Two neighbours and a loner released: the next batch takes them first (the last
    // released run's stacks from its top down), then carves.
    const std::set<char*> given{batch[10].base, batch[11].base, batch[20].base};
    allocator.Destroy(batch[10]);
    allocator.Destroy(batch[11]);
    allocator.Destroy(batch[20]);
    EXPECT_EQ(allocator.released_count(), 3u);
    std::vector<Stack> again;
    ASSERT_EQ(allocator.TryCreateBatch(&again, 4, &why), 4u);
    EXPECT_EQ(std::set<char*>({again[0].base, again[1].base, again[2].base}), given);
    EXPECT_EQ(given.count(again[3].base), 0u);
    EXPECT_EQ(ResidentPages(again[0].base, again[0].size), 0u);
    EXPECT_EQ(allocator.slab_count(), per_slab + 4);
    // Batches made by several threads at once are distinct stacks.
    std::vector<std::vector<Stack>> made(4);
    std::vector<std::thread> threads;
    for (auto& mine : made) {
      threads.emplace_back([&allocator, &mine] {
        std::string error;
        for (int round = 0; round < 50; ++round) {
          ASSERT_GT(allocator.TryCreateBatch(&mine, 8, &error), 0u) << error;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    std::set<char*> all;
    std::size_t total = 0;
    for (const auto& mine : made) {
      for (const Stack& stack : mine) all.insert(stack.base);
      total += mine.size();
    }
    EXPECT_EQ(all.size(), total);
    EXPECT_GE(total, 200u);
    for (auto& mine : made) {
      for (const Stack& stack : mine) allocator.Destroy(stack);
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (given.count(batch[i].base) == 0) allocator.Destroy(batch[i]);
    }
    for (const Stack& stack : again) allocator.Destroy(stack);
  }
}

TEST(StackAllocatorTest, FallsBackToUnguardedSlabStacksPastTheMmapLimit) {
  StackAllocatorOptions options = SmallOptions();
  options.mmap_limit = 3;
  StackAllocator allocator(options);
  std::vector<Stack> stacks;
  for (int i = 0; i < 5; ++i) stacks.push_back(allocator.Create());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(stacks[i].origin, Stack::Origin::kMmapped);
    EXPECT_TRUE(stacks[i].guarded);
  }
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(stacks[i].origin, Stack::Origin::kSlab);
    EXPECT_FALSE(stacks[i].guarded);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(stacks[i].base) % getpagesize(), 0u);
    std::memset(stacks[i].base, 0xcd, stacks[i].size);
    EXPECT_TRUE(StackCanaryIntact(stacks[i]));
  }
  EXPECT_EQ(allocator.mmapped_count(), 3u);
  EXPECT_EQ(allocator.slab_count(), 2u);
  // Freeing a mapped stack makes room under the limit again.
  allocator.Destroy(stacks[0]);
  stacks[0] = allocator.Create();
  EXPECT_EQ(stacks[0].origin, Stack::Origin::kMmapped);
  for (const Stack& s : stacks) allocator.Destroy(s);
  EXPECT_EQ(allocator.mmapped_count(), 0u);
}

TEST(StackAllocatorTest, IdleStacksBeyondTheWatermarkGiveTheirMemoryBack) {
  for (const bool markers : {false, true}) {
    if (markers && !KernelHasGuardMarkers()) continue;
    SCOPED_TRACE(markers ? "guard markers" : "mmapped and slab stacks");
    StackAllocatorOptions options = SmallOptions();
    options.guard_regions = markers;
    options.mmap_limit = 5;  // without markers: 5 mmapped, 7 in slabs
    options.pool_idle_max = 2;
    options.release_delay_ms = 0;  // at once
    StackAllocator allocator(options);
    std::vector<Stack> stacks;
    for (int i = 0; i < 12; ++i) {
      stacks.push_back(allocator.Create());
      std::memset(stacks.back().base, 0xab, stacks.back().size);  // all resident
    }
    const Stack kept_newest = stacks.back();
    allocator.GiveBatch(&stacks);
    EXPECT_EQ(allocator.pooled_count(), 2u);
    std::vector<Stack> kept;
    ASSERT_TRUE(allocator.TakeBatch(&kept));
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept.back().base, kept_newest.base);  // the newest stay
    EXPECT_EQ(ResidentPages(kept.back().base, kept.back().size),
              kept.back().size / getpagesize());
    if (markers) {
      EXPECT_EQ(allocator.released_count(), 10u);
      EXPECT_EQ(allocator.slab_count(), 12u);
    } else {
      EXPECT_EQ(allocator.mmapped_count(), 0u);  // the five mmapped were unmapped
      EXPECT_EQ(allocator.released_count(), 5u);  // five of the slab ones released
    }
    // A guarded stack is preferred: under the mmap limit again, new mmapped ones come
    // first. Then the released slab stacks, holding no memory until touched.
    for (std::size_t i = 0; i < (markers ? 0 : 5); ++i) {
      kept.push_back(allocator.Create());
      EXPECT_EQ(kept.back().origin, Stack::Origin::kMmapped);
    }
    for (std::size_t i = 0; i < allocator.released_count(); ++i) {
      Stack stack = allocator.Create();
      EXPECT_EQ(stack.origin, Stack::Origin::kSlab);
      EXPECT_EQ(ResidentPages(stack.base, stack.size), 0u);
      kept.push_back(stack);
    }
    for (const Stack& s : kept) allocator.Destroy(s);
  }
}

// Stacks beyond pool_idle_max are released by the release thread, and only once they
// sat idle a whole delay, also when they arrive between two of its rounds. The "not
// before" half is checked speed-independently: every look that ends (its clock read
// after the counts) less than the delay after a give began must see nothing of that
// give released; a slow machine only makes fewer looks qualify.
TEST(StackAllocatorTest, TheReleaseThreadWaitsOutTheDelay) {
  StackAllocatorOptions options = SmallOptions();
  options.guard_page = false;  // slab stacks only
  options.pool_idle_max = 1;
  options.release_delay_ms = 300;
  const auto delay = std::chrono::milliseconds(options.release_delay_ms);
  StackAllocator allocator(options);
  // Gives nine stacks, checks that none goes early, then waits for the eight beyond
  // pool_idle_max to go.
  auto give_nine_and_watch = [&](std::size_t released_before) {
    std::vector<Stack> stacks;
    for (int i = 0; i < 9; ++i) stacks.push_back(allocator.Create());
    const std::size_t pooled_before = allocator.pooled_count();
    const auto given = std::chrono::steady_clock::now();
    allocator.GiveBatch(&stacks);
    int early_looks = 0;
    for (;;) {
      const std::size_t released = allocator.released_count();
      const std::size_t pooled = allocator.pooled_count();
      if (std::chrono::steady_clock::now() >= given + delay) break;
      ++early_looks;
      ASSERT_EQ(released, released_before)
          << "a stack was released " << early_looks << " looks after the give, before "
          << "it sat out the " << options.release_delay_ms << " ms delay";
      ASSERT_EQ(pooled, pooled_before + 9);  // nor did the giver release any
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    RecordProperty("early_looks", early_looks);
    // Then the thread releases them (a deadline in seconds, not a bound). A round takes
    // the stacks out of the pool first and counts them released after their madvise(),
    // so both counts are waited for: the pool can read 1 while the count still lags.
    const std::size_t released_after = released_before + pooled_before + 8;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((allocator.pooled_count() > 1 || allocator.released_count() < released_after) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(allocator.pooled_count(), 1u);
    EXPECT_EQ(allocator.released_count(), released_after);
  };
  // Into an empty pool: the thread registers now and comes back after a delay.
  give_nine_and_watch(0);
  if (HasFatalFailure()) return;
  // Between two rounds of the running thread (about a third of a delay after the round
  // that released the first ones): the next round, sooner than a delay away, must leave
  // them, since they did not sit through a whole interval.
  std::this_thread::sleep_for(delay / 3);
  give_nine_and_watch(8);
}

TEST(StackAllocatorTest, StackClasses) {
  const std::size_t default_size = StackAllocator::Default(0).stack_size();
  EXPECT_EQ(StackClassFor(0), 0);
  EXPECT_EQ(StackClassFor(default_size), 0);
  EXPECT_EQ(StackClassFor(1), 1);
  EXPECT_EQ(StackClassSize(1), 16u * 1024);
  EXPECT_EQ(StackClassSize(StackClassFor(16 * 1024 + 1)), 32u * 1024);
  EXPECT_EQ(StackClassSize(StackClassFor(kMaxRequestedStackSize)), kMaxRequestedStackSize);
  EXPECT_EQ(ValidateRequestedStackSize(kMaxRequestedStackSize), "");
  const std::string error = ValidateRequestedStackSize(kMaxRequestedStackSize + 1);
  EXPECT_NE(error.find("Fiber::Attributes::stack_size=1073741825"), std::string::npos)
      << error;
  EXPECT_NE(error.find("[1, 1073741824]"), std::string::npos) << error;
  // Each class has its own allocator and per-thread cache.
  StackCache& small = StackCache::ForThisThread(StackClassFor(20000));
  EXPECT_EQ(small.allocator()->stack_size(), 32u * 1024);
  Stack stack = small.Get();
  EXPECT_EQ(stack.size, 32u * 1024);
  EXPECT_EQ(&StackCache::ForStack(stack), &small);
  small.Put(stack);
  EXPECT_EQ(&StackCache::ForStack(StackCache::ForThisThread().Get()),
            &StackCache::ForThisThread());
}

TEST(StackAllocatorTest, AutomaticMmapLimitLeavesHalfOfTheMapCount) {
  EXPECT_EQ(MmapLimitFor(65530, /*guard_page=*/true), 16382u);
  EXPECT_EQ(MmapLimitFor(65530, /*guard_page=*/false), 32765u);
  EXPECT_EQ(MmapLimitFor(1, true), 1u);
  StackAllocatorOptions options = SmallOptions();
  options.mmap_limit = 0;
  StackAllocator allocator(options);
  EXPECT_GT(allocator.mmap_limit(), 0u);
}

TEST(StackAllocatorTest, ValidationNamesTheFlagAndTheRange) {
  StackAllocatorOptions options = SmallOptions();
  options.stack_size = 4096 * 3 + 1;
  std::string error = ValidateStackAllocatorOptions(options);
  EXPECT_NE(error.find("--fiber_stack_size=12289"), std::string::npos) << error;
  EXPECT_NE(error.find("multiple of the page size"), std::string::npos) << error;
  options.stack_size = 8192;  // below the minimum
  error = ValidateStackAllocatorOptions(options);
  EXPECT_NE(error.find("[16384, 1073741824]"), std::string::npos) << error;
  options.stack_size = std::size_t{2} << 30;
  EXPECT_NE(ValidateStackAllocatorOptions(options), "");
  options = SmallOptions();
  options.mmap_limit = (std::size_t{1} << 32) + 1;
  error = ValidateStackAllocatorOptions(options);
  EXPECT_NE(error.find("--fiber_stack_mmap_limit="), std::string::npos) << error;
  options = SmallOptions();
  options.thread_cache_size = 1;
  error = ValidateStackAllocatorOptions(options);
  EXPECT_NE(error.find("--fiber_stack_thread_cache_size=1 is invalid"), std::string::npos)
      << error;
  EXPECT_NE(error.find("[2, 65536]"), std::string::npos) << error;
  options = SmallOptions();
  options.pool_idle_max = (std::size_t{1} << 32) + 1;
  error = ValidateStackAllocatorOptions(options);
  EXPECT_NE(error.find("--fiber_stack_pool_idle_max=4294967297"), std::string::npos) << error;
  options = SmallOptions();
  options.release_delay_ms = 3600001;
  error = ValidateStackAllocatorOptions(options);
  EXPECT_NE(error.find("--fiber_release_delay_ms=3600001"), std::string::npos) << error;
  EXPECT_NE(error.find("[0, 3600000]"), std::string::npos) << error;
  EXPECT_EQ(ValidateStackAllocatorOptions(SmallOptions()), "");
}

TEST(StackAllocatorTest, FlagsFeedTheDefaultOptions) {
  StackAllocatorOptions options = StackAllocatorOptionsFromFlags();
  EXPECT_EQ(options.stack_size, 128u * 1024);
  EXPECT_TRUE(options.guard_page);
  EXPECT_EQ(options.mmap_limit, 0u);
  EXPECT_TRUE(options.guard_regions);
  EXPECT_EQ(options.thread_cache_size, 32u);
  EXPECT_EQ(options.pool_idle_max, 256u);
  EXPECT_EQ(options.release_delay_ms, 1000u);
}

TEST(StackAllocatorDeathTest, InvalidOptionsAreFatal) {
  StackAllocatorOptions options = SmallOptions();
  options.stack_size = 1000;
  EXPECT_DEATH(StackAllocator allocator(options), "--fiber_stack_size=1000");
}

}  // namespace
}  // namespace spindle::internal
