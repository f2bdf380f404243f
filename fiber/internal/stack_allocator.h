// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_STACK_ALLOCATOR_H_
#define SPINDLE_FIBER_INTERNAL_STACK_ALLOCATOR_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/batch_pool.h"
#include "fiber/internal/os_mutex.h"
#include "gflags/gflags_declare.h"

DECLARE_uint64(fiber_stack_size);
DECLARE_bool(fiber_stack_enable_guard_page);
DECLARE_uint64(fiber_stack_mmap_limit);
DECLARE_bool(fiber_stack_guard_regions);
DECLARE_uint64(fiber_stack_thread_cache_size);
DECLARE_uint64(fiber_stack_pool_idle_max);

extern "C" {

// For debuggers (debug_info.h): one region of stacks of the stack registry
// (stack_allocator.cc): `count` stacks of `stack_size` bytes, the first at
// `first_base`, each `stride` bytes above the last.
struct SpindleDebugStackRegion {
  std::uint64_t first_base;
  std::uint64_t stack_size;
  std::uint64_t stride;
  std::uint64_t count;
};

// The registry's regions as a plain array, rewritten under its lock. A debugger that
// stops the process in the middle of an update sees the old array or the new one (a
// grown array is published before the old one is freed), at worst one region short.
struct SpindleDebugStacks {
  SpindleDebugStackRegion* regions;
  std::uint64_t count;
  std::uint64_t capacity;
  std::uint64_t generation;  // bumped by every change
};

// The registry's mirror, defined in stack_allocator.cc.
extern SpindleDebugStacks spindle_debug_stacks;

}  // extern "C"

namespace spindle::internal {

// One fiber stack. Usable memory is [base, base + size); the stack grows down from the
// top, where the fiber's control block is placed. The page right below `base` is either
// a guard (`guarded`: any access faults and the overflow handler names the fiber) or,
// for an unguarded stack, a pad page that nothing touches unless the stack overflows:
// its top kStackCanaryBytes are the canary the switch path checks (StackCanaryIntact).
struct Stack {
  enum class Origin : std::uint8_t {
    kMmapped,  // an mmap of its own, its guard page made PROT_NONE (two VMAs)
    kSlab,     // a slot of a slab shared with other stacks (no VMA of its own); guarded
               // by a page-table guard marker (Linux 6.13+), else unguarded with a canary
  };

  char* base = nullptr;
  std::size_t size = 0;
  Origin origin = Origin::kMmapped;
  bool guarded = false;

  char* top() const { return base + size; }
  explicit operator bool() const { return base != nullptr; }
};

// The canary of an unguarded stack: the top kStackCanaryBytes of the pad page below
// `base`. Never written (so it costs no memory: the untouched page reads as the shared
// zero page), it must read zero; a stack that ran past `base` wrote return addresses and
// locals there. A best-effort check, unlike a guard page: a frame that jumps over the pad
// page without writing its top is caught only if the fiber is still that deep when it
// switches (the stack pointer check beside it).
inline constexpr std::size_t kStackCanaryBytes = 64;

inline bool StackCanaryIntact(const Stack& stack) {
  const auto* words = reinterpret_cast<const volatile std::uint64_t*>(stack.base -
                                                                       kStackCanaryBytes);
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < kStackCanaryBytes / sizeof(std::uint64_t); ++i) any |= words[i];
  return any == 0;
}

// The top kStackHeaderSize bytes of every stack a StackAllocator makes hold the stack's
// liveness word, constructed (0) when the stack is created and never poisoned for ASan:
// the fiber dump reads it on stacks that sit in a cache. The fiber's control block is
// placed below it (FiberControlBlockSize() counts it). 16 bytes, not a cache line of
// its own: it shares the control block's last line with the entity's tail padding, so
// a fiber touches no more lines than before the dump existed (a 64-byte header made
// the block 384 bytes, six lines, instead of five).
inline constexpr std::size_t kStackHeaderSize = 16;

// The liveness protocol between a fiber's life and the fiber dump, one word per stack:
//   kStackVacant  no entity on the stack (new, cached, or its fiber died and was reclaimed)
//   kStackLive    an entity is constructed at the stack's control block
//   kStackPinned  live, and a dump is reading it: the entity may not be destroyed
// The owner of the entity moves Vacant -> Live after constructing it
// (MarkStackEntityLive) and Live -> Vacant before destroying it (MarkStackEntityGone,
// which waits out a pin). A dump moves Live -> Pinned -> Live (PinStackEntity,
// UnpinStackEntity). So a pinned entity is fully constructed and stays so until unpinned,
// and a destroyed one is never read. Cost to a fiber's life: one release store and one
// compare-and-swap.
inline constexpr std::uint32_t kStackVacant = 0;
inline constexpr std::uint32_t kStackLive = 1;
inline constexpr std::uint32_t kStackPinned = 2;

