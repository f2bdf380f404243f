// Copyright 2026 The Spindle Authors.
//
// The blocking pool. Plain threads, started on demand up to --io_blocking_threads and
// kept for the life of the process (idle ones wait on a condition variable: no CPU).
// A call is queued under one mutex; the caller waits on a spindle::Event, which parks
// a fiber and blocks a plain thread. Calls run in the order they were queued; when
// every thread is busy, they wait in the queue. The flag is read at each call, so a
// larger value takes effect at once (threads are never stopped).

#include "io/run_blocking.h"

#include <deque>
#include <exception>
#include <string>
#include <system_error>
#include <thread>

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "gflags/gflags.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/os_mutex.h"
#include "glog/logging.h"
#include "sync/event.h"

namespace {

constexpr std::uint64_t kMaxBlockingThreads = 4096;

bool ValidateBlockingThreads(const char* flag, std::uint64_t value) {
  if (value >= 1 && value <= kMaxBlockingThreads) return true;
  std::fprintf(stderr, "--%s=%llu is invalid: expected a thread count in [1, %llu]\n",
               flag, static_cast<unsigned long long>(value),
               static_cast<unsigned long long>(kMaxBlockingThreads));
  return false;
}

}  // namespace

DEFINE_uint64(io_blocking_threads, 64,
              "Threads of the pool that spindle::io::RunBlocking() runs blocking calls "
              "on (default 64), started on demand. Range [1, 4096]. Calls beyond it "
              "wait in order for a free thread.");
DEFINE_validator(io_blocking_threads, &ValidateBlockingThreads);

namespace spindle::io::internal {
namespace {

struct Call {
  absl::FunctionRef<void()> function;
  std::exception_ptr exception;
  spindle::Event done;
  explicit Call(absl::FunctionRef<void()> f) : function(f) {}
};

class BlockingPool {
 public:
  static BlockingPool& Get() {
    static BlockingPool* pool = new BlockingPool;  // threads outlive main: never freed
    return *pool;
  }

  void Run(Call* call) {
    {
      // Held briefly, never across a park: a plain mutex is fine in a fiber. (Not
      // absl::Mutex: Debian's abseil is not built for ThreadSanitizer, which would
      // then miss this lock's ordering.)
      spindle::internal::OsMutexGuard lock(mutex_);
      queue_.push_back(call);
      if (idle_ > 0) wake_.notify_one();
      // Every queued call needs a thread that is idle or starting.
      if (queue_.size() > idle_ + starting_ && threads_ < FLAGS_io_blocking_threads) {
        try {
          std::thread([this] { Loop(); }).detach();
          ++threads_;
          ++starting_;
        } catch (const std::system_error& error) {
          // No thread (a process or cgroup limit): the call waits for a running one;
          // with none at all, it is not queued and the caller gets the error.
          if (threads_ == 0) {
            queue_.pop_back();
            throw;
          }
          LOG_FIRST_N(WARNING, 1) << "RunBlocking: cannot start a pool thread ("
                                  << error.what() << "); calls wait for the "
                                  << threads_ << " running";
        }
      }
    }
    const spindle::internal::ScopedWaitKind kind(spindle::internal::WaitKind::kRunBlocking);
    call->done.Wait();
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
      queue_.pop_front();
      lock.unlock();
      try {
        call->function();
      } catch (...) {
        call->exception = std::current_exception();
      }
      call->done.Set();  // the caller may free `call` from here on
      lock.lock();
    }
  }

  spindle::internal::OsMutex mutex_;
  std::condition_variable wake_;  // an idle thread waits for a queued call
  std::deque<Call*> queue_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t threads_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t idle_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t starting_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace

void RunOnBlockingPool(absl::FunctionRef<void()> function) {
  Call call(function);
  BlockingPool::Get().Run(&call);
  if (call.exception) std::rethrow_exception(call.exception);
}

}  // namespace spindle::io::internal
