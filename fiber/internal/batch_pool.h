// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_
#define SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/idle_release.h"
#include "fiber/internal/os_mutex.h"
#include "fiber/internal/sanitizers.h"

namespace spindle::internal {

// The global half of a two-level free list: threads keep their own cache of items and
// trade whole batches with this pool, so the pool's lock is taken once per batch, not
// once per item. Used for fiber stacks (StackAllocator) and by PooledObjects below. When one
// thread only allocates and another only frees (a spawner and a worker), items flow
// from the freeing thread's cache through here to the allocating one's. Thread-safe.
template <class T>
class BatchPool {
 public:
  explicit BatchPool(std::size_t batch_size) : batch_size_(batch_size) {}

  std::size_t batch_size() const { return batch_size_; }

  // Moves up to batch_size() items into `out`; false if the pool was empty.
  bool TakeBatch(std::vector<T>* out) {
    OsMutexGuard lock(lock_);
    if (items_.empty()) return false;
    const std::size_t n = std::min(batch_size_, items_.size());
    out->insert(out->end(), items_.end() - n, items_.end());
    items_.resize(items_.size() - n);
    if (items_.size() < low_water_) low_water_ = items_.size();
    return true;
  }

  // Moves all of `items` into the pool; returns how many it holds now.
  std::size_t GiveBatch(std::vector<T>* items) {
    const std::size_t held = GiveRange(items->data(), items->size());
    items->clear();
    return held;
  }
  // Copies the `n` items at `items` into the pool (the caller drops its copies);
  // returns how many it holds now.
  std::size_t GiveRange(const T* items, std::size_t n) {
    OsMutexGuard lock(lock_);
    items_.insert(items_.end(), items, items + n);
    return items_.size();
  }

  // For giving idle items back (idle_release.h): the fewest items the pool held since
  // the previous call (so many sat unused all along), and the mark reset to now.
  std::size_t TakeLowWater() {
    OsMutexGuard lock(lock_);
    const std::size_t low = std::min(low_water_, items_.size());
    low_water_ = items_.size();
    return low;
  }

  // Moves out the items pooled longest, up to `at_most` of them, leaving at least
  // `keep`.
  std::vector<T> TakeOldest(std::size_t keep, std::size_t at_most) {
    OsMutexGuard lock(lock_);
    if (items_.size() <= keep) return {};
    const std::size_t n = std::min(items_.size() - keep, at_most);
    std::vector<T> oldest(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(n));
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(n));
    if (items_.size() < low_water_) low_water_ = items_.size();
    return oldest;
  }

  // Moves everything out (for the owner's destructor).
  std::vector<T> TakeAll() {
    OsMutexGuard lock(lock_);
    std::vector<T> all(items_.begin(), items_.end());
    items_.clear();
    return all;
  }

  std::size_t size() const {
    OsMutexGuard lock(lock_);
    return items_.size();
  }

  // For a thread cache: if `cache` holds two batches or more, gives one batch back.
  // Returns whether it did.
  // Returns the pool's size after the spill, or 0 if it did not spill.
  std::size_t SpillIfFull(std::vector<T>* cache) {
    if (cache->size() < 2 * batch_size_) return 0;
    return Spill(cache);
  }
  // SpillIfFull()'s spill, out of line: the cache's last batch, copied straight from it
  // (a vector of its own per spill cost a malloc, a copy and a free).
  __attribute__((noinline)) std::size_t Spill(std::vector<T>* cache) {
    const std::size_t held = GiveRange(cache->data() + cache->size() - batch_size_, batch_size_);
    cache->resize(cache->size() - batch_size_);
    return held;
  }

 private:
  const std::size_t batch_size_;
  mutable OsMutex lock_;
  // Oldest first. A deque, not a vector: after a burst (a million stacks) a vector
  // would be one block of tens of MiB, and glibc, once such a block is freed, raises its
  // trim threshold so far that the memory of the burst's bookkeeping stays resident;
  // a deque's blocks are small and go back as the pool drains.
  std::deque<T> items_ ABSL_GUARDED_BY(lock_);
  std::size_t low_water_ ABSL_GUARDED_BY(lock_) = 0;  // see TakeLowWater()
};

