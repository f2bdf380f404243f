// Copyright 2026 The Spindle Authors.
//
// The blocking pool. Plain threads, started on demand up to --io_blocking_threads and
// kept for the life of the process (idle ones wait on a condition variable: no CPU).
// A call lives in its caller's frame and is linked into the queue under one mutex, so
// queueing allocates nothing; the caller waits on a spindle::Event, which parks a fiber
// and blocks a plain thread. Calls run in the order they were queued; when every
// thread is busy, they wait in the queue, at most --io_blocking_queue_limit of them.
// A caller whose deadline passes takes its call out of the queue under the mutex if no
// thread has taken it yet; otherwise it waits for the call to end (it runs in the
// caller's frame). The flags are read at each call, so a larger value takes effect at
// once (threads are never stopped).

#include "io/run_blocking.h"

#include <exception>
#include <string>
#include <system_error>
#include <thread>

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/local_storage.h"
#include "fiber/internal/os_mutex.h"
#include "glog/logging.h"
#include "runtime/internal/observability/terminate_reports.h"
#include "sync/event.h"
#include "sync/internal/stop_state.h"

namespace {

constexpr std::uint64_t kMaxBlockingThreads = 4096;
constexpr std::uint64_t kMaxBlockingQueueLimit = std::uint64_t{1} << 24;

bool ValidateBlockingThreads(const char* flag, std::uint64_t value) {
  if (value >= 1 && value <= kMaxBlockingThreads) return true;
  std::fprintf(stderr, "--%s=%llu is invalid: expected a thread count in [1, %llu]\n",
               flag, static_cast<unsigned long long>(value),
               static_cast<unsigned long long>(kMaxBlockingThreads));
  return false;
}

bool ValidateBlockingQueueLimit(const char* flag, std::uint64_t value) {
  if (value >= 1 && value <= kMaxBlockingQueueLimit) return true;
  std::fprintf(stderr, "--%s=%llu is invalid: expected a call count in [1, %llu]\n", flag,
               static_cast<unsigned long long>(value),
               static_cast<unsigned long long>(kMaxBlockingQueueLimit));
  return false;
}

}  // namespace

DEFINE_uint64(io_blocking_threads, 64,
              "Threads of the pool that spindle::io::RunBlocking() runs blocking calls "
              "on (default 64), started on demand. Range [1, 4096]. Calls beyond it "
              "wait in order for a free thread (see --io_blocking_queue_limit).");
DEFINE_validator(io_blocking_threads, &ValidateBlockingThreads);
DEFINE_uint64(io_blocking_queue_limit, 16384,
              "Calls of spindle::io::RunBlocking() that may wait for a free pool thread "
              "(default 16384). Range [1, 16777216]. A call beyond it is refused at once: "
              "ResourceExhausted with a deadline, std::system_error without.");
DEFINE_validator(io_blocking_queue_limit, &ValidateBlockingQueueLimit);

namespace spindle::io::internal {
namespace {

// One call, in its caller's frame. Linked into the pool's queue, then its running list,
// under the pool's mutex; `done` is set once the pool no longer touches it.
struct Call {
  enum class State { kQueued, kRunning, kDone };

  explicit Call(absl::FunctionRef<void()> f) : function(f) {}

  absl::FunctionRef<void()> function;
  std::exception_ptr exception;  // written by the pool thread before `done`
  spindle::Event done;
  // Guarded by the pool's mutex.
  State state = State::kQueued;
  Clock::time_point started;  // when a pool thread took it
  Call* prev = nullptr;
  Call* next = nullptr;
};

// An intrusive doubly linked list of calls (the queue, the running calls).
class CallList {
 public:
  bool empty() const { return head_ == nullptr; }
  std::uint64_t size() const { return size_; }
  Call* front() const { return head_; }
  void PushBack(Call* call) {
    call->prev = tail_;
    call->next = nullptr;
    (tail_ != nullptr ? tail_->next : head_) = call;
    tail_ = call;
    ++size_;
  }
  void Remove(Call* call) {
    (call->prev != nullptr ? call->prev->next : head_) = call->next;
    (call->next != nullptr ? call->next->prev : tail_) = call->prev;
    call->prev = call->next = nullptr;
    --size_;
  }

 private:
  Call* head_ = nullptr;
  Call* tail_ = nullptr;
  std::uint64_t size_ = 0;
};

std::string Report();

class BlockingPool {
 public:
  static BlockingPool& Get() {
    static BlockingPool* pool = [] {
      spindle::internal::AddTerminateReport(&Report);
      return new BlockingPool;  // threads outlive main: never freed
    }();
    return *pool;
  }

