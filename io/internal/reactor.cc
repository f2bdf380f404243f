// Copyright 2026 The Spindle Authors.
//
// The reactor: how a fiber waiting for a socket gets back to a worker, and why an idle
// runtime with 10,000 idle connections costs nothing.
//
// What the anchors do (../shared/reference/io_and_v2.md §3):
// - tRPC-Cpp v2 keeps a reactor fiber in its own queue; only a worker about to sleep
//   runs it, epoll_wait(5 ms) in a loop: ~200 wake-ups/s per idle reactor, and under
//   saturation nobody polls (network events wait for a worker to go idle).
// - flare (= tRPC v1) runs an event-loop fiber as an ordinary queue entry, epoll 5 ms
//   then yield: the same idle cost, and the loop competes with user fibers.
// - brpc's EventDispatcher blocks a whole worker pthread in epoll_wait(-1): no idle
//   cost, but that thread is lost to fibers, and when all others block the dispatcher
//   cannot help (brpc #452).
// - Go folds polling into the scheduler's idle path: an M with nothing to run blocks in
//   netpoll until the next timer if it wins `sched.lastpoll`, and work submitted
//   meanwhile breaks that wait through an eventfd (netpollBreak); busy Ps poll without
//   blocking, and sysmon polls if nobody did for 10 ms.
//
// We follow Go. The "reactor fiber" of the design (seed 003, point 4) is not a queue
// entry at all: polling is a way for an idle worker to sleep, so isolation holds by
// construction (nothing any worker pops is a reactor), and:
// R1. A worker whose strategy decided to sleep (W4 of v1 or v2, after the announce and
//     the re-check) and that wins the group's poller token, while descriptors are
//     registered, sleeps in epoll_wait instead of its futex (IdlePath::SleepOnSlot,
//     WaitSlot::WaitPolling). At most one thread per group is there; every other idle
//     worker sleeps on its futex. With no timers in the reactor (timers live in the
//     group's TimerWorker) it waits with no time-out: idle cost zero.
// R2. To the strategies the poller is an ordinary sleeper: its sleeping bit is set, and
//     a producer that picks it calls the same WaitSlot::Wake(), which sees that the
//     owner sleeps in the poller and calls Interrupt() (an eventfd write) instead of a
//     futex wake. So a fiber made ready by a timer, a mutex or another thread while the
//     poller blocks runs at once; no wake-up protocol changed, only the sleep.
// R3. Events: the poller dispatches them as it wakes (Descriptor::OnEvents), making the
//     waiting fibers ready through their groups' usual path (TimedWaiter::Notify), whose
//     wake-ups bring sleeping siblings to run them.
// R4. Hand-off: a poller woken for work (not for events) leaves the token free while
//     its siblings sleep on futexes; it then wakes one sleeper (after clearing its own
//     sleeping bit), which finds nothing, sleeps again and takes the token. Without
//     this a long-running fiber on the former poller would delay every network event.
// R5. Busy workers: every 16th fiber switch (BusyPoll::kPollEvery) a worker looks at
//     the clock, and if nobody holds the token and nobody polled for 100 us
//     (GroupPoller::kBusyPollIntervalNs), polls without blocking (in ParkFiber() by a
//     detour through the worker's loop, where no fiber lock is held). This is Go's
//     "busy Ps poll", and it closes tRPC v2's saturation hole. A fiber that never
//     switches still blocks its own worker (no preemption), but not the others.
//     A busy poll takes at most as many events as the worker's own queue has room for
//     (SchedulingStrategy::PollBudget; v2: its local queue), and none when it is full:
//     the events left stay on the epoll ready list, in order, and the next poll (this
//     worker's, once it has room, or an idle sibling's) takes them, so none is lost.
//     Why: v2 queues the woken fibers on the polling worker, and past its local queue's
//     room the oldest half moved to the global queue, which busy workers look at only
//     every 61st take; at 1,024 HTTP connections on 2 workers that tail made p99 40-56
//     ms, with the budget 17-18 ms (and more requests a second).
//
// Registration: once per descriptor, edge-triggered, EPOLLIN|EPOLLOUT|EPOLLRDHUP, on
// its first wait from a fiber, with the reactor of that fiber's group (so a connection
// lives on the NUMA node of the group that serves it). The epoll data is the
// descriptor's (index, generation) tag; stale tags are dropped (descriptor.h).
//
// Rejected: a reactor fiber re-run every few milliseconds (idle wake-ups, and it
// competes with user fibers); a dedicated poller thread (brpc: a thread hop per event,
// and a core that fibers cannot use).

#include "io/internal/reactor.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "io/internal/descriptor.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/poller_host.h"
#include "runtime/internal/seams/chaos.h"

