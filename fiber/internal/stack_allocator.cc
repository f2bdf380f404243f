// Copyright 2026 The Spindle Authors.
//
// Fiber stacks, their budget of memory mappings, and giving their memory back.
//
// Mappings. A PROT_NONE guard page splits a mapping, so each such stack costs two VMAs,
// and Linux refuses new mappings past vm.max_map_count (65530 by default): tRPC's FAQ
// documents the resulting ~30k-fiber ceiling and brpc #107 the mprotect ENOMEM it causes.
// Three layouts, chosen per stack by Create():
//   1. Guard markers (Linux 6.13+, MADV_GUARD_INSTALL): stacks are slots of large slabs
//      and each slot's guard page is a page-table marker, not a VMA. Every stack is
//      guarded and the map count does not grow with the number of stacks.
//   2. Otherwise, an mmap of its own per stack with a PROT_NONE guard, while fewer than
//      --fiber_stack_mmap_limit are live.
//   3. Past the limit (or with guard pages off): slab slots with no guard. The page
//      below such a stack is a pad that nothing touches; its top is the canary that the
//      switch path checks (StackCanaryIntact(), fiber_entity.cc), with the stack pointer,
//      so an overflow is reported as "fiber stack overflow" with the fiber's id instead
//      of corrupting memory silently. Best effort, not a guard: see kStackCanaryBytes.
// Before slabs, layout 3 took stacks from aligned_alloc(), whose chunk header sits at the
// stack's bottom: a second resident page for every such stack.
//
// Slab layout (addresses grow upwards), one VMA for all its slots:
//   [guard or pad page][stack ... control block][guard or pad page][stack ...] ...
//                      ^ Stack::base      top() ^
//
// Giving memory back. Returned stacks go to the thread's cache (at most two batches),
// then to the global pool. The pool keeps --fiber_stack_pool_idle_max stacks with their
// memory; the others are released once they have sat idle for
// --fiber_release_delay_ms: the release thread (idle_release.h) looks every delay and
// releases what stayed in the pool the whole time (its low-water mark since the last look).
// Released mmapped stacks are unmapped; released slab stacks get MADV_DONTNEED (RSS
// falls, the slot and its guard marker stay) and are reused first by Create().
// MADV_DONTNEED rather than MADV_FREE: the latter leaves RSS as it was until the system
// is short of memory, so RSS would not show the release.

#include "fiber/internal/stack_allocator.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "fiber/internal/idle_release.h"
#include "fiber/internal/sanitizers.h"
#include "fiber/internal/stack_registry.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_uint64(fiber_stack_size, 128 * 1024,
              "Bytes of stack for each fiber (default 131072 = 128 KiB), including the "
              "fiber's control block at the top; a multiple of the page size in "
              "[16 KiB, 1 GiB]. The guard page, if enabled, comes on top of this. "
              "Raise it for deep recursion; lower it to fit more parked fibers in "
              "memory. Like every --fiber_stack_* flag, read once per process, when the "
              "first fiber needs a stack: a later StartRuntime() with another value fails "
              "with a message naming both.");
DEFINE_bool(fiber_stack_enable_guard_page, true,
            "Put an inaccessible page below each fiber stack (default true) so that a "
            "stack overflow stops the process with 'fiber stack overflow' instead of "
            "silently corrupting memory. Costs a second memory mapping per stack "
            "(see --fiber_stack_mmap_limit).");
DEFINE_uint64(fiber_stack_mmap_limit, 0,
              "Most fiber stacks that may be separate memory mappings with a PROT_NONE "
              "guard page at once (default 0 = automatic: half of vm.max_map_count "
              "divided by the 2 mappings per stack). Past it, stacks come from shared "
              "slabs without a guard page, protected by a canary checked at every "
              "switch. Not used where --fiber_stack_guard_regions applies. Range "
              "[0, 2^32].");
DEFINE_bool(fiber_stack_guard_regions, true,
            "Make guard pages page-table markers (MADV_GUARD_INSTALL) in shared slabs "
            "where the kernel has them (Linux 6.13+), so every stack is guarded without "
            "a memory mapping of its own (default true). False, or an older kernel: "
            "PROT_NONE guard pages up to --fiber_stack_mmap_limit.");