// The liveness word of `stack` (its first header word).
inline std::atomic<std::uint32_t>& StackLiveness(const Stack& stack) {
  return *reinterpret_cast<std::atomic<std::uint32_t>*>(stack.top() - kStackHeaderSize);
}

inline void MarkStackEntityLive(const Stack& stack) {
  // release: publishes the constructed entity to PinStackEntity()'s acquire CAS.
  StackLiveness(stack).store(kStackLive, std::memory_order_release);
}

// Waits (spinning) while a dump has the entity pinned; a dump holds a pin for a few
// loads and a bounded stack walk.
void MarkStackEntityGone(const Stack& stack);

// True if the stack holds a live entity, now pinned until UnpinStackEntity().
inline bool PinStackEntity(const Stack& stack) {
  // A load first: a compare-and-swap writes the line even when it fails, which on a
  // slot nobody ran on (fresh, or released) would make its page resident.
  // relaxed: only decides whether to try; the CAS below orders.
  if (StackLiveness(stack).load(std::memory_order_relaxed) != kStackLive) return false;
  std::uint32_t expected = kStackLive;
  // acquire: pairs with the release store of MarkStackEntityLive() (the entity is
  // constructed) and of UnpinStackEntity() by an earlier dump.
  return StackLiveness(stack).compare_exchange_strong(expected, kStackPinned,
                                                      std::memory_order_acquire,
                                                      std::memory_order_relaxed);
}

inline void UnpinStackEntity(const Stack& stack) {
  // release: our reads of the entity happen before MarkStackEntityGone()'s acquire CAS
  // succeeds, so before the entity is destroyed.
  StackLiveness(stack).store(kStackLive, std::memory_order_release);
}

// Calls `fn` on every stack that any StackAllocator had created and not destroyed when
// the call began (stacks created meanwhile may be missed). No stack is released while
// `fn` runs (Destroy() waits), so `fn` must not destroy stacks; it may wait for a
// thread that creates one. Thread-safe; not for hot paths (the dump).
void ForEachRegisteredStack(const std::function<void(const Stack&)>& fn);

// Options of one StackAllocator. The process-wide allocators take them from the
// --fiber_stack_* flags.
struct StackAllocatorOptions {
  std::size_t stack_size = 128 * 1024;  // usable bytes, a multiple of the page size
  bool guard_page = true;
  // Guard pages as page-table markers (MADV_GUARD_INSTALL, Linux 6.13+) in slabs, where
  // the kernel has them: no VMA per stack, so no mmap limit. Else (or false) PROT_NONE
  // pages, two VMAs per stack, up to `mmap_limit`.
  bool guard_regions = true;
  // Most stacks that may be mmapped with a PROT_NONE guard at once; past it, stacks come
  // from slabs without a guard page (canary-checked). 0 means: derive from
  // vm.max_map_count (see MmapLimitFor()).
  std::size_t mmap_limit = 0;
  // Most stacks a thread's cache holds; half of it moves between the cache and the
  // global pool at a time (a batch).
  std::size_t thread_cache_size = 32;
  // Idle stacks the global pool keeps with their memory; the rest give their memory back
  // (munmap, or MADV_DONTNEED for slab stacks) once idle for `release_delay_ms`
  // (--fiber_release_delay_ms).
  std::size_t pool_idle_max = 256;
  // How long an idle stack beyond `pool_idle_max` stays before its memory is released;
  // 0: at once, by the thread that returns it. The delay keeps a load that comes back
  // in bursts (benchmark repetitions, traffic spikes) from unmapping and refaulting.
  std::size_t release_delay_ms = 1000;
};

// Reports what is wrong with `options`, naming the flag, the value and the accepted
// range; the empty string when they are valid.
std::string ValidateStackAllocatorOptions(const StackAllocatorOptions& options);

