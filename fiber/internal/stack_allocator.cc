// Copyright 2026 The Spindle Authors.
//
// Fiber stacks and their budget of memory mappings.
//
// Each guarded stack costs two VMAs (the PROT_NONE guard page splits the mapping), and
// Linux refuses new mappings past vm.max_map_count (65530 by default). tRPC's FAQ
// documents the resulting ~30k-fiber ceiling and brpc #107 the mprotect ENOMEM it
// causes. So the allocator counts its mappings and, past --fiber_stack_mmap_limit, takes
// stacks from the heap instead: no guard page there (a warning says so once), but no
// new VMA either, and the process keeps running. The pool never gives memory back to
// the system while the allocator lives; peaks of fibers are expected to recur.
//
// Layout of an mmapped stack (addresses grow upwards):
//   [guard page, PROT_NONE, only if guarded][usable stack ... control block at top]
//                                            ^ Stack::base           Stack::top() ^

#include "fiber/internal/stack_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <new>

#include "fiber/internal/sanitizers.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_uint64(fiber_stack_size, 128 * 1024,
              "Bytes of stack for each fiber (default 131072 = 128 KiB), including the "
              "fiber's control block at the top; a multiple of the page size in "
              "[16 KiB, 1 GiB]. The guard page, if enabled, comes on top of this. "
              "Raise it for deep recursion; lower it to fit more parked fibers in "
              "memory.");
DEFINE_bool(fiber_stack_enable_guard_page, true,
            "Put an inaccessible page below each fiber stack (default true) so that a "
            "stack overflow stops the process with 'fiber stack overflow' instead of "
            "silently corrupting memory. Costs a second memory mapping per stack "
            "(see --fiber_stack_mmap_limit).");
DEFINE_uint64(fiber_stack_mmap_limit, 0,
              "Most fiber stacks that may be separate memory mappings at once (default "
              "0 = automatic: half of vm.max_map_count divided by the mappings per "
              "stack, 2 with a guard page). Past it, stacks come from the heap without "
              "a guard page, so the process never runs out of mappings. Range "
              "[0, 2^32].");

namespace spindle::internal {
namespace {

constexpr std::size_t kMinStackSize = 16 * 1024;
constexpr std::size_t kMaxStackSize = std::size_t{1} << 30;
constexpr std::size_t kMaxMmapLimit = std::size_t{1} << 32;
constexpr std::size_t kDefaultMaxMapCount = 65530;

std::size_t PageSize() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t ReadMaxMapCount() {
  std::ifstream in("/proc/sys/vm/max_map_count");
  std::size_t value = 0;
  if (in >> value && value > 0) return value;
  return kDefaultMaxMapCount;
}

// Every stack created and not yet destroyed, by base address, for the fiber dump.
// Stacks are created and destroyed rarely (they are recycled through caches), so
// mutexes are enough. Two of them, because a worker may create a stack while it holds
// a fiber's scheduler lock (Halt() instantiates the next fiber before its own lock is
// released) and a dump waits for scheduler locks: the dump holds `walk_mutex_`, which
// only Remove() (a stack being freed, never under a scheduler lock) also takes, and
// holds `list_mutex_`, which Add() takes, only to copy the list.
class StackRegistry {
 public:
  void Add(const Stack& stack) {
    std::lock_guard<std::mutex> lock(list_mutex_);
    stacks_[stack.base] = stack;
  }
  void Remove(const Stack& stack) {
    std::lock_guard<std::mutex> walk(walk_mutex_);
    std::lock_guard<std::mutex> lock(list_mutex_);
    stacks_.erase(stack.base);
  }
  void ForEach(const std::function<void(const Stack&)>& fn) {
    std::lock_guard<std::mutex> walk(walk_mutex_);
    std::vector<Stack> stacks;
    {
      std::lock_guard<std::mutex> lock(list_mutex_);
      stacks.reserve(stacks_.size());
      for (const auto& [base, stack] : stacks_) stacks.push_back(stack);
    }
    for (const Stack& stack : stacks) fn(stack);
  }