// new and delete for small objects that one thread allocates and another frees, many
// per second (fiber descriptors, join states): a plain new/delete makes malloc pay for
// a cross-thread free each time. Each thread keeps a cache of free objects and trades
// batches with one BatchPool per type. When both are empty, a slab (a page) is carved
// into kObjectsPerSlab objects at once: one fresh object at a time from malloc's top
// chunk is far dearer per object while many are outstanding. The
// pool keeps kKeep objects for good; beyond that, objects that sat in it unused for
// --fiber_release_delay_ms are destroyed (idle_release.h), and a slab goes back to
// malloc when its last object is, so a burst of 100k fibers does not pin 100k
// descriptors for the life of the process. (A slab stays while any of its objects is
// in use or cached: the pool hands out its newest objects first and gives back its
// oldest, so after a burst the kept ones are the last freed, from few slabs.) Delete()
// does not destroy: the caller resets the object first, and New() hands it out as it
// was left (a default-constructed one when it comes from a new slab). Under a sanitizer
// it is plain new/delete, so each lifetime is visible. Thread-safe; New() and Delete()
// do not switch fibers, so their thread-local cache is not read across a switch.
template <class T>
class PooledObjects {
 public:
  static T* New() {
    if (kUnderSanitizer) return new T;
    std::vector<T*>* cache = ThisThread();
    if (__builtin_expect(cache == nullptr, 0)) return NewWithoutCache();
    if (cache->empty() && !Pool().TakeBatch(cache)) return NewSlab(cache);
    T* object = cache->back();
    cache->pop_back();
    return object;
  }
  // `object` must come from New() (a slab's back-pointer sits before it; the idle
  // release reads it).
  static void Delete(T* object) {
    if (kUnderSanitizer) {
      delete object;
      return;
    }
    std::vector<T*>* cache = ThisThread();
    if (__builtin_expect(cache == nullptr, 0)) return DeleteWithoutCache(object);
    cache->push_back(object);
    if (Pool().SpillIfFull(cache) > kKeep) RegisterRelease();
  }

  static constexpr std::size_t kKeep = 4096;

  // Slabs allocated and not yet freed (a relaxed count), and for tests the slab's size
  // and the release's end of one object (destroyed; its slab freed with its last one).
  static std::size_t live_slabs() { return live_slabs_.load(std::memory_order_relaxed); }
  static constexpr std::size_t objects_per_slab() { return kObjectsPerSlab; }
  static void DestroyForTesting(T* object) { Destroy(object); }
  static std::size_t pooled_for_testing() { return Pool().size(); }

 private:
  static constexpr std::size_t kBatch = 64;
  // A slab: a count, then the objects, each after a pointer back to its slab. One
  // plain malloc of a page's worth (an aligned_alloc per slab left the heap so
  // fragmented that a 100k-fiber burst kept 5 MiB more resident after its release:
  // stack_test), or more for objects too large for eight of them to fit.
  struct SlabHeader {
    explicit SlabHeader(std::size_t n) : live(n) {}
    std::atomic<std::size_t> live;  // its objects not yet destroyed
  };
  static constexpr std::size_t RoundUp(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
  }
  static constexpr std::size_t kObjectAlign = alignof(T) > alignof(SlabHeader*)
                                                  ? alignof(T)
                                                  : alignof(SlabHeader*);
  static_assert(kObjectAlign <= alignof(std::max_align_t),
                "malloc's alignment must be enough for a slab's objects");
  // Where an object starts in its slot, and the slot's size.
  static constexpr std::size_t kObjectOffset = RoundUp(sizeof(SlabHeader*), kObjectAlign);
  static constexpr std::size_t kSlotBytes = kObjectOffset + RoundUp(sizeof(T), kObjectAlign);
  static constexpr std::size_t kFirstSlot = RoundUp(sizeof(SlabHeader), kObjectAlign);
  static constexpr std::size_t SlabBytesFor(std::size_t slot_bytes) {
    std::size_t bytes = 4096;
    while (bytes - 16 < kFirstSlot + 8 * slot_bytes) bytes *= 2;
    return bytes - 16;  // malloc's chunk header: the chunk is a whole page (or pages)
  }
  static constexpr std::size_t kSlabBytes = SlabBytesFor(kSlotBytes);
  static constexpr std::size_t kObjectsPerSlab = (kSlabBytes - kFirstSlot) / kSlotBytes;