// Reports a --fiber_stack_* flag whose value in `wanted` differs from what the
// process's stacks were built with (the flags are read once per process, when the first
// stack of a size class is needed): the message names the flag, both values and the
// rule. Empty when nothing differs or no stack exists yet. Thread-safe.
std::string CheckStackOptionsUnchanged(const StackAllocatorOptions& wanted);

// Options from the --fiber_stack_* flags, for stacks of `stack_size` bytes (0: the
// --fiber_stack_size default). Does not validate.
StackAllocatorOptions StackAllocatorOptionsFromFlags(std::size_t stack_size = 0);

// The automatic mmap limit: half of `max_map_count` (the other half stays for the rest
// of the process), divided by the mappings one stack costs (2 with a guard page, since
// the guard splits the mapping into two VMAs; 1 without).
std::size_t MmapLimitFor(std::size_t max_map_count, bool guard_page);

// Whether this kernel installs guard markers (MADV_GUARD_INSTALL). Probed once.
bool KernelHasGuardMarkers();

// Stack size classes (Fiber::Attributes::stack_size). Class 0 is the --fiber_stack_size
// default; class k >= 1 is 2^(13 + k) bytes: 16 KiB (k = 1) up to 1 GiB (k = 17). A
// requested size is rounded up to a class; one that rounds to the default's size is
// class 0.
inline constexpr std::size_t kMaxStackClass = 17;
inline constexpr std::size_t kMaxRequestedStackSize = std::size_t{1} << 30;
// The class for `requested` bytes (0: the default). `requested` must be at most
// kMaxRequestedStackSize (see ValidateRequestedStackSize).
std::uint8_t StackClassFor(std::size_t requested);
// The stack size of class `stack_class`.
std::size_t StackClassSize(std::uint8_t stack_class);
// What is wrong with a requested stack size, naming the value and the range; empty when
// it is valid.
std::string ValidateRequestedStackSize(std::size_t requested);

// Owns fiber stacks: creates them, keeps returned ones in a pool of batches, releases
// the memory of idle ones beyond a watermark, and unmaps everything when destroyed.
// Thread-safe. Most callers go through a per-thread StackCache, which touches the
// allocator only once per batch. The allocator must outlive its caches and every stack
// it handed out.
//
// Where the memory goes, per parked fiber (4 KiB pages, x86-64, the default 128 KiB
// stack; spindle_bench's parked_memory measures it, with 100k fibers parked on one
// Event: docs/internals/execution-core.md):
//   - 4096 bytes: the stack's top page, the only page a fiber that parks in a sync
//     primitive touches. It holds the 320-byte control block (FiberEntity, 304 bytes,
//     and the 16-byte stack header) and the frames of the entry and park paths (about
//     1.5 KiB). A fiber that goes deeper pays for every page it touched until its stack
//     is released (see below).
//   - 0 bytes for the rest of the stack, the guard or pad page and the canary: reserved
//     (MAP_NORESERVE), never touched. The stack size is address space, not memory: a
//     smaller default would save no RSS, only page-table pages (one 4 KiB page maps 2 MiB,
//     about 15 stacks: ~270 bytes a fiber, kernel memory outside RSS) and it would cost
//     deep call chains their safety margin, so the default stays at 128 KiB.
//   - ~50 bytes of malloc: the fiber's closure when it does not fit AnyInvocable's
//     inline storage (parked_memory's captures four references). The waiter lives on the
//     stack, the descriptor is recycled when the fiber first runs, and the fiber dump's
//     registry has one entry per slab, not per stack (one per stack would take 80
//     bytes).
//   - VMAs: kernel memory outside RSS, but bounded by vm.max_map_count (65530 by
//     default): 2 per stack with a PROT_NONE guard, 0 per stack in a slab.
// Stacks past the mmap limit do not come from aligned_alloc(): glibc serves 128 KiB
// from an mmap of its own with the chunk header at its bottom, so each such stack would
// touch a second page.
class StackAllocator {
 public:
  explicit StackAllocator(const StackAllocatorOptions& options);  // CHECKs options
  ~StackAllocator();
  StackAllocator(const StackAllocator&) = delete;
  StackAllocator& operator=(const StackAllocator&) = delete;

  // The process-wide allocator of stack class `stack_class`, built from the flags on
  // first use (never destroyed). A flag value that fails validation is a fatal error
  // naming the flag.
  static StackAllocator& Default(std::uint8_t stack_class = 0);

