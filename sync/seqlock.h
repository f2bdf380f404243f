// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_SEQLOCK_H_
#define SPINDLE_SYNC_SEQLOCK_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "fiber/internal/spinlock.h"
#include "sync/mutex.h"

namespace spindle {

// A sequence lock around a small trivially copyable value: writers serialise on a
// Mutex and never wait for readers (write priority); readers take no lock, and retry
// when a write overlapped their read, so they never return a torn value. Fibers and
// plain threads alike. The value is kept as atomic words, so a read racing a write is
// not a data race. Thread-safe.
template <class T>
class SeqLock {
  static_assert(std::is_trivially_copyable_v<T>, "SeqLock<T> needs a trivially copyable T");
  static constexpr std::size_t kWords = (sizeof(T) + 7) / 8;

 public:
  // Holds `initial` (T() by default).
  explicit SeqLock(const T& initial = T()) { Write(initial); }
  SeqLock(const SeqLock&) = delete;
  SeqLock& operator=(const SeqLock&) = delete;

  // The value of the last Store() (or the initial one), never torn. Takes no lock and
  // never parks: while a Store() is writing it spins (busy-waits), and it retries while
  // stores keep overlapping its read, so a stream of writes can hold it up. Thread-safe.
  T Load() const {
    std::uint64_t words[kWords];
    for (;;) {
      // acquire: pairs with the release increment that ends a write; an even value
      // means no write was in progress when we started.
      const std::uint64_t before = sequence_.load(std::memory_order_acquire);
      if (before & 1) {
        internal::CpuRelax();
        continue;
      }
      for (std::size_t i = 0; i < kWords; ++i) {
        // acquire: pairs with the writer's release store of the word; a word from a
        // newer write carries that write's odd sequence with it, so the re-read below
        // cannot still see `before`.
        words[i] = words_[i].load(std::memory_order_acquire);
      }
      // relaxed: ordered after the word loads by their acquire.
      if (sequence_.load(std::memory_order_relaxed) == before) break;
    }
    T value;
    std::memcpy(&value, words, sizeof(T));
    return value;
  }

  // Replaces the value. Stores serialise on a Mutex (a fiber parks, a thread blocks,
  // while another Store() runs); a store never waits for readers. Thread-safe.
  void Store(const T& value) {
    std::lock_guard<Mutex> guard(writer_);
    Write(value);
  }

 private:
  void Write(const T& value) {
    std::uint64_t words[kWords] = {};
    std::memcpy(words, &value, sizeof(T));
    // relaxed: made visible by the release stores of the words that follow.
    sequence_.store(sequence_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < kWords; ++i) {
      // release: a reader that sees this word also sees the odd sequence above.
      words_[i].store(words[i], std::memory_order_release);
    }
    // release: pairs with the readers' acquire load of the sequence.
    sequence_.store(sequence_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  Mutex writer_;
  std::atomic<std::uint64_t> sequence_{0};  // odd while a write is in progress
  std::atomic<std::uint64_t> words_[kWords];
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_SEQLOCK_H_