  // A new slab's objects: one returned, the others into `cache` (lowest address last,
  // so it is handed out next). Room in the cache first, so that handing them over cannot
  // throw; a constructor that throws takes the slab down with the objects built so far.
  __attribute__((noinline)) static T* NewSlab(std::vector<T*>* cache) {
    cache->reserve(cache->size() + kObjectsPerSlab - 1);
    void* memory = std::malloc(kSlabBytes);
    if (memory == nullptr) throw std::bad_alloc();
    auto* slab = new (memory) SlabHeader(kObjectsPerSlab);
    char* const first = static_cast<char*>(memory) + kFirstSlot;
    auto object_at = [first](std::size_t i) {
      return std::launder(reinterpret_cast<T*>(first + i * kSlotBytes + kObjectOffset));
    };
    std::size_t built = 0;
    try {
      for (; built < kObjectsPerSlab; ++built) {
        char* slot = first + built * kSlotBytes;
        new (slot) SlabHeader*(slab);
        new (slot + kObjectOffset) T;
      }
    } catch (...) {
      while (built-- > 0) object_at(built)->~T();
      slab->~SlabHeader();
      std::free(memory);
      throw;
    }
    live_slabs_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    for (std::size_t i = kObjectsPerSlab; i-- > 1;) cache->push_back(object_at(i));
    return object_at(0);
  }
  // The release's end of an object: destroyed, and its slab freed with its last one.
  static void Destroy(T* object) {
    SlabHeader* slab =
        *reinterpret_cast<SlabHeader**>(reinterpret_cast<char*>(object) - kObjectOffset);
    object->~T();
    // acq_rel: every other object's destruction happens-before the free.
    if (slab->live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      slab->~SlabHeader();
      std::free(slab);
      live_slabs_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a statistic
    }
  }
  inline static std::atomic<std::size_t> live_slabs_{0};
  struct Cache {
    std::vector<T*> free;
    ~Cache() {
      if (!free.empty()) Pool().GiveBatch(&free);
      tls_cache_gone_ = true;
    }
  };
  // This thread's cache was destroyed (the thread is exiting). A thread_local destroyed
  // after it (a master fiber's fiber-locals holding a join handle, say) may still free
  // and allocate: through the pool, one at a time, instead of into a dead vector.
  // Trivially initialized and destroyed, so it outlives every other thread_local.
  inline static thread_local bool tls_cache_gone_ = false;
  __attribute__((noinline, cold)) static T* NewWithoutCache() {
    std::vector<T*> batch;
    T* object;
    if (Pool().TakeBatch(&batch)) {
      object = batch.back();
      batch.pop_back();
    } else {
      object = NewSlab(&batch);
    }
    if (!batch.empty()) Pool().GiveBatch(&batch);
    return object;
  }
  __attribute__((noinline, cold)) static void DeleteWithoutCache(T* object) {
    std::vector<T*> one(1, object);
    Pool().GiveBatch(&one);
  }
  // Once the pool first holds more than kKeep: from then on, the release thread frees
  // what sat idle beyond kKeep every --fiber_release_delay_ms.
  __attribute__((noinline, cold)) static void RegisterRelease() {
    static std::atomic<bool> registered{false};
    // relaxed: only spares the registry's lock; Register ignores a second call.
    if (registered.load(std::memory_order_relaxed)) return;
    registered.store(true, std::memory_order_relaxed);
    const auto period = std::chrono::milliseconds(
        std::max<std::uint64_t>(1, FLAGS_fiber_release_delay_ms));
    RegisterIdleRelease(&Pool(), period, [] {
      const std::size_t idle = Pool().TakeLowWater();
      if (idle <= kKeep) return;
      for (T* object : Pool().TakeOldest(kKeep, idle - kKeep)) Destroy(object);
      // glibc gives free memory back only from the top of a heap; a burst's objects
      // are interleaved with live ones, so their pages would stay resident.
      malloc_trim(0);
    });
  }

  static BatchPool<T*>& Pool() {
    static auto* pool = new BatchPool<T*>(kBatch);  // never destroyed: threads outlive it
    return *pool;
  }
  // This thread's cache; nullptr once it was destroyed at thread exit.
  static std::vector<T*>* ThisThread() {
    if (__builtin_expect(tls_cache_gone_, 0)) return nullptr;
    thread_local Cache cache;
    return &cache.free;
  }
};

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_
