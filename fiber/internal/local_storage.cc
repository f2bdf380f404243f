// Copyright 2026 The Spindle Authors.

#include "fiber/internal/local_storage.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <queue>
#include <vector>

#include "glog/logging.h"

namespace spindle::internal {
namespace {

// One index space: the free indices (lowest first) and the next never-used one.
// Allocation is rare (a FiberLocal's construction): a mutex is enough.
struct KeyIndexSpace {
  std::mutex mutex;
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> free;
  std::uint32_t next_unused = 0;
};

KeyIndexSpace& IndexSpace(LocalKeySpace space) {
  // Leaked on purpose: keys of static FiberLocals are freed during static destruction.
  static auto* const spaces = new KeyIndexSpace[2];
  return spaces[space == LocalKeySpace::kFiber ? 0 : 1];
}

// Generations shared by both spaces; starts at 1 so that 0 never names a key.
std::atomic<std::uint64_t> g_next_generation{1};

}  // namespace

LocalKey AllocateLocalKey(LocalKeySpace space) {
  KeyIndexSpace& keys = IndexSpace(space);
  LocalKey key;
  // relaxed: only uniqueness matters; the key reaches other threads through whatever
  // publishes the FiberLocal that holds it.
  key.generation = g_next_generation.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(keys.mutex);
  if (!keys.free.empty()) {
    key.index = keys.free.top();
    keys.free.pop();
  } else {
    CHECK_LT(keys.next_unused, UINT32_MAX) << "fiber-local keys exhausted";
    key.index = keys.next_unused++;
  }
  return key;
}

void FreeLocalKey(LocalKeySpace space, LocalKey key) {
  KeyIndexSpace& keys = IndexSpace(space);
  std::lock_guard<std::mutex> lock(keys.mutex);
  keys.free.push(key.index);
}

FiberLocalStorage::~FiberLocalStorage() {
  DCHECK_EQ(live_, 0u) << "fiber-local values were not destroyed";
  delete[] overflow_;
}

LocalBox** FiberLocalStorage::GrowOverflow(std::uint32_t index) {
  const std::uint32_t wanted = index - kInlineSlots + 1;
  if (wanted > overflow_size_) {
    const std::uint32_t size = std::max<std::uint32_t>(wanted, overflow_size_ * 2);
    auto* grown = new LocalBox*[size]();
    if (overflow_size_ != 0) {
      std::memcpy(grown, overflow_, overflow_size_ * sizeof(LocalBox*));
    }
    delete[] overflow_;
    overflow_ = grown;
    overflow_size_ = size;
  }
  return &overflow_[index - kInlineSlots];
}

void FiberLocalStorage::Install(LocalBox** slot, LocalBox* box) {
  LocalBox* stale = *slot;
  *slot = box;
  if (stale == nullptr) {
    ++live_;
  } else {
    stale->destroy(stale);  // last: its destructor may touch other slots
  }
}

void FiberLocalStorage::MoveTo(FiberLocalStorage* to) {
  DCHECK(to->empty() && to->overflow_ == nullptr);
  std::memcpy(to->inline_slots_, inline_slots_, sizeof(inline_slots_));
  std::memset(inline_slots_, 0, sizeof(inline_slots_));
  to->overflow_ = std::exchange(overflow_, nullptr);
  to->overflow_size_ = std::exchange(overflow_size_, 0);
  to->live_ = std::exchange(live_, 0);
  to->execution_context_ = std::exchange(execution_context_, nullptr);
  to->wait_limits_ = std::exchange(wait_limits_, nullptr);
}

void FiberLocalStorage::DestroyValuesSlow(std::uint64_t fiber_id) {
  // A destructor may read or create other fiber-locals: each value leaves its slot
  // before its destructor runs, and a value created meanwhile is found by the next pass.
  for (int pass = 0; pass < kDestructorPasses && live_ != 0; ++pass) {
    for (std::uint32_t i = 0; i < kInlineSlots + overflow_size_ && live_ != 0; ++i) {
      LocalBox** slot = i < kInlineSlots ? &inline_slots_[i] : &overflow_[i - kInlineSlots];
      LocalBox* box = std::exchange(*slot, nullptr);
      if (box == nullptr) continue;
      --live_;
      box->destroy(box);
    }
  }
  if (live_ != 0) {
    LOG(ERROR) << "fiber " << fiber_id << ": " << live_
               << " fiber-local values leaked: their destructors kept creating values "
                  "through "
               << kDestructorPasses << " passes";
    std::memset(inline_slots_, 0, sizeof(inline_slots_));
    live_ = 0;
  }
  delete[] overflow_;
  overflow_ = nullptr;
  overflow_size_ = 0;
}

}  // namespace spindle::internal
