// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_INTERNAL_REACTOR_H_
#define SPINDLE_IO_INTERNAL_REACTOR_H_

#include <sys/epoll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/internal/idle/group_poller.h"

namespace spindle::io::internal {

// Counters of one reactor (relaxed snapshots).
struct ReactorStats {
  std::uint64_t polls = 0;          // epoll_wait calls
  std::uint64_t blocking_polls = 0;  // of which could block (an idle worker's sleep)
  std::uint64_t events = 0;         // descriptor events returned
  std::uint64_t interrupts = 0;     // Interrupt() calls (eventfd writes)
  std::int64_t registered = 0;      // descriptors registered now
};

// One epoll instance per scheduling group (by the group's index), plus an eventfd that
// interrupts a blocked epoll_wait. The design is at the top of reactor.cc. Reactors
// live as long as the process: a group points at its reactor (SetPoller) and
// descriptors registered under one runtime stay valid under the next.
//
// Thread-safety: see GroupPoller; Register/Unregister from any thread.
class Reactor final : public spindle::internal::GroupPoller {
 public:
  // The reactor of scheduling group `index` of the running runtime, created on first
  // use and attached to the group as its poller (poller_host.h).
  static Reactor* ForGroup(std::size_t index);
  // The reactor at `index`, or null if none was created.
  static Reactor* AtIndex(std::size_t index);

  // Registers `fd` once, edge-triggered, for reading, writing and peer half-close, with
  // `tag` as its epoll data. Returns 0 or an errno value.
  int Register(int fd, std::uint64_t tag);
  // Tests: the next `count` Register() calls (of any reactor) fail with `error` without
  // calling epoll_ctl (ENOSPC and ENOMEM cannot be provoked on demand).
  static void FailRegistrationsForTesting(int error, int count);
  // Removes `fd` (before it is closed).
  void Unregister(int fd);

  std::size_t index() const { return index_; }
  ReactorStats stats() const;
  Counters counters() const override;

  // GroupPoller.
  bool HasInterest() const override {
    return registered_.load(std::memory_order_relaxed) > 0;  // relaxed: a hint
  }
  bool Wait(spindle::internal::MonotonicDeadline deadline, std::size_t max_events) override;
  using GroupPoller::Wait;
  void Dispatch() override;
  void Interrupt() override;

 private:
  explicit Reactor(std::size_t index);
  ~Reactor() override = default;  // never destroyed

  static constexpr int kMaxEvents = 256;

  const std::size_t index_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  // Holder only (the token): what Wait() kept for Dispatch().
  epoll_event events_[kMaxEvents];
  int pending_ = 0;
  std::atomic<std::int64_t> registered_{0};
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> blocking_polls_{0};
  std::atomic<std::uint64_t> events_count_{0};
  std::atomic<std::uint64_t> interrupts_{0};
};

}  // namespace spindle::io::internal

#endif  // SPINDLE_IO_INTERNAL_REACTOR_H_
