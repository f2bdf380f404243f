// Copyright 2026 The Spindle Authors.
//
// All state is under lock_, and waiters link into their queue under it, so every
// release (unlock, unlock_shared) sees the waiters it must wake. A writer waits in
// 1 ms slices: after the first slice it counts itself starving, which stops new readers
// (ReadersMayEnter) until it gets the lock.

#include "sync/shared_mutex.h"

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "fiber/internal/debug_info.h"
#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"

namespace spindle {

bool SharedMutex::ReadersMayEnter() const { return !writer_ && starving_writers_ == 0; }

void SharedMutex::lock() {
  internal::UniqueSpinlockGuard guard(lock_);
  bool starving = false;
  while (writer_ || readers_ != 0) {
    const auto result = writer_queue_.Wait(
        guard.unique(), internal::MonotonicDeadline::In(std::chrono::milliseconds(1)),
        internal::WaitKind::kSharedMutex, /*limits=*/nullptr, this);
    if (result == internal::WaitResult::kTimedOut && !starving) {
      starving = true;
      ++starving_writers_;
    }
  }
  if (starving) --starving_writers_;
  writer_ = true;
  // relaxed: a record for debugging (see writer_owner_), under lock_.
  writer_owner_.store(internal::CurrentLockOwnerId(), std::memory_order_relaxed);
}

bool SharedMutex::try_lock() {
  internal::SpinlockGuard guard(lock_);
  if (writer_ || readers_ != 0) return false;
  writer_ = true;
  // relaxed: as in lock().
  writer_owner_.store(internal::CurrentLockOwnerId(), std::memory_order_relaxed);
  return true;
}

void SharedMutex::unlock() {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  CHECK(writer_) << "spindle::SharedMutex::unlock() without holding it exclusively";
  writer_ = false;
  writer_owner_.store(0, std::memory_order_relaxed);  // relaxed: as in lock()
  // Read priority: waiting readers go first, unless a writer is starving.
  if (ReadersMayEnter() && !reader_queue_.empty()) {
    reader_queue_.WakeAll();
  } else {
    writer_queue_.WakeOne();
  }
}

void SharedMutex::lock_shared() {
  internal::UniqueSpinlockGuard guard(lock_);
  while (!ReadersMayEnter()) {
    reader_queue_.Wait(guard.unique(), internal::MonotonicDeadline::None(),
                       internal::WaitKind::kSharedMutex, /*limits=*/nullptr, this);
  }
  ++readers_;
}

bool SharedMutex::try_lock_shared() {
  internal::SpinlockGuard guard(lock_);
  if (!ReadersMayEnter()) return false;
  ++readers_;
  return true;
}

void SharedMutex::unlock_shared() {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  CHECK_GT(readers_, 0u) << "spindle::SharedMutex::unlock_shared() without a shared hold";
  if (--readers_ == 0) writer_queue_.WakeOne();
}

// Where a SharedMutex keeps its holder, for debuggers (fiber/internal/debug_info.h). SharedMutex is
// not standard-layout (private members): offsetof is conditionally supported, and GCC
// and Clang give the layout they use, which is what a debugger reads.
struct SharedMutexDebugLayout {
  static std::uint64_t OwnerOffset() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
    return offsetof(SharedMutex, writer_owner_);
#pragma GCC diagnostic pop
  }
};

namespace {

// Static initialisation: written before main() in every program that links SharedMutex.
[[maybe_unused]] const bool g_owner_offset_published = [] {
  spindle_debug_info.shared_mutex_owner_offset_plus_one = SharedMutexDebugLayout::OwnerOffset() + 1;
  return true;
}();

}  // namespace

}  // namespace spindle