  // A new stack, or one whose memory was released: a slab stack with a guard marker if
  // the kernel has them; else mmapped with a PROT_NONE guard while fewer than the limit
  // are; else a slab stack without a guard (canary-checked). The memory is unpoisoned
  // for ASan. TryCreate() returns an empty Stack when no memory can be mapped (the
  // address space, vm.max_map_count or a memory cgroup exhausted), with the cause in
  // `*why`; Create() treats that as fatal.
  Stack TryCreate(std::string* why);
  Stack Create();
  // Up to `want` stacks as TryCreate() makes them, appended to `out` (for a thread
  // cache that ran dry): one lock round for all of them, and each new slab slot's
  // guard marker (a system call) outside the lock, so workers that start many fibers
  // at once do not queue behind each other.
  // New slots come from the current slab only (or one new slab), so a class of large
  // stacks is not over-reserved; mmapped stacks come one at a time. Returns how many
  // were appended (0: the cause in `*why`). Released stacks among them stay poisoned
  // for ASan, as pooled ones are (StackCache::TryGet() unpoisons).
  std::size_t TryCreateBatch(std::vector<Stack>* out, std::size_t want, std::string* why);

  // Gives up `stack`: an mmapped one is unmapped, a slab one's memory is released and
  // the slot kept for Create(). It must have come from this allocator.
  void Destroy(const Stack& stack);

  // Moves up to batch_size() pooled stacks into `out`; false if the pool was empty.
  bool TakeBatch(std::vector<Stack>* out);

  // Returns stacks to the pool (they stay owned by this allocator). Past
  // pool_idle_max, the excess is released at once (release_delay_ms 0) or by the
  // release thread once it has been idle that long.
  void GiveBatch(std::vector<Stack>* stacks);
  // For a thread cache: gives a batch back if `cache` holds two (as GiveBatch()).
  void SpillIfFull(std::vector<Stack>* cache);

  // Releases the memory of every pooled stack beyond pool_idle_max now; returns how
  // many. (The release thread calls it for stacks idle long enough.)
  std::size_t ReleaseIdle() { return ReleaseOldest(SIZE_MAX); }

  std::size_t stack_size() const { return options_.stack_size; }
  const StackAllocatorOptions& options() const { return options_; }
  std::size_t batch_size() const { return pool_.batch_size(); }
  std::size_t mmap_limit() const { return mmap_limit_; }
  bool uses_guard_markers() const { return guard_markers_; }

  // Statistics (relaxed snapshots).
  std::size_t mmapped_count() const;   // live mmapped stacks
  std::size_t slab_count() const;      // slab stacks handed out and pooled
  std::size_t pooled_count() const;    // stacks in the global pool
  std::size_t released_count() const;  // slab stacks whose memory was given back

 private:
  struct Slab {
    char* begin;
    std::size_t slots;
  };

  Stack CreateMmapped();
  // The one WARNING that stacks past --fiber_stack_mmap_limit come unguarded from slabs.
  void WarnPastMmapLimit() const;
  Stack CreateInSlab(std::string* why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slab_lock_);
  // Carves up to `want` slots of the current slab (mapping a new one when it is full)
  // and registers them; their guard markers and headers are the caller's
  // (PrepareSlabSlot). Returns the first slot's address and sets `*carved`.
  char* CarveSlots(std::size_t want, std::size_t* carved, std::string* why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slab_lock_);
  // A carved slot as a stack: installs its guard marker (if any).
  Stack PrepareSlabSlot(char* slot);
  // The slab stack whose usable memory begins at `base`.
  Stack SlabStackAt(char* base) const;
  // The base of the last released run's last stack, taken out of it. `released_` must
  // not be empty.
  char* TakeReleased() ABSL_EXCLUSIVE_LOCKS_REQUIRED(slab_lock_);
  void Release(std::vector<Stack>* stacks);
  // Releases up to `at_most` of the oldest pooled stacks beyond pool_idle_max.
  std::size_t ReleaseOldest(std::size_t at_most);
  // After the pool grew to `pooled` stacks: releases or schedules the excess.
  void AfterGive(std::size_t pooled);
  void RegisterReleaseIfNeeded();
  void ReleaseRound();

  const StackAllocatorOptions options_;
  const std::size_t page_size_;
  const std::size_t slot_size_;  // a slab slot: the guard or pad page and the stack
  const std::size_t mmap_limit_;
  const bool guard_markers_;

