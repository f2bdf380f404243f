// Copyright 2026 The Spindle Authors.

#include "fiber/internal/stack_registry.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/os_mutex.h"

namespace spindle::internal {
namespace {

// Every stack created and not yet destroyed, for the fiber dump, as regions: an mmapped
// stack is a region of one, a slab a region of its carved slots (so a slab costs one
// entry, not one per stack: 100k registered stacks took 8 MB of map nodes). Stacks are
// created and destroyed rarely (they are recycled through caches), so mutexes are
// enough. Two of them, because a worker may create a stack while it holds a fiber's
// scheduler lock (ParkFiber() instantiates the next fiber before its lock is released)
// and a dump waits for scheduler locks: the dump holds `walk_mutex_`, which only
// Remove() (a stack being freed, never under a scheduler lock) also takes, and holds
// `list_mutex_`, which Add() and Grow() take, only to copy the list.
//
// It keeps the same regions as a plain array for debuggers (spindle_debug_stacks,
// debug_info.h), in the same critical sections: appended to, updated in place, and
// a removed entry replaced by the last one. A full array is copied into one twice its
// size, published, and only then freed, so a process stopped anywhere shows a
// debugger a whole array.
class StackRegistry {
 public:
  struct Region {
    Stack first;            // the lowest stack of the region
    std::size_t stride;     // from one stack's base to the next one's
    std::size_t count;      // stacks in it
    std::size_t mirror;     // its entry in spindle_debug_stacks.regions
  };

  void Add(const Stack& stack, std::size_t stride, std::size_t count) {
    OsMutexGuard lock(list_mutex_);
    const std::size_t mirror = MirrorAppend(SpindleDebugStackRegion{
        reinterpret_cast<std::uint64_t>(stack.base), stack.size, stride, count});
    regions_[stack.base] = Region{stack, stride, count, mirror};
  }
  // The region starting at `first_base` now holds `count` stacks.
  void Grow(char* first_base, std::size_t count) {
    OsMutexGuard lock(list_mutex_);
    Region& region = regions_[first_base];
    region.count = count;
    spindle_debug_stacks.regions[region.mirror].count = count;
    ++spindle_debug_stacks.generation;
  }
  void Remove(char* first_base) {
    OsMutexGuard walk(walk_mutex_);
    OsMutexGuard lock(list_mutex_);
    const auto it = regions_.find(first_base);
    if (it == regions_.end()) return;
    MirrorRemove(it->second.mirror);
    regions_.erase(it);
  }
  void ForEach(const std::function<void(const Stack&)>& fn) {
    OsMutexGuard walk(walk_mutex_);
    std::vector<Region> regions;
    {
      OsMutexGuard lock(list_mutex_);
      regions.reserve(regions_.size());
      for (const auto& [base, region] : regions_) regions.push_back(region);
    }
    for (const Region& region : regions) {
      Stack stack = region.first;
      for (std::size_t i = 0; i < region.count; ++i) {
        fn(stack);
        stack.base += region.stride;
      }
    }
  }

 private:
  std::size_t MirrorAppend(const SpindleDebugStackRegion& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(list_mutex_) {
    SpindleDebugStacks& mirror = spindle_debug_stacks;
    if (mirror.count == mirror.capacity) {
      const std::size_t capacity = mirror.capacity == 0 ? 16 : 2 * mirror.capacity;
      auto* grown = new SpindleDebugStackRegion[capacity];
      std::copy(mirror.regions, mirror.regions + mirror.count, grown);
      SpindleDebugStackRegion* old = mirror.regions;
      mirror.regions = grown;
      mirror.capacity = capacity;
      delete[] old;
    }
    mirror.regions[mirror.count] = entry;
    ++mirror.count;
    ++mirror.generation;
    return mirror.count - 1;
  }
  // Fills entry `index` with the last one (whose region is told its new place).
  void MirrorRemove(std::size_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(list_mutex_) {
    SpindleDebugStacks& mirror = spindle_debug_stacks;
    const std::size_t last = mirror.count - 1;
    if (index != last) {
      mirror.regions[index] = mirror.regions[last];
      regions_[reinterpret_cast<char*>(mirror.regions[index].first_base)].mirror = index;
    }
    mirror.count = last;
    ++mirror.generation;
  }

  OsMutex walk_mutex_;
  OsMutex list_mutex_;
  std::map<char*, Region> regions_ ABSL_GUARDED_BY(list_mutex_);
};


StackRegistry& Registry() {
  static auto* const registry = new StackRegistry;  // never destroyed
  return *registry;
}

}  // namespace
}  // namespace spindle::internal

// Written only by the StackRegistry, under its lock (see there).
SpindleDebugStacks spindle_debug_stacks = {nullptr, 0, 0, 0};

namespace spindle::internal {

void RegisterStacks(const Stack& first, std::size_t stride, std::size_t count) {
  Registry().Add(first, stride, count);
}

void GrowRegisteredStacks(char* first_base, std::size_t count) {
  Registry().Grow(first_base, count);
}

void UnregisterStacks(char* first_base) { Registry().Remove(first_base); }

void ForEachRegisteredStack(const std::function<void(const Stack&)>& fn) {
  Registry().ForEach(fn);
}

}  // namespace spindle::internal
