// Copyright 2026 The Spindle Authors.
//
// The queue is a FIFO list under a spinlock and one flag, running_: the Submit() that
// finds no fiber running starts one (and sets the flag under the lock); the fiber takes
// the whole list under the lock, runs it outside, and ends only when it finds the list
// empty, clearing the flag under the same lock. So a task is either in the list while a
// fiber is running or about to run, or its Submit() starts one: none is left behind.

#include "fiber/serial_queue.h"

#include <exception>
#include <mutex>

#include "fiber/this_fiber.h"
#include "glog/logging.h"

namespace spindle {

struct SerialQueue::Node {
  Task task;
  Node* next = nullptr;
};

SerialQueue::SerialQueue(Options options) : options_(std::move(options)) {
  CHECK_GE(options_.max_batch, 1u) << "spindle::SerialQueue \"" << options_.name
                                   << "\": max_batch 0 is outside [1, 2^64)";
}

SerialQueue::SerialQueue() : SerialQueue(Options()) {}

SerialQueue::~SerialQueue() { Join(); }

absl::Status SerialQueue::Submit(Task task) {
  Node* node = new Node{std::move(task)};
  bool start = false;
  bool refused = false;
  {
    internal::SpinlockGuard guard(lock_);
    refused = stopped_;
    if (!refused) {
      (tail_ != nullptr ? tail_->next : head_) = node;
      tail_ = node;
      ++submitted_;
      if (!running_) start = running_ = true;
    }
  }
  if (refused) {
    delete node;  // the task's captures are destroyed outside the lock
    return absl::FailedPreconditionError("spindle::SerialQueue \"" + options_.name +
                                         "\" is stopped: the task was not queued");
  }
  if (start) {
    Fiber::Attributes attributes;
    attributes.pool = options_.pool;
    StartFiberDetached(attributes, [this] { Run(); });
  }
  return absl::OkStatus();
}

void SerialQueue::Run() {
  const std::uint64_t self = this_fiber::GetId();
  std::size_t in_a_row = 0;
  for (;;) {
    Node* batch;
    {
      internal::SpinlockGuard guard(lock_);
      runner_fiber_ = self;
      batch = head_;
      head_ = tail_ = nullptr;
      if (batch == nullptr) {
        running_ = false;
        runner_fiber_ = 0;
        if (!stopped_) return;
      }
    }
    if (batch == nullptr) {
      // Stopped and drained. Stop() saw running_ and left the event to us; the last
      // touch of this queue (Join() may destroy it as soon as the event is set).
      drained_.Set();
      return;
    }
    batches_.fetch_add(1, std::memory_order_relaxed);
    while (batch != nullptr) {
      if (in_a_row++ == options_.max_batch) {
        this_fiber::Yield();
        in_a_row = 1;
      }
      Node* next = batch->next;
      absl::Status status;
      try {
        status = std::move(batch->task)();
      } catch (const std::exception& e) {
        status = absl::InternalError(std::string("the task threw: ") + e.what());
      } catch (...) {
        status = absl::InternalError("the task threw an exception of a type not derived "
                                     "from std::exception");
      }
      delete batch;
      if (!status.ok()) {
        failed_.fetch_add(1, std::memory_order_relaxed);
        ReportFailure(status);
      }
      completed_.fetch_add(1, std::memory_order_relaxed);
      batch = next;
    }
  }
}

void SerialQueue::ReportFailure(const absl::Status& status) {
  if (options_.on_failure) {
    options_.on_failure(status);
  } else {
    LOG(ERROR) << "spindle::SerialQueue \"" << options_.name << "\": a task failed: " << status;
  }
}

void SerialQueue::Stop() {
  bool drained;
  {
    internal::SpinlockGuard guard(lock_);
    if (stopped_) return;
    stopped_ = true;
    drained = !running_;  // else the queue's fiber sets the event when it is done
  }
  if (drained) drained_.Set();
}

void SerialQueue::Join() {
  {
    internal::SpinlockGuard guard(lock_);
    CHECK(runner_fiber_ == 0 || runner_fiber_ != this_fiber::GetId())
        << "spindle::SerialQueue \"" << options_.name
        << "\": Join() from one of its own tasks would wait for itself";
  }
  Stop();
  drained_.Wait();
}

std::uint64_t SerialQueue::submitted() const {
  internal::SpinlockGuard guard(lock_);
  return submitted_;
}
std::uint64_t SerialQueue::completed() const {
  return completed_.load(std::memory_order_relaxed);
}
std::uint64_t SerialQueue::failed() const { return failed_.load(std::memory_order_relaxed); }
std::uint64_t SerialQueue::batches() const { return batches_.load(std::memory_order_relaxed); }

}  // namespace spindle
