// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_
#define SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
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
    OsMutexGuard lock(lock_);
    items_.insert(items_.end(), items->begin(), items->end());
    items->clear();
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
    return std::move(items_);
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
    std::vector<T> spill(cache->end() - batch_size_, cache->end());
    cache->resize(cache->size() - batch_size_);
    return GiveBatch(&spill);
  }

 private:
  const std::size_t batch_size_;
  mutable OsMutex lock_;
  std::vector<T> items_ ABSL_GUARDED_BY(lock_);  // oldest first
  std::size_t low_water_ ABSL_GUARDED_BY(lock_) = 0;  // see TakeLowWater()
};

// new and delete for small objects that one thread allocates and another frees, many
// per second (fiber descriptors, join states): a plain new/delete makes malloc pay for
// a cross-thread free each time (a quarter of 1M spawns' time in _int_malloc/_int_free).
// Each thread keeps a cache of free objects and trades batches with one BatchPool per
// type. The pool keeps kKeep objects for good; beyond that, objects that sat in it
// unused for --fiber_release_delay_ms go back to malloc (idle_release.h), so a burst of
// 100k fibers does not pin 100k descriptors for the life of the process. Delete() does
// not destroy: the caller resets the object first, and New()
// hands it out as it was left (a default-constructed one when the caches are empty).
// Under a sanitizer it is plain new/delete, so each lifetime is visible. Thread-safe;
// New() and Delete() do not switch fibers, so their thread-local cache is not read
// across a switch.
template <class T>
class PooledObjects {
 public:
  static T* New() {
    if (kUnderSanitizer) return new T;
    std::vector<T*>& cache = ThisThread();
    if (cache.empty() && !Pool().TakeBatch(&cache)) return new T;
    T* object = cache.back();
    cache.pop_back();
    return object;
  }
  static void Delete(T* object) {
    if (kUnderSanitizer) {
      delete object;
      return;
    }
    std::vector<T*>& cache = ThisThread();
    cache.push_back(object);
    if (Pool().SpillIfFull(&cache) > kKeep) RegisterRelease();
  }

  static constexpr std::size_t kKeep = 4096;

 private:
  static constexpr std::size_t kBatch = 64;
  struct Cache {
    std::vector<T*> free;
    ~Cache() {
      if (!free.empty()) Pool().GiveBatch(&free);
    }
  };
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
      for (T* object : Pool().TakeOldest(kKeep, idle - kKeep)) delete object;
      // glibc gives free memory back only from the top of a heap; a burst's objects
      // are interleaved with live ones, so their pages would stay resident.
      malloc_trim(0);
    });
  }

  static BatchPool<T*>& Pool() {
    static auto* pool = new BatchPool<T*>(kBatch);  // never destroyed: threads outlive it
    return *pool;
  }
  static std::vector<T*>& ThisThread() {
    thread_local Cache cache;
    return cache.free;
  }
};

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_