  // Counts live stacks by origin. relaxed everywhere: they gate a soft limit and feed
  // statistics; a race lets the limit be exceeded by at most the number of racing
  // threads, which the limit's headroom absorbs.
  std::atomic<std::size_t> mmapped_{0};
  std::atomic<std::size_t> slab_stacks_{0};
  std::atomic<std::size_t> released_count_{0};

  OsMutex slab_lock_;
  std::vector<Slab> slabs_ ABSL_GUARDED_BY(slab_lock_);
  // Slots handed out of slabs_.back().
  std::size_t slab_carved_ ABSL_GUARDED_BY(slab_lock_) = 0;
  // Slab stacks with no memory, as runs of neighbouring slots (each run one madvise()
  // of Release()): after a burst of a million fibers a few hundred runs, not a list of
  // a million stacks.
  struct ReleasedRun {
    char* first_base;
    std::size_t count;
  };
  std::vector<ReleasedRun> released_ ABSL_GUARDED_BY(slab_lock_);

  // Idle stacks, oldest first; its low-water mark tells the release thread which sat
  // idle a whole delay.
  BatchPool<Stack> pool_;

  // Registered with the release thread (idle_release.h) when the pool first grows past
  // pool_idle_max with a delay.
  std::atomic<bool> release_registered_{false};

 public:
  // Threads waiting in StackCache::Get() for a stack no mapping could provide. While
  // any is, StackCache::Put() gives its stacks straight back to the pool, where they
  // wait for it. relaxed: a hint; the waiter polls the pool.
  std::atomic<int> starving{0};
  // Times StackCache::Get() found no stack and had to wait (a statistic).
  std::atomic<std::uint64_t> stack_waits{0};
};

// Tests only: while true, every StackAllocator's TryCreate() fails as if the address
// space were exhausted (stacks already pooled or cached are still handed out).
void FailStackCreationForTesting(bool fail);

// A stack packed into one word (a FiberDesc's reserved stack): its base with the origin
// and guard flags in the low bits (the base is page-aligned). 0 for no stack.
inline std::uintptr_t PackStack(const Stack& stack) {
  return reinterpret_cast<std::uintptr_t>(stack.base) |
         (stack.origin == Stack::Origin::kSlab ? 1 : 0) | (stack.guarded ? 2 : 0);
}
inline Stack UnpackStack(std::uintptr_t packed, std::size_t size) {
  Stack stack;
  stack.base = reinterpret_cast<char*>(packed & ~std::uintptr_t{3});
  stack.size = size;
  stack.origin = (packed & 1) != 0 ? Stack::Origin::kSlab : Stack::Origin::kMmapped;
  stack.guarded = (packed & 2) != 0;
  return stack;
}

// A per-thread cache of stacks in front of a StackAllocator: Get() and Put() are a
// vector push/pop until the cache is empty (take a batch from the pool) or holds two
// batches (give one back). Owner thread only. The destructor gives every cached stack
// back to the allocator's pool.
class StackCache {
 public:
  explicit StackCache(StackAllocator* allocator) : allocator_(allocator) {}
  ~StackCache();
  StackCache(const StackCache&) = delete;
  StackCache& operator=(const StackCache&) = delete;

  // The calling thread's cache of StackAllocator::Default(stack_class).
  static StackCache& ForThisThread(std::uint8_t stack_class = 0);
  // The calling thread's cache for stacks of `stack`'s size (to give it back).
  static StackCache& ForStack(const Stack& stack);
  // Builds the calling thread's cache of the default stack class with room for the
  // most it holds (two batches), so that the first stack the thread takes or gives
  // back allocates nothing: for a runtime thread as it starts (a worker).
  static void PrepareThisThread();

  // A stack ready for use (unpoisoned for ASan). When none can be had (TryGet()
  // fails), it waits for one, polling the pool with a growing pause (up to 100 ms),
  // logging an ERROR with the cause every 10 s and counting the wait.
  Stack Get();
  // A stack ready for use, or an empty Stack with the cause in `*why` when the cache
  // and the pool are empty and the allocator cannot map a new one. A cache that finds
  // the pool empty too creates a batch at once (TryCreateBatch()).
  Stack TryGet(std::string* why);

  // Takes back a stack that no context uses any more.
  void Put(const Stack& stack);

  StackAllocator* allocator() const { return allocator_; }
  std::size_t cached_count() const { return cached_.size(); }

 private:
  StackAllocator* const allocator_;
  std::vector<Stack> cached_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_STACK_ALLOCATOR_H_
