// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_
#define SPINDLE_FIBER_INTERNAL_BATCH_POOL_H_

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <vector>

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
    std::lock_guard<std::mutex> lock(lock_);
    if (items_.empty()) return false;
    const std::size_t n = std::min(batch_size_, items_.size());
    out->insert(out->end(), items_.end() - n, items_.end());
    items_.resize(items_.size() - n);
    return true;
  }

  // Moves all of `items` into the pool.
  void GiveBatch(std::vector<T>* items) {
    std::lock_guard<std::mutex> lock(lock_);
    items_.insert(items_.end(), items->begin(), items->end());
    items->clear();
  }

  // Moves everything out (for the owner's destructor).
  std::vector<T> TakeAll() {
    std::lock_guard<std::mutex> lock(lock_);
    return std::move(items_);
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(lock_);
    return items_.size();
  }

  // For a thread cache: if `cache` holds two batches or more, gives one batch back.
  // Returns whether it did.
  bool SpillIfFull(std::vector<T>* cache) {
    if (cache->size() < 2 * batch_size_) return false;
    std::vector<T> spill(cache->end() - batch_size_, cache->end());
    cache->resize(cache->size() - batch_size_);
    GiveBatch(&spill);
    return true;
  }

 private:
  const std::size_t batch_size_;
  mutable std::mutex lock_;
  std::vector<T> items_;  // guarded by lock_
};

// new and delete for small objects that one thread allocates and another frees, many
// per second (fiber descriptors, join states): a plain new/delete makes malloc pay for
// a cross-thread free each time (a quarter of 1M spawns' time in _int_malloc/_int_free).
// Each thread keeps a cache of free objects and trades batches with one BatchPool per
// type. Objects are never returned to malloc: the pool holds as many as were ever in
// use at once. Delete() does not destroy: the caller resets the object first, and New()
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
    Pool().SpillIfFull(&cache);
  }

 private:
  static constexpr std::size_t kBatch = 64;
  struct Cache {
    std::vector<T*> free;
    ~Cache() {
      if (!free.empty()) Pool().GiveBatch(&free);
    }
  };
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