 private:
  std::mutex walk_mutex_;
  std::mutex list_mutex_;
  std::map<char*, Stack> stacks_;
};

StackRegistry& Registry() {
  static auto* const registry = new StackRegistry;  // never destroyed
  return *registry;
}

// Constructs the header of a new stack and registers it.
void RegisterStack(const Stack& stack) {
  new (stack.top() - kStackHeaderSize) std::atomic<std::uint32_t>(kStackVacant);
  Registry().Add(stack);
}

}  // namespace

void MarkStackEntityGone(const Stack& stack) {
  std::atomic<std::uint32_t>& word = StackLiveness(stack);
  for (;;) {
    std::uint32_t expected = kStackLive;
    // acquire: pairs with UnpinStackEntity()'s release store, so a dump's reads of the
    // entity happen before the caller destroys it.
    if (word.compare_exchange_weak(expected, kStackVacant, std::memory_order_acquire,
                                   std::memory_order_relaxed)) {
      return;
    }
    CHECK(expected == kStackPinned || expected == kStackLive)
        << "fiber stack liveness word corrupted: " << expected;
  }
}

void ForEachRegisteredStack(const std::function<void(const Stack&)>& fn) {
  Registry().ForEach(fn);
}

std::string ValidateStackAllocatorOptions(const StackAllocatorOptions& options) {
  if (options.stack_size < kMinStackSize || options.stack_size > kMaxStackSize ||
      options.stack_size % PageSize() != 0) {
    return "--fiber_stack_size=" + std::to_string(options.stack_size) +
           " is invalid: expected a multiple of the page size (" +
           std::to_string(PageSize()) + " bytes) in [" + std::to_string(kMinStackSize) +
           ", " + std::to_string(kMaxStackSize) + "]";
  }
  if (options.mmap_limit > kMaxMmapLimit) {
    return "--fiber_stack_mmap_limit=" + std::to_string(options.mmap_limit) +
           " is invalid: expected a count in [0, " + std::to_string(kMaxMmapLimit) +
           "] (0 = automatic)";
  }
  if (options.batch_size == 0) {
    return "stack batch size 0 is invalid: expected at least 1";
  }
  return "";
}

StackAllocatorOptions StackAllocatorOptionsFromFlags() {
  StackAllocatorOptions options;
  options.stack_size = FLAGS_fiber_stack_size;
  options.guard_page = FLAGS_fiber_stack_enable_guard_page;
  options.mmap_limit = FLAGS_fiber_stack_mmap_limit;
  return options;
}

std::size_t MmapLimitFor(std::size_t max_map_count, bool guard_page) {
  const std::size_t per_stack = guard_page ? 2 : 1;
  return std::max<std::size_t>(1, max_map_count / 2 / per_stack);
}

StackAllocator::StackAllocator(const StackAllocatorOptions& options)
    : options_(options),
      page_size_(PageSize()),
      mmap_limit_(options.mmap_limit != 0
                      ? options.mmap_limit
                      : MmapLimitFor(ReadMaxMapCount(), options.guard_page)),
      pool_(options.batch_size) {
  const std::string error = ValidateStackAllocatorOptions(options);
  CHECK(error.empty()) << error;
}

StackAllocator::~StackAllocator() {
  for (const Stack& stack : pool_.TakeAll()) Destroy(stack);
}

StackAllocator& StackAllocator::Default() {
  static StackAllocator* const instance = [] {
    const StackAllocatorOptions options = StackAllocatorOptionsFromFlags();
    const std::string error = ValidateStackAllocatorOptions(options);
    if (!error.empty()) LOG(FATAL) << error;
    return new StackAllocator(options);
  }();
  return *instance;
}

Stack StackAllocator::Create() {
  // relaxed: a soft limit, see the member comment.
  if (mmapped_.load(std::memory_order_relaxed) < mmap_limit_) {
    Stack stack = CreateMmapped();
    if (stack) return stack;
  } else {
    LOG_FIRST_N(WARNING, 1)
        << "Fiber stacks reached --fiber_stack_mmap_limit=" << mmap_limit_
        << " mappings; further stacks come from the heap without a guard page. Raise "
           "the flag (and vm.max_map_count) if the process needs more fibers at once.";
  }
  return CreateFromHeap();
}

Stack StackAllocator::CreateMmapped() {
  const std::size_t guard = options_.guard_page ? page_size_ : 0;
  const std::size_t length = options_.stack_size + guard;
  void* mapping = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    LOG_FIRST_N(WARNING, 1) << "mmap of a " << length << "-byte fiber stack failed ("
                            << std::strerror(errno)
                            << "); falling back to heap stacks without a guard page.";
    return {};
  }
  if (guard != 0 && mprotect(mapping, guard, PROT_NONE) != 0) {
    LOG_FIRST_N(WARNING, 1) << "mprotect of a fiber stack guard page failed ("
                            << std::strerror(errno)
                            << ", likely vm.max_map_count); falling back to heap stacks.";
    munmap(mapping, length);
    return {};
  }
  mmapped_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see member comment
  Stack stack;
  stack.base = static_cast<char*>(mapping) + guard;
  stack.size = options_.stack_size;
  stack.origin = Stack::Origin::kMmapped;
  stack.guarded = guard != 0;
  RegisterStack(stack);
  return stack;
}

