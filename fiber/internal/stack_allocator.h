// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_STACK_ALLOCATOR_H_
#define SPINDLE_FIBER_INTERNAL_STACK_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fiber/internal/batch_pool.h"
#include "gflags/gflags_declare.h"

DECLARE_uint64(fiber_stack_size);
DECLARE_bool(fiber_stack_enable_guard_page);
DECLARE_uint64(fiber_stack_mmap_limit);

namespace spindle::internal {

// One fiber stack. Usable memory is [base, base + size); the stack grows down from the
// top, where the fiber's control block is placed. A guarded stack has one PROT_NONE
// page right below `base`.
struct Stack {
  enum class Origin : std::uint8_t {
    kMmapped,  // an mmap of its own (plus a guard page if `guarded`)
    kHeap,     // fallback past the mmap limit: page-aligned heap memory, no guard page
  };

  char* base = nullptr;
  std::size_t size = 0;
  Origin origin = Origin::kMmapped;
  bool guarded = false;

  char* top() const { return base + size; }
  explicit operator bool() const { return base != nullptr; }
};

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

// Options of one StackAllocator. The process-wide allocator takes them from the
// --fiber_stack_* flags.
struct StackAllocatorOptions {
  std::size_t stack_size = 128 * 1024;  // usable bytes, a multiple of the page size
  bool guard_page = true;
  // Most stacks that may be mmapped at once; past it, stacks come from the heap without
  // a guard page. 0 means: derive from vm.max_map_count (see MmapLimitFor()).
  std::size_t mmap_limit = 0;
  // Stacks moved between a thread's cache and the global pool at a time.
  std::size_t batch_size = 16;
};

// Reports what is wrong with `options`, naming the flag, the value and the accepted
// range; the empty string when they are valid.
std::string ValidateStackAllocatorOptions(const StackAllocatorOptions& options);

// Options from the --fiber_stack_* flags. Does not validate.
StackAllocatorOptions StackAllocatorOptionsFromFlags();

// The automatic mmap limit: half of `max_map_count` (the other half stays for the rest
// of the process), divided by the mappings one stack costs (2 with a guard page, since
// the guard splits the mapping into two VMAs; 1 without).
std::size_t MmapLimitFor(std::size_t max_map_count, bool guard_page);

// Owns fiber stacks: creates them (mmap with an optional guard page, or heap memory past
// the mmap limit), keeps returned ones in a pool of batches, and unmaps everything when
// destroyed. Thread-safe. Most callers go through a per-thread StackCache, which touches
// the allocator only once per batch. The allocator must outlive its caches and every
// stack it handed out.
class StackAllocator {
 public:
  explicit StackAllocator(const StackAllocatorOptions& options);  // CHECKs options
  ~StackAllocator();
  StackAllocator(const StackAllocator&) = delete;
  StackAllocator& operator=(const StackAllocator&) = delete;

  // The process-wide allocator built from the flags on first use (never destroyed).
  // A flag value that fails validation is a fatal error naming the flag.
  static StackAllocator& Default();

  // A new stack: mmapped while fewer than the limit are, else from the heap. Never
  // fails (out of memory is fatal). The memory is unpoisoned for ASan.
  Stack Create();

  // Releases `stack` to the system. It must have come from this allocator.
  void Destroy(const Stack& stack);

  // Moves up to batch_size() pooled stacks into `out`; false if the pool was empty.
  bool TakeBatch(std::vector<Stack>* out);

  // Returns stacks to the pool (they stay owned by this allocator).
  void GiveBatch(std::vector<Stack>* stacks);

  std::size_t stack_size() const { return options_.stack_size; }
  std::size_t batch_size() const { return pool_.batch_size(); }
  BatchPool<Stack>& pool() { return pool_; }
  std::size_t mmap_limit() const { return mmap_limit_; }

  // Statistics (relaxed snapshots).
  std::size_t mmapped_count() const;
  std::size_t heap_count() const;
  std::size_t pooled_count() const;

 private:
  Stack CreateMmapped();
  Stack CreateFromHeap();

  const StackAllocatorOptions options_;
  const std::size_t page_size_;
  const std::size_t mmap_limit_;

  // Counts live stacks by origin. relaxed everywhere: they gate a soft limit and feed
  // statistics; a race lets the limit be exceeded by at most the number of racing
  // threads, which the limit's headroom absorbs.
  std::atomic<std::size_t> mmapped_{0};
  std::atomic<std::size_t> heap_{0};

  BatchPool<Stack> pool_;
};

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

  // The calling thread's cache of StackAllocator::Default().
  static StackCache& ForThisThread();

  // A stack ready for use (unpoisoned for ASan).
  Stack Get();

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
