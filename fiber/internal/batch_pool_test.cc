// Copyright 2026 The Spindle Authors.

#include "fiber/internal/batch_pool.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "gflags/gflags.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

// Counts its constructions and destructions; `mark` shows what a reuse keeps.
struct Counted {
  static std::atomic<int> constructed;
  static std::atomic<int> destroyed;
  Counted() noexcept { constructed.fetch_add(1, std::memory_order_relaxed); }
  ~Counted() { destroyed.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t mark = 0;
  char payload[88];
};
std::atomic<int> Counted::constructed{0};
std::atomic<int> Counted::destroyed{0};

// A second type, so each test starts from empty caches and an empty pool; it counts
// its own destructions (the release thread may destroy idle Counted objects that
// other tests left while this type's test runs, under --gtest_repeat).
struct Released {
  static std::atomic<int> destroyed;
  ~Released() { destroyed.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t mark = 0;
  char payload[88];
};
std::atomic<int> Released::destroyed{0};

TEST(PooledObjectsTest, ObjectsAreDistinctAlignedAndReusedAsLeft) {
  std::vector<Counted*> objects;
  std::set<Counted*> distinct;
  for (int i = 0; i < 1000; ++i) {
    Counted* object = PooledObjects<Counted>::New();
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(object) % alignof(Counted), 0u);
    object->mark = static_cast<std::uint64_t>(i) + 1;
    EXPECT_TRUE(distinct.insert(object).second) << "handed out twice: " << object;
    objects.push_back(object);
  }
  // Every live object keeps what was written to it (no two overlap).
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(objects[i]->mark, static_cast<std::uint64_t>(i) + 1);
  Counted* last = objects.back();
  PooledObjects<Counted>::Delete(last);
  objects.pop_back();
  if (!kUnderSanitizer) {
    // The thread's cache hands the freed object out next, as it was left.
    Counted* again = PooledObjects<Counted>::New();
    EXPECT_EQ(again, last);
    EXPECT_EQ(again->mark, 1000u);
    objects.push_back(again);
  }
  for (Counted* object : objects) PooledObjects<Counted>::Delete(object);
}

// A third type: its first New() makes its first slab.
struct Slabbed : Counted {};

TEST(PooledObjectsTest, ASlabIsFreedWithItsLastObjectAndNotBefore) {
  if (kUnderSanitizer) GTEST_SKIP() << "plain new/delete under a sanitizer";
  using Pool = PooledObjects<Slabbed>;
  constexpr std::size_t kPerSlab = Pool::objects_per_slab();
  static_assert(kPerSlab >= 8);
  // Whatever this thread's cache holds (from an earlier --gtest_repeat round) first:
  // the object that makes a new slab is that slab's first, the cache then holds exactly
  // the rest of it.
  const std::size_t before = Pool::live_slabs();
  std::vector<Slabbed*> drained;
  while (Pool::live_slabs() == before) drained.push_back(Pool::New());
  std::vector<Slabbed*> slab = {drained.back()};
  drained.pop_back();
  for (std::size_t i = 1; i < kPerSlab; ++i) slab.push_back(Pool::New());
  EXPECT_EQ(Pool::live_slabs(), before + 1) << "one slab gives " << kPerSlab << " objects";
  Slabbed* next = Pool::New();  // the next slab's first
  EXPECT_EQ(Pool::live_slabs(), before + 2);
  // The first slab's objects but one are destroyed: it stays, and the survivor with it.
  slab.back()->mark = 42;
  for (std::size_t i = 0; i + 1 < kPerSlab; ++i) Pool::DestroyForTesting(slab[i]);
  EXPECT_EQ(Pool::live_slabs(), before + 2) << "a slab was freed with an object still in it";
  EXPECT_EQ(slab.back()->mark, 42u);
  Pool::DestroyForTesting(slab.back());
  EXPECT_EQ(Pool::live_slabs(), before + 1) << "a slab outlived its last object";
  Pool::Delete(next);  // back to the thread's cache with the rest of its slab
  for (Slabbed* object : drained) Pool::Delete(object);
  EXPECT_EQ(Pool::live_slabs(), before + 1);
}

// A fourth type, and a thread_local whose destructor allocates and frees it: built
// before the thread's cache, so destroyed after it.
struct Late : Counted {};
struct LateUser {
  ~LateUser() {
    Late* object = PooledObjects<Late>::New();
    object->mark = 7;
    PooledObjects<Late>::Delete(object);
    PooledObjects<Late>::Delete(kept);
  }
  Late* kept = nullptr;
};

TEST(PooledObjectsTest, AThreadLocalDestroyedAfterTheCacheStillAllocatesAndFrees) {
  if (kUnderSanitizer) GTEST_SKIP() << "plain new/delete under a sanitizer";
  const std::size_t pooled_before = PooledObjects<Late>::pooled_for_testing();
  std::thread thread([] {
    thread_local LateUser user;  // first: destroyed last
    user.kept = PooledObjects<Late>::New();  // builds the thread's cache after `user`
  });
  thread.join();
  // Every object the thread had is in the pool again: the cache gave back what it
  // held, then the late destructor's two frees went to the pool too (into the dead
  // cache, they were lost or worse). A first round made a slab (its other objects came
  // along); a later one (--gtest_repeat) took a batch from the pool.
  const std::size_t per_slab = PooledObjects<Late>::objects_per_slab();
  EXPECT_EQ(PooledObjects<Late>::pooled_for_testing(),
            pooled_before == 0 ? per_slab : pooled_before);
}

TEST(PooledObjectsTest, IdleObjectsBeyondTheKeptOnesAreDestroyed) {
  if (kUnderSanitizer) GTEST_SKIP() << "plain new/delete under a sanitizer";
  FLAGS_fiber_release_delay_ms = 1;
  constexpr int kCount = 3 * static_cast<int>(PooledObjects<Released>::kKeep);
  const int destroyed_before = Released::destroyed.load();
  // Slabs alive before: none in a fresh process; with --gtest_repeat, those of the
  // objects the previous repetition left kept (reused first here, so their slabs may
  // stay partly filled).
  const std::size_t slabs_before = PooledObjects<Released>::live_slabs();
  std::vector<Released*> objects;
  for (int i = 0; i < kCount; ++i) objects.push_back(PooledObjects<Released>::New());
  // Freed on another thread, as a worker frees what a spawner allocated.
  std::thread freer([&] {
    for (Released* object : objects) PooledObjects<Released>::Delete(object);
  });
  freer.join();
  // The release thread destroys what sat idle beyond kKeep (the freer's cache went to
  // the pool when it exited), and frees each slab with its last object (a slab freed
  // early would corrupt the objects still kept, checked below).
  const int expected = kCount - static_cast<int>(PooledObjects<Released>::kKeep);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Released::destroyed.load() - destroyed_before < expected &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(Released::destroyed.load() - destroyed_before, expected);
  // Their slabs went back to malloc: what stays fits a few slabs more than it fills
  // (the kept objects are the last freed, from consecutive slabs). Had no slab been
  // freed, the 3 * kKeep objects' slabs would all stay, three times as many.
  // (Repeated 200 times in one process, the slabs left after each repetition stayed
  // within 110-115, against 109 for the first: leftovers are reused, not piled up.)
  const std::size_t per_slab = PooledObjects<Released>::objects_per_slab();
  EXPECT_LE(PooledObjects<Released>::live_slabs(),
            slabs_before + (PooledObjects<Released>::kKeep + 2 * per_slab) / per_slab + 2);
  // What stays is still handed out, whole.
  std::vector<Released*> kept;
  for (std::size_t i = 0; i < PooledObjects<Released>::kKeep; ++i) {
    kept.push_back(PooledObjects<Released>::New());
    kept.back()->mark = i;
  }
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i]->mark, i);
  for (Released* object : kept) PooledObjects<Released>::Delete(object);
}

}  // namespace
}  // namespace spindle::internal
