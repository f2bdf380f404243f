// Copyright 2026 The Spindle Authors.

#include "fiber/internal/stack_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

StackAllocatorOptions SmallOptions() {
  StackAllocatorOptions options;
  options.stack_size = 64 * 1024;
  options.guard_page = true;
  options.mmap_limit = 1000;
  options.batch_size = 4;
  return options;
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

TEST(StackAllocatorTest, NoGuardPageWhenDisabled) {
  StackAllocatorOptions options = SmallOptions();
  options.guard_page = false;
  StackAllocator allocator(options);
  Stack stack = allocator.Create();
  EXPECT_FALSE(stack.guarded);
  EXPECT_FALSE(IsProtNone(stack.base - 1));
  allocator.Destroy(stack);
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

TEST(StackAllocatorTest, FallsBackToHeapStacksPastTheMmapLimit) {
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
    EXPECT_EQ(stacks[i].origin, Stack::Origin::kHeap);
    EXPECT_FALSE(stacks[i].guarded);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(stacks[i].base) % getpagesize(), 0u);
    std::memset(stacks[i].base, 0xcd, stacks[i].size);
  }
  EXPECT_EQ(allocator.mmapped_count(), 3u);
  EXPECT_EQ(allocator.heap_count(), 2u);
  // Freeing a mapped stack makes room under the limit again.
  allocator.Destroy(stacks[0]);
  stacks[0] = allocator.Create();
  EXPECT_EQ(stacks[0].origin, Stack::Origin::kMmapped);
  for (const Stack& s : stacks) allocator.Destroy(s);
  EXPECT_EQ(allocator.mmapped_count(), 0u);
  EXPECT_EQ(allocator.heap_count(), 0u);
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
  EXPECT_EQ(ValidateStackAllocatorOptions(SmallOptions()), "");
}

TEST(StackAllocatorTest, FlagsFeedTheDefaultOptions) {
  StackAllocatorOptions options = StackAllocatorOptionsFromFlags();
  EXPECT_EQ(options.stack_size, 128u * 1024);
  EXPECT_TRUE(options.guard_page);
  EXPECT_EQ(options.mmap_limit, 0u);
}

TEST(StackAllocatorDeathTest, InvalidOptionsAreFatal) {
  StackAllocatorOptions options = SmallOptions();
  options.stack_size = 1000;
  EXPECT_DEATH(StackAllocator allocator(options), "--fiber_stack_size=1000");
}

}  // namespace
}  // namespace spindle::internal