Stack StackAllocator::CreateFromHeap() {
  void* memory = std::aligned_alloc(page_size_, options_.stack_size);
  if (memory == nullptr) {
    LOG(FATAL) << "Out of memory allocating a " << options_.stack_size
               << "-byte fiber stack (--fiber_stack_size).";
  }
  heap_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see member comment
  Stack stack;
  stack.base = static_cast<char*>(memory);
  stack.size = options_.stack_size;
  stack.origin = Stack::Origin::kHeap;
  stack.guarded = false;
  RegisterStack(stack);
  return stack;
}

void StackAllocator::Destroy(const Stack& stack) {
  Registry().Remove(stack);
  UnpoisonStack(stack.base, stack.size);
  if (stack.origin == Stack::Origin::kHeap) {
    std::free(stack.base);
    heap_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see member comment
    return;
  }
  const std::size_t guard = stack.guarded ? page_size_ : 0;
  PCHECK(munmap(stack.base - guard, stack.size + guard) == 0);
  mmapped_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see member comment
}

bool StackAllocator::TakeBatch(std::vector<Stack>* out) { return pool_.TakeBatch(out); }

void StackAllocator::GiveBatch(std::vector<Stack>* stacks) { pool_.GiveBatch(stacks); }

std::size_t StackAllocator::mmapped_count() const {
  return mmapped_.load(std::memory_order_relaxed);  // relaxed: statistic
}

std::size_t StackAllocator::heap_count() const {
  return heap_.load(std::memory_order_relaxed);  // relaxed: statistic
}

std::size_t StackAllocator::pooled_count() const { return pool_.size(); }

StackCache::~StackCache() {
  if (!cached_.empty()) allocator_->GiveBatch(&cached_);
}

StackCache& StackCache::ForThisThread() {
  thread_local StackCache cache(&StackAllocator::Default());
  return cache;
}

Stack StackCache::Get() {
  if (cached_.empty() && !allocator_->TakeBatch(&cached_)) {
    return allocator_->Create();
  }
  Stack stack = cached_.back();
  cached_.pop_back();
  UnpoisonStack(stack.base, stack.size);
  return stack;
}

void StackCache::Put(const Stack& stack) {
  // The header stays readable: the fiber dump looks at cached stacks' liveness words.
  PoisonStack(stack.base, stack.size - kStackHeaderSize);
  cached_.push_back(stack);
  allocator_->pool().SpillIfFull(&cached_);
}

}  // namespace spindle::internal