  // `interruptible`: the wait for a pool thread ends at the caller's execution
  // context's cancellation (and deadline) too (RunBlocking() with a deadline).
  absl::Status Run(Call* call, Deadline deadline, bool interruptible) {
    {
      // Held briefly, never across a park: a plain mutex is fine in a fiber. (Not
      // absl::Mutex: Debian's abseil is not built for ThreadSanitizer, which would
      // then miss this lock's ordering.)
      spindle::internal::OsMutexGuard lock(mutex_);
      const std::uint64_t limit = FLAGS_io_blocking_queue_limit;
      if (queue_.size() >= limit) {
        ++refused_;
        return absl::ResourceExhaustedError(absl::StrCat(
            "RunBlocking: ", queue_.size(), " calls already wait for a pool thread (",
            "--io_blocking_queue_limit=", limit, "; ", running_.size(), " running on ",
            threads_, " threads, --io_blocking_threads=", FLAGS_io_blocking_threads,
            ")"));
      }
      queue_.PushBack(call);
      if (idle_ > 0) wake_.notify_one();
      // Every queued call needs a thread that is idle or starting.
      if (queue_.size() > idle_ + starting_ && threads_ < FLAGS_io_blocking_threads) {
        std::string error;
        try {
          std::thread([this] { Loop(); }).detach();
          ++threads_;
          ++starting_;
        } catch (const std::exception& e) {  // std::system_error, std::bad_alloc
          error = e.what();
        }
        if (!error.empty()) {
          // No thread (a process or cgroup limit, no memory): the call waits for a
          // running one; with none at all, it leaves the queue and the caller gets the
          // error (nothing of it stays behind to touch its frame later).
          if (threads_ == 0) {
            queue_.Remove(call);
            ++refused_;
            return absl::ResourceExhaustedError(absl::StrCat(
                "RunBlocking: cannot start a pool thread (", error, ")"));
          }
          LOG_FIRST_N(WARNING, 1) << "RunBlocking: cannot start a pool thread (" << error
                                  << "); calls wait for the " << threads_ << " running";
        }
      }
    }
    const spindle::internal::ScopedWaitKind kind(spindle::internal::WaitKind::kRunBlocking);
    if (!interruptible) {
      call->done.Wait();
      return absl::OkStatus();
    }
    if (call->done.WaitUntil(deadline)) return absl::OkStatus();
    {
      spindle::internal::OsMutexGuard lock(mutex_);
      if (call->state == Call::State::kQueued) {
        queue_.Remove(call);
        const spindle::internal::WaitLimits* limits = spindle::internal::CurrentWaitLimits();
        if (limits != nullptr && limits->stop->stop_requested()) {
          ++cancelled_;
          return absl::CancelledError(absl::StrCat(
              "RunBlocking: cancelled before a pool thread took the call (",
              running_.size(), " running on ", threads_, " threads, --io_blocking_threads=",
              FLAGS_io_blocking_threads, "; ", queue_.size(), " more queued)"));
        }
        ++timed_out_;
        return absl::DeadlineExceededError(absl::StrCat(
            "RunBlocking: no pool thread took the call before its deadline (",
            running_.size(), " running on ", threads_, " threads, --io_blocking_threads=",
            FLAGS_io_blocking_threads, "; ", queue_.size(), " more queued)"));
      }
    }
    // Taken by a thread: it runs in our frame, so we wait for its end.
    call->done.Wait();
    return absl::OkStatus();
  }

  BlockingPoolStats Stats() {
    spindle::internal::OsMutexGuard lock(mutex_);
    BlockingPoolStats stats;
    stats.threads = threads_;
    stats.running = running_.size();
    stats.queued = queue_.size();
    stats.refused = refused_;
    stats.timed_out = timed_out_;
    stats.cancelled = cancelled_;
    return stats;
  }

  // TerminateRuntime()'s line: the running calls and the oldest one's age.
  std::string Describe() {
    spindle::internal::OsMutexGuard lock(mutex_);
    if (running_.empty() && queue_.empty()) return "";
    std::string line = absl::StrCat("RunBlocking: ", running_.size(), " calls running");
    if (!running_.empty()) {
      // The list is in the order the calls were taken: the first is the oldest.
      const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(
          Clock::now() - running_.front()->started);
      absl::StrAppend(&line, " (the longest for ", age.count(), " ms: a hung blocking call "
                      "holds its caller parked until it returns)");
    }
    absl::StrAppend(&line, ", ", queue_.size(), " queued, on ", threads_,
                    " pool threads (--io_blocking_threads=", FLAGS_io_blocking_threads, ")");
    return line;
  }

 private:
  void Loop() {
    spindle::internal::UniqueOsMutexGuard lock(mutex_);
    --starting_;
    for (;;) {
      ++idle_;
      while (queue_.empty()) wake_.wait(lock.unique());
      --idle_;
      Call* call = queue_.front();
      queue_.Remove(call);
      call->state = Call::State::kRunning;
      call->started = Clock::now();
      running_.PushBack(call);
      lock.unlock();
      try {
        call->function();
      } catch (...) {
        call->exception = std::current_exception();
      }
      lock.lock();
      running_.Remove(call);
      call->state = Call::State::kDone;
      lock.unlock();
      call->done.Set();  // the caller may free `call` from here on
      lock.lock();
    }
  }

  spindle::internal::OsMutex mutex_;
  std::condition_variable wake_;  // an idle thread waits for a queued call
  CallList queue_ ABSL_GUARDED_BY(mutex_);
  CallList running_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t threads_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t idle_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t starting_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t refused_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t timed_out_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t cancelled_ ABSL_GUARDED_BY(mutex_) = 0;
};

std::string Report() { return BlockingPool::Get().Describe(); }

}  // namespace

absl::Status RunOnBlockingPool(absl::FunctionRef<void()> function, Deadline deadline) {
  Call call(function);
  absl::Status status = BlockingPool::Get().Run(&call, deadline, /*interruptible=*/true);
  if (status.ok() && call.exception) std::rethrow_exception(call.exception);
  return status;
}

void RunOnBlockingPoolOrThrow(absl::FunctionRef<void()> function) {
  Call call(function);
  absl::Status status = BlockingPool::Get().Run(&call, kNoDeadline, /*interruptible=*/false);
  if (status.ok() && call.exception) std::rethrow_exception(call.exception);
  if (!status.ok()) {
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                            std::string(status.message()));
  }
}

}  // namespace spindle::io::internal

namespace spindle::io {

BlockingPoolStats GetBlockingPoolStats() { return internal::BlockingPool::Get().Stats(); }

}  // namespace spindle::io