namespace spindle::io::internal {
namespace {

constexpr std::size_t kMaxReactors = 1024;
constexpr std::uint64_t kEventFdTag = ~std::uint64_t{0};

std::atomic<Reactor*> g_reactors[kMaxReactors];
std::mutex g_create_lock;

}  // namespace

Reactor* Reactor::ForGroup(std::size_t index) {
  CHECK_LT(index, kMaxReactors) << "more scheduling groups than reactors";
  // acquire: pairs with the release below (a fully built reactor).
  Reactor* reactor = g_reactors[index].load(std::memory_order_acquire);
  if (reactor == nullptr) {
    std::lock_guard<std::mutex> lock(g_create_lock);
    reactor = g_reactors[index].load(std::memory_order_acquire);
    if (reactor == nullptr) {
      reactor = new Reactor(index);  // never freed: see the class comment
      g_reactors[index].store(reactor, std::memory_order_release);
    }
  }
  spindle::internal::AttachPoller(index, reactor);
  return reactor;
}

Reactor* Reactor::AtIndex(std::size_t index) {
  if (index >= kMaxReactors) return nullptr;
  return g_reactors[index].load(std::memory_order_acquire);  // as in ForGroup()
}

Reactor::Reactor(std::size_t index) : index_(index) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  PCHECK(epoll_fd_ >= 0) << "epoll_create1 for the reactor of group " << index;
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  PCHECK(event_fd_ >= 0) << "eventfd for the reactor of group " << index;
  epoll_event event{};
  event.events = EPOLLIN;  // level-triggered: Wait() drains it whenever it reports
  event.data.u64 = kEventFdTag;
  PCHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &event) == 0)
      << "registering the reactor's eventfd";
}

namespace {
// FailRegistrationsForTesting()'s error and how many registrations are left to fail.
// relaxed: a test sets them before the operations it makes fail.
std::atomic<int> g_failing_error{0};
std::atomic<int> g_failing_left{0};
}  // namespace

void Reactor::FailRegistrationsForTesting(int error, int count) {
  g_failing_error.store(error, std::memory_order_relaxed);
  g_failing_left.store(count, std::memory_order_relaxed);
}

int Reactor::Register(int fd, std::uint64_t tag) {
  // relaxed: see g_failing_left.
  if (__builtin_expect(g_failing_left.load(std::memory_order_relaxed) > 0, 0) &&
      g_failing_left.fetch_sub(1, std::memory_order_relaxed) > 0) {
    return g_failing_error.load(std::memory_order_relaxed);
  }
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.u64 = tag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) return errno;
  registered_.fetch_add(1, std::memory_order_relaxed);  // relaxed: HasInterest's hint
  return 0;
}

void Reactor::Unregister(int fd) {
  // The descriptor is still open (its last reference closes it after this), so DEL
  // cannot fail with EBADF (dallison/co #9).
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr) != 0) {
    PLOG(ERROR) << "epoll_ctl(EPOLL_CTL_DEL, " << fd << ")";
  }
  registered_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: as in Register()
}

bool Reactor::Wait(spindle::internal::MonotonicDeadline deadline, std::size_t max_events) {
  int timeout_ms = -1;
  if (!deadline.is_none()) {
    const std::int64_t left = deadline.ns() - spindle::internal::MonotonicNowNs();
    timeout_ms = left <= 0 ? 0 : static_cast<int>((left + 999'999) / 1'000'000);
  }
  // relaxed: statistics.
  polls_.fetch_add(1, std::memory_order_relaxed);
  if (timeout_ms != 0) blocking_polls_.fetch_add(1, std::memory_order_relaxed);
  spindle::internal::ChaosPause();  // the poller's token taken, not yet blocked (chaos.h)
  const int max = static_cast<int>(std::clamp<std::size_t>(max_events, 1, kMaxEvents));
  int n = epoll_wait(epoll_fd_, events_, max, timeout_ms);
  if (n < 0) {
    if (errno != EINTR) PLOG(ERROR) << "epoll_wait in the reactor of group " << index_;
    n = 0;
  }
  if (n > 0) spindle::internal::Trace(spindle::internal::TraceKind::kPoll, index_, n);
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (events_[i].data.u64 == kEventFdTag) {
      std::uint64_t count;
      // Drains every Interrupt() so far; one landing after this read keeps the next
      // Wait() from blocking, which is what it is for.
      while (read(event_fd_, &count, sizeof(count)) < 0 && errno == EINTR) {
      }
      continue;
    }
    events_[kept++] = events_[i];
  }
  pending_ = kept;
  events_count_.fetch_add(static_cast<std::uint64_t>(kept), std::memory_order_relaxed);
  return kept > 0;
}

void Reactor::Dispatch() {
  const int n = pending_;
  pending_ = 0;
  // One batch for the whole poll: the woken fibers are queued together, one wake-up
  // round for the group (ReadyBatch), after every descriptor lock is released.
  spindle::internal::ReadyBatch batch;
  for (int i = 0; i < n; ++i) {
    std::uint32_t generation = 0;
    Descriptor* descriptor = Descriptor::FromTag(events_[i].data.u64, &generation);
    descriptor->OnEvents(generation, events_[i].events);
  }
}

void Reactor::Interrupt() {
  interrupts_.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
  const std::uint64_t one = 1;
  // Only fails if the count would overflow (it never gets near) or on EINTR.
  while (write(event_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

Reactor::Counters Reactor::counters() const {
  // relaxed: snapshots.
  return Counters{polls_.load(std::memory_order_relaxed),
                  events_count_.load(std::memory_order_relaxed)};
}

ReactorStats Reactor::stats() const {
  ReactorStats stats;
  // relaxed: snapshots.
  stats.polls = polls_.load(std::memory_order_relaxed);
  stats.blocking_polls = blocking_polls_.load(std::memory_order_relaxed);
  stats.events = events_count_.load(std::memory_order_relaxed);
  stats.interrupts = interrupts_.load(std::memory_order_relaxed);
  stats.registered = registered_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace spindle::io::internal
