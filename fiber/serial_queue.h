// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_SERIAL_QUEUE_H_
#define SPINDLE_FIBER_SERIAL_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "fiber/fiber.h"
#include "fiber/internal/spinlock.h"
#include "sync/event.h"

namespace spindle {

// A serial queue (a strand; brpc's ExecutionQueue): tasks submitted from any fiber or
// thread run one at a time, in the order they were submitted, in a fiber of the
// queue's own. For what must not run concurrently and must keep its order: a
// connection's writes, a session's state, a log.
//
//   SerialQueue writes;   // or SerialQueue(options): a name, a pool, a failure handler
//   writes.Submit([&] { return socket.WriteAll(buffer); });   // absl::Status or void
//   ...
//   writes.Join();   // stops it, and waits until every task submitted has run
//
//   - One fiber runs the tasks while any are waiting, taking all that are waiting at
//     once (a batch) and the next batch after it; it ends when none is left, so an idle
//     queue holds no fiber. Past `max_batch` tasks in a row it yields its worker to the
//     other fibers first.
//   - A task that returns a non-OK absl::Status, or throws, has failed: the failure
//     goes to `on_failure` (by default an ERROR log naming the queue) and is counted;
//     the tasks after it still run.
//   - Stop() refuses later submissions (Submit() says so); the tasks submitted before
//     it still run. Join() stops the queue and waits for them; the destructor joins.
// Thread-safe: Submit(), Stop() and the counters from any fiber or thread, a task too
// (a task's own Submit() queues behind it; its Join() would wait for itself: a fatal
// error).
class SerialQueue {
 public:
  // How a queue runs.
  struct Options {
    // Named in failure reports.
    std::string name = "serial queue";
    // Where the queue's fiber runs (FiberPool(): the pool of the caller of the Submit()
    // that starts it).
    FiberPool pool;
    // Tasks run in a row before the queue's fiber lets the other fibers of its worker
    // run; at least 1.
    std::size_t max_batch = 256;
    // Called, in the queue's fiber, with each failed task's error: the Status it
    // returned, or kInternal naming what it threw. Empty: an ERROR log naming the queue.
    absl::AnyInvocable<void(const absl::Status&)> on_failure;
  };

  // A task: returns absl::Status (non-OK: it failed), or nothing.
  using Task = absl::AnyInvocable<absl::Status() &&>;

  // A queue with the default Options.
  SerialQueue();
  // A queue with `options`. A `max_batch` of 0 stops the process with a message.
  explicit SerialQueue(Options options);
  // Join()s.
  ~SerialQueue();
  SerialQueue(const SerialQueue&) = delete;
  SerialQueue& operator=(const SerialQueue&) = delete;

  // Queues `task` behind every task submitted before it. OK, or FailedPrecondition
  // naming the queue once it is stopped (the task is destroyed unrun).
  absl::Status Submit(Task task);
  // Submit() for a task that returns nothing (it cannot fail but by throwing).
  template <class F, class = std::enable_if_t<std::is_void_v<std::invoke_result_t<F&>>>>
  absl::Status Submit(F&& task) {
    return Submit(Task([task = std::forward<F>(task)]() mutable {
      task();
      return absl::OkStatus();
    }));
  }

  // Refuses later submissions; the tasks submitted so far still run. Idempotent.
  void Stop();
  // Stop()s the queue and waits until every task submitted has run. From a fiber or a
  // plain thread; not from one of the queue's own tasks (it stops the process with a
  // message: the wait would never end).
  void Join();

  // Tasks submitted (accepted), run, and failed, so far.
  std::uint64_t submitted() const;
  // Tasks that have run (failed ones included).
  std::uint64_t completed() const;
  // Tasks that failed.
  std::uint64_t failed() const;
  // How many times the queue's fiber took a batch.
  std::uint64_t batches() const;

 private:
  struct Node;

  void Run();  // the queue's fiber
  void ReportFailure(const absl::Status& status);

  Options options_;  // on_failure is called by the queue's fiber only
  mutable internal::Spinlock lock_;
  Node* head_ ABSL_GUARDED_BY(lock_) = nullptr;
  Node* tail_ ABSL_GUARDED_BY(lock_) = nullptr;
  bool running_ ABSL_GUARDED_BY(lock_) = false;  // a fiber runs the tasks (or will)
  bool stopped_ ABSL_GUARDED_BY(lock_) = false;
  std::uint64_t submitted_ ABSL_GUARDED_BY(lock_) = 0;
  std::uint64_t runner_fiber_ ABSL_GUARDED_BY(lock_) = 0;  // the running fiber's id, or 0
  // Written by the queue's fiber only; relaxed: statistics.
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> batches_{0};
  // Set once, when the queue is stopped and every task has run.
  Event drained_;
};

}  // namespace spindle

#endif  // SPINDLE_FIBER_SERIAL_QUEUE_H_