DEFINE_uint64(fiber_stack_thread_cache_size, 32,
              "Most idle fiber stacks a thread keeps for its next fibers (default 32); "
              "it trades half of that at a time with the global pool. Range [2, 65536].");
DEFINE_uint64(fiber_stack_pool_idle_max, 256,
              "Idle fiber stacks the global pool keeps with their memory (default 256). "
              "Beyond it, idle stacks give their memory back to the system after "
              "--fiber_release_delay_ms, so RSS falls after a burst of fibers. "
              "Range [0, 2^32].");
namespace spindle::internal {
namespace {

constexpr std::size_t kMinStackSize = 16 * 1024;
constexpr std::size_t kMaxStackSize = std::size_t{1} << 30;
constexpr std::size_t kMaxMmapLimit = std::size_t{1} << 32;
constexpr std::size_t kDefaultMaxMapCount = 65530;
constexpr std::size_t kMaxThreadCache = 65536;
constexpr std::size_t kMaxPoolIdle = std::size_t{1} << 32;
// A release round that gave back at least this many stacks trims malloc afterwards.
constexpr std::size_t kTrimAfterReleasing = 4096;
// Idle stacks are released this many at a time (one sorted list, its runs of neighbours
// one madvise() each): 96 KiB of list, below glibc's mmap threshold.
constexpr std::size_t kReleaseChunk = 4096;
// A slab is about this much address space (at least one slot, at most 256).
constexpr std::size_t kSlabBytes = 16 << 20;
// MADV_GUARD_INSTALL, which Debian 12's headers predate.
constexpr int kMadvGuardInstall = 102;

std::size_t PageSize() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t ReadMaxMapCount() {
  std::ifstream in("/proc/sys/vm/max_map_count");
  std::size_t value = 0;
  return in >> value && value > 0 ? value : kDefaultMaxMapCount;
}

void* MapReserved(std::size_t length) {
  void* mapping = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  return mapping == MAP_FAILED ? nullptr : mapping;
}

// Constructs a new mmapped stack's header: kStackVacant (0, what a fresh or released
// slab stack reads without one).
void InitStackHeader(const Stack& stack) {
  new (stack.top() - kStackHeaderSize) std::atomic<std::uint32_t>(kStackVacant);
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
  if (options.thread_cache_size < 2 || options.thread_cache_size > kMaxThreadCache) {
    return "--fiber_stack_thread_cache_size=" + std::to_string(options.thread_cache_size) +
           " is invalid: expected a count in [2, " + std::to_string(kMaxThreadCache) + "]";
  }
  if (options.pool_idle_max > kMaxPoolIdle) {
    return "--fiber_stack_pool_idle_max=" + std::to_string(options.pool_idle_max) +
           " is invalid: expected a count in [0, " + std::to_string(kMaxPoolIdle) + "]";
  }
  return ValidateReleaseDelay(options.release_delay_ms);
}

StackAllocatorOptions StackAllocatorOptionsFromFlags(std::size_t stack_size) {
  StackAllocatorOptions options;
  options.stack_size = stack_size != 0 ? stack_size : FLAGS_fiber_stack_size;
  options.guard_page = FLAGS_fiber_stack_enable_guard_page;
  options.guard_regions = FLAGS_fiber_stack_guard_regions;
  options.mmap_limit = FLAGS_fiber_stack_mmap_limit;
  options.thread_cache_size = FLAGS_fiber_stack_thread_cache_size;
  options.pool_idle_max = FLAGS_fiber_stack_pool_idle_max;
  options.release_delay_ms = FLAGS_fiber_release_delay_ms;
  return options;
}

std::size_t MmapLimitFor(std::size_t max_map_count, bool guard_page) {
  const std::size_t per_stack = guard_page ? 2 : 1;
  return std::max<std::size_t>(1, max_map_count / 2 / per_stack);
}

bool KernelHasGuardMarkers() {
  static const bool has = [] {
    const std::size_t page = PageSize();
    void* probe = MapReserved(2 * page);
    if (probe == nullptr) return false;
    const bool ok = madvise(probe, page, kMadvGuardInstall) == 0;
    munmap(probe, 2 * page);
    return ok;
  }();
  return has;
}

StackAllocator::StackAllocator(const StackAllocatorOptions& options)
    : options_(options),
      page_size_(PageSize()),
      slot_size_(options.stack_size + PageSize()),
      mmap_limit_(options.mmap_limit != 0
                      ? options.mmap_limit
                      : MmapLimitFor(ReadMaxMapCount(), options.guard_page)),
      guard_markers_(options.guard_page && options.guard_regions && KernelHasGuardMarkers()),
      pool_(options.thread_cache_size / 2) {
  const std::string error = ValidateStackAllocatorOptions(options);
  CHECK(error.empty()) << error;
}

StackAllocator::~StackAllocator() {
  UnregisterIdleRelease(this);
  for (const Stack& stack : pool_.TakeAll()) {
    if (stack.origin == Stack::Origin::kMmapped) Destroy(stack);
  }
  // Every slab stack is back (the allocator outlives the stacks it handed out): unmap
  // the slabs whole.
  OsMutexGuard lock(slab_lock_);
  for (const Slab& slab : slabs_) {
    UnregisterStacks(slab.begin + page_size_);
    UnpoisonStack(slab.begin, slab.slots * slot_size_);
    PCHECK(munmap(slab.begin, slab.slots * slot_size_) == 0);
  }
}

namespace {
// The process-wide allocators, one per stack class, each created on first use.
std::atomic<StackAllocator*>* DefaultAllocators() {
  static std::atomic<StackAllocator*> instances[kMaxStackClass + 1] = {};
  return instances;
}

}  // namespace

std::string CheckStackOptionsUnchanged(const StackAllocatorOptions& wanted) {
  for (std::uint8_t stack_class = 0; stack_class <= kMaxStackClass; ++stack_class) {
    // acquire: pairs with the release CAS in Default(); the allocator is fully built.
    const StackAllocator* built =
        DefaultAllocators()[stack_class].load(std::memory_order_acquire);
    if (built == nullptr) continue;
    const StackAllocatorOptions& was = built->options();
    // Only class 0 is built with --fiber_stack_size; the others have their own sizes.
    const struct {
      const char* flag;
      std::size_t was, now;
    } fields[] = {
        {"fiber_stack_size", stack_class == 0 ? was.stack_size : 0,
         stack_class == 0 ? wanted.stack_size : 0},
        {"fiber_stack_enable_guard_page", was.guard_page, wanted.guard_page},
        {"fiber_stack_guard_regions", was.guard_regions, wanted.guard_regions},
        {"fiber_stack_mmap_limit", was.mmap_limit, wanted.mmap_limit},
        {"fiber_stack_thread_cache_size", was.thread_cache_size, wanted.thread_cache_size},
        {"fiber_stack_pool_idle_max", was.pool_idle_max, wanted.pool_idle_max},
    };
    for (const auto& field : fields) {
      if (field.was == field.now) continue;
      return std::string("--") + field.flag + "=" + std::to_string(field.now) +
             " cannot take effect: this process's fiber stacks were set up with " +
             std::to_string(field.was) +
             " by an earlier StartRuntime(), and the --fiber_stack_* flags are read once "
             "per process; set them before the first StartRuntime() (or put them back)";
    }
  }
  return "";
}

StackAllocator& StackAllocator::Default(std::uint8_t stack_class) {
  std::atomic<StackAllocator*>* const instances = DefaultAllocators();
  CHECK_LE(stack_class, kMaxStackClass) << "no stack class " << int{stack_class};
  stack_class = std::min<std::uint8_t>(stack_class, kMaxStackClass);  // for -Wstringop-overflow
  // acquire: pairs with the release CAS below; the allocator is fully built.
  StackAllocator* instance = instances[stack_class].load(std::memory_order_acquire);
  if (instance != nullptr) return *instance;
  const StackAllocatorOptions options = StackAllocatorOptionsFromFlags(
      stack_class == 0 ? 0 : std::size_t{1} << (13 + stack_class));
  const std::string error = ValidateStackAllocatorOptions(options);
  if (!error.empty()) LOG(FATAL) << error;
  auto* created = new StackAllocator(options);  // never destroyed
  // acq_rel: publishes ours, or acquires the one another thread published first.
  if (!instances[stack_class].compare_exchange_strong(instance, created,
                                                      std::memory_order_acq_rel)) {
    delete created;
    return *instance;
  }
  return *created;
}

namespace {
// FailStackCreationForTesting(). relaxed: a test sets it while no fiber starts.
std::atomic<bool> g_fail_creation{false};
}  // namespace

void FailStackCreationForTesting(bool fail) {
  g_fail_creation.store(fail, std::memory_order_relaxed);
}

Stack StackAllocator::Create() {
  std::string why;
  const Stack stack = TryCreate(&why);
  if (!stack) LOG(FATAL) << why;
  return stack;
}

Stack StackAllocator::TryCreate(std::string* why) {
  if (g_fail_creation.load(std::memory_order_relaxed)) {
    *why = "no fiber stack could be mapped: stack creation is failed for testing "
           "(FailStackCreationForTesting)";
    return {};
  }
  if (!guard_markers_ && options_.guard_page) {
    // relaxed: a soft limit, see the member comment.
    if (mmapped_.load(std::memory_order_relaxed) < mmap_limit_) {
      Stack stack = CreateMmapped();
      if (stack) return stack;
    } else {
      WarnPastMmapLimit();
    }
  }
  OsMutexGuard lock(slab_lock_);
  if (!released_.empty()) {
    const Stack stack = SlabStackAt(TakeReleased());
    UnpoisonStack(stack.base, stack.size);
    return stack;
  }
  return CreateInSlab(why);
}

void StackAllocator::WarnPastMmapLimit() const {
  LOG_FIRST_N(WARNING, 1)
      << "Fiber stacks reached --fiber_stack_mmap_limit=" << mmap_limit_
      << " mappings; further stacks share slabs without a guard page (a canary "
         "checked at every switch detects most overflows). Raise the flag (and "
         "vm.max_map_count) if the process needs more guarded fibers at once.";
}

Stack StackAllocator::CreateMmapped() {
  const std::size_t guard = page_size_;
  const std::size_t length = options_.stack_size + guard;
  void* mapping = MapReserved(length);
  if (mapping == nullptr) {
    LOG_FIRST_N(WARNING, 1) << "mmap of a " << length << "-byte fiber stack failed ("
                            << std::strerror(errno)
                            << "); falling back to slab stacks without a guard page.";
    return {};
  }
  if (mprotect(mapping, guard, PROT_NONE) != 0) {
    LOG_FIRST_N(WARNING, 1) << "mprotect of a fiber stack guard page failed ("
                            << std::strerror(errno)
                            << ", likely vm.max_map_count); falling back to slab stacks "
                               "without a guard page.";
    munmap(mapping, length);
    return {};
  }
  mmapped_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see member comment
  Stack stack;
  stack.base = static_cast<char*>(mapping) + guard;
  stack.size = options_.stack_size;
  stack.origin = Stack::Origin::kMmapped;
  stack.guarded = true;
  InitStackHeader(stack);
  RegisterStacks(stack, 0, 1);
  return stack;
}

Stack StackAllocator::CreateInSlab(std::string* why) {
  std::size_t carved = 0;
  char* slot = CarveSlots(1, &carved, why);
  return slot == nullptr ? Stack{} : PrepareSlabSlot(slot);
}

std::size_t StackAllocator::TryCreateBatch(std::vector<Stack>* out, std::size_t want,
                                           std::string* why) {
  if (want == 0) return 0;
  const bool mmapped = !guard_markers_ && options_.guard_page;
  // relaxed: a soft limit, see the member comment.
  if (g_fail_creation.load(std::memory_order_relaxed) ||
      (mmapped && mmapped_.load(std::memory_order_relaxed) < mmap_limit_)) {
    // Failing for testing, or an mmapped stack (a mapping of its own): one at a time.
    const Stack stack = TryCreate(why);
    if (!stack) return 0;
    out->push_back(stack);
    return 1;
  }
  if (mmapped) WarnPastMmapLimit();
  const std::size_t size_before = out->size();
  char* first = nullptr;
  std::size_t carved = 0;
  {
    OsMutexGuard lock(slab_lock_);
    std::size_t reused = 0;
    for (; reused < want && !released_.empty(); ++reused) {
      out->push_back(SlabStackAt(TakeReleased()));
    }
    if (reused < want) first = CarveSlots(want - reused, &carved, why);
  }
  for (std::size_t i = 0; i < carved; ++i) out->push_back(PrepareSlabSlot(first + i * slot_size_));
  return out->size() - size_before;
}

char* StackAllocator::CarveSlots(std::size_t want, std::size_t* carved, std::string* why) {
  *carved = 0;
  if (slabs_.empty() || slab_carved_ == slabs_.back().slots) {
    const std::size_t slots = std::clamp<std::size_t>(kSlabBytes / slot_size_, 1, 256);
    void* mapping = MapReserved(slots * slot_size_);
    if (mapping == nullptr) {
      const int error = errno;
      *why = "out of address space or memory for fiber stacks: mmap of a " +
             std::to_string(slots * slot_size_) + "-byte slab of " +
             std::to_string(options_.stack_size) + "-byte stacks failed (" +
             std::strerror(error) +
             "); the limits that cause it: the address-space limit (ulimit -v, "
             "RLIMIT_AS), vm.max_map_count, a memory cgroup";
      return {};
    }
    slabs_.push_back(Slab{static_cast<char*>(mapping), slots});
    slab_carved_ = 0;
  }
  const Slab& slab = slabs_.back();
  char* first = slab.begin + slab_carved_ * slot_size_;
  *carved = std::min(want, slab.slots - slab_carved_);
  slab_carved_ += *carved;
  // relaxed: statistic.
  slab_stacks_.fetch_add(*carved, std::memory_order_relaxed);
  // Registered before their guard markers are installed (outside the lock): a slot's
  // header reads zero, kStackVacant, from the start, so a dump skips it.
  if (first == slab.begin) {
    RegisterStacks(SlabStackAt(slab.begin + page_size_), slot_size_, *carved);
  } else {
    GrowRegisteredStacks(slab.begin + page_size_, slab_carved_);
  }
  return first;
}

Stack StackAllocator::PrepareSlabSlot(char* slot) {
  if (guard_markers_) {
    // A marker only on the slot's first page; the kernel probed fine, so a failure here
    // is unexpected (ENOMEM for page tables): report it rather than run unguarded.
    PCHECK(madvise(slot, page_size_, kMadvGuardInstall) == 0)
        << "MADV_GUARD_INSTALL on a fiber stack's guard page";
  }
  // No header to build: the slab's fresh memory reads zero, kStackVacant (as a released
  // slot's does), and leaving it untouched keeps a stack that waits in a cache free of
  // memory until a fiber runs on it.
  return SlabStackAt(slot + page_size_);
}

Stack StackAllocator::SlabStackAt(char* base) const {
  Stack stack;
  stack.base = base;
  stack.size = options_.stack_size;
  stack.origin = Stack::Origin::kSlab;
  stack.guarded = guard_markers_;
  return stack;
}

void StackAllocator::Destroy(const Stack& stack) {
  if (stack.origin == Stack::Origin::kSlab) {
    std::vector<Stack> one{stack};
    Release(&one);
    return;
  }
  UnregisterStacks(stack.base);
  UnpoisonStack(stack.base, stack.size);
  PCHECK(munmap(stack.base - page_size_, stack.size + page_size_) == 0);
  mmapped_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see member comment
}

void StackAllocator::Release(std::vector<Stack>* stacks) {
  // Slab stacks next to each other in address order share one madvise() (each is a
  // TLB shoot-down on every CPU running this process). The guard markers stay across
  // MADV_DONTNEED; the pad pages were never touched, or held an overflow's garbage,
  // which the release also clears.
  std::vector<Stack> slab;
  for (const Stack& stack : *stacks) {
    if (stack.origin == Stack::Origin::kMmapped) {
      Destroy(stack);
    } else {
      slab.push_back(stack);
    }
  }
  stacks->clear();
  if (slab.empty()) return;
  std::sort(slab.begin(), slab.end(),
            [](const Stack& a, const Stack& b) { return a.base < b.base; });
  std::vector<ReleasedRun> runs;
  std::size_t first = 0;
  for (std::size_t i = 1; i <= slab.size(); ++i) {
    if (i < slab.size() && slab[i].base == slab[i - 1].top() + page_size_) continue;
    char* begin = slab[first].base - page_size_;
    char* end = slab[i - 1].top();
    // The header words read as zero afterwards: kStackVacant, as the dump expects.
    UnpoisonStack(begin, static_cast<std::size_t>(end - begin));
    PCHECK(madvise(begin, static_cast<std::size_t>(end - begin), MADV_DONTNEED) == 0);
    runs.push_back(ReleasedRun{slab[first].base, i - first});
    first = i;
  }
  for (const Stack& stack : slab) PoisonStack(stack.base, stack.size - kStackHeaderSize);
  released_count_.fetch_add(slab.size(), std::memory_order_relaxed);  // relaxed: statistic
  OsMutexGuard lock(slab_lock_);
  released_.insert(released_.end(), runs.begin(), runs.end());
}

char* StackAllocator::TakeReleased() {
  ReleasedRun& run = released_.back();
  char* const base = run.first_base + (run.count - 1) * slot_size_;
  if (--run.count == 0) released_.pop_back();
  return base;
}

bool StackAllocator::TakeBatch(std::vector<Stack>* out) { return pool_.TakeBatch(out); }

void StackAllocator::GiveBatch(std::vector<Stack>* stacks) { AfterGive(pool_.GiveBatch(stacks)); }

void StackAllocator::SpillIfFull(std::vector<Stack>* cache) {
  if (const std::size_t pooled = pool_.SpillIfFull(cache)) AfterGive(pooled);
}

void StackAllocator::AfterGive(std::size_t pooled) {
  if (pooled <= options_.pool_idle_max) return;
  if (options_.release_delay_ms == 0) {
    ReleaseIdle();
  } else {
    RegisterReleaseIfNeeded();
  }
}

std::size_t StackAllocator::ReleaseOldest(std::size_t at_most) {
  // The oldest: the least likely to be warm. In chunks, so that no list of them is a
  // block of malloc large enough to move glibc's trim threshold (see BatchPool::items_).
  // Bounded by what is pooled now: threads that keep giving stacks back meanwhile
  // (--fiber_release_delay_ms=0) do not keep this call going.
  at_most = std::min(at_most, pool_.size());
  std::size_t released = 0;
  while (released < at_most) {
    std::vector<Stack> oldest =
        pool_.TakeOldest(options_.pool_idle_max, std::min(at_most - released, kReleaseChunk));
    if (oldest.empty()) break;
    released += oldest.size();
    Release(&oldest);
  }
  return released;
}

void StackAllocator::RegisterReleaseIfNeeded() {
  // acquire/release: only spares the registry's lock once registered.
  if (release_registered_.load(std::memory_order_acquire)) return;
  RegisterIdleRelease(this, std::chrono::milliseconds(options_.release_delay_ms),
                      [this] { ReleaseRound(); });
  release_registered_.store(true, std::memory_order_release);
}

void StackAllocator::ReleaseRound() {
  // What sat in the pool the whole interval, beyond the watermark, goes.
  const std::size_t idle_all_along = pool_.TakeLowWater();
  if (idle_all_along > options_.pool_idle_max &&
      ReleaseOldest(idle_all_along - options_.pool_idle_max) >= kTrimAfterReleasing) {
    // After a burst, the pool's list of its stacks was megabytes of malloc'd memory,
    // now free, that glibc keeps unless asked. It takes each arena's lock in turn, so a
    // thread that allocates meanwhile may wait for one arena's trim: rare (a release of
    // thousands of stacks, on the release thread) and brief.
    malloc_trim(0);
  }
}

std::size_t StackAllocator::mmapped_count() const {
  return mmapped_.load(std::memory_order_relaxed);  // relaxed: statistic
}

std::size_t StackAllocator::slab_count() const {
  return slab_stacks_.load(std::memory_order_relaxed);  // relaxed: statistic
}

std::size_t StackAllocator::pooled_count() const { return pool_.size(); }

std::size_t StackAllocator::released_count() const {
  return released_count_.load(std::memory_order_relaxed);  // relaxed: statistic
}

}  // namespace spindle::internal
