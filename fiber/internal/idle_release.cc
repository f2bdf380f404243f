// Copyright 2026 The Spindle Authors.

#include "fiber/internal/idle_release.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/os_mutex.h"
#include "gflags/gflags.h"

DEFINE_uint64(fiber_release_delay_ms, 1000,
              "How long memory that a burst of fibers left behind (idle stacks beyond "
              "--fiber_stack_pool_idle_max, pooled descriptors) stays unused before it is "
              "given back to the system (default 1000 ms). 0: stacks at once, by the "
              "thread that frees them, which makes bursts that recur pay to fault their "
              "stacks in again. Range [0, 3600000].");

namespace spindle::internal {
namespace {

constexpr std::uint64_t kMaxReleaseDelayMs = 3600 * 1000;

class IdleReleaser {
 public:
  void Register(const void* owner, std::chrono::milliseconds period,
                std::function<void()> fn) {
    OsMutexGuard lock(mutex_);
    for (const Entry& entry : entries_) {
      if (entry.owner == owner) return;
    }
    entries_.push_back(
        Entry{owner, period, std::chrono::steady_clock::now() + period, std::move(fn)});
    if (!started_) {
      // Never joined: the process-wide releaser lives until exit, parked on cv_.
      std::thread([this] { Loop(); }).detach();
      started_ = true;
    }
    cv_.notify_all();
  }

  void Unregister(const void* owner) {
    UniqueOsMutexGuard lock(mutex_);
    while (running_ == owner) cv_.wait(lock.unique());
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->owner == owner) {
        entries_.erase(it);
        break;
      }
    }
  }

 private:
  struct Entry {
    const void* owner;
    std::chrono::milliseconds period;
    std::chrono::steady_clock::time_point due;
    std::function<void()> fn;
  };

  void Loop() {
    pthread_setname_np(pthread_self(), "spindle-release");
    UniqueOsMutexGuard lock(mutex_);
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      Entry* next = nullptr;
      for (Entry& entry : entries_) {
        if (next == nullptr || entry.due < next->due) next = &entry;
      }
      if (next == nullptr) {
        cv_.wait(lock.unique());
        continue;
      }
      if (next->due > now) {
        cv_.wait_until(lock.unique(), next->due);
        continue;  // the list may have changed meanwhile
      }
      next->due = now + next->period;
      const void* owner = next->owner;
      std::function<void()> fn = next->fn;  // a copy: Unregister may erase the entry
      running_ = owner;
      lock.unlock();
      fn();
      lock.lock();
      running_ = nullptr;
      cv_.notify_all();
    }
  }

  OsMutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mutex_);
  const void* running_ ABSL_GUARDED_BY(mutex_) = nullptr;  // whose function runs now
  bool started_ ABSL_GUARDED_BY(mutex_) = false;            // the thread never ends
};

IdleReleaser& Releaser() {
  static auto* const releaser = new IdleReleaser;  // never destroyed: see Register()
  return *releaser;
}

}  // namespace

void RegisterIdleRelease(const void* owner, std::chrono::milliseconds period,
                         std::function<void()> fn) {
  Releaser().Register(owner, period, std::move(fn));
}

void UnregisterIdleRelease(const void* owner) { Releaser().Unregister(owner); }

std::string ValidateReleaseDelay(std::uint64_t delay_ms) {
  if (delay_ms <= kMaxReleaseDelayMs) return "";
  return "--fiber_release_delay_ms=" + std::to_string(delay_ms) +
         " is invalid: expected milliseconds in [0, " + std::to_string(kMaxReleaseDelayMs) +
         "]";
}

}  // namespace spindle::internal
