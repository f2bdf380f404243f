// Copyright 2026 The Spindle Authors.
//
// What Stream (stream.cc) and Listener (listener.cc) share: the operation guard every
// blocking call runs under, and the errors they name. Private to //io:io.

#ifndef SPINDLE_IO_OPERATION_H_
#define SPINDLE_IO_OPERATION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/address.h"
#include "io/deadline.h"
#include "io/internal/descriptor.h"

namespace spindle::io::internal {

// "Read from 1.2.3.4:80" etc.
std::string Context(const char* operation, const char* preposition, const Address& address);
// The OS error's text without absl's StrError (Debian's abseil is not built for
// ThreadSanitizer, and its first-use table shows up as a race there): GNU strerror_r.
std::string ErrorText(int error);
absl::Status OsError(int error, const char* operation, const char* preposition,
                     const Address& address);
absl::Status ClosedError(const char* operation, const char* preposition,
                         const Address& address);
absl::Status DeadlineError(const char* operation, const char* preposition,
                           const Address& address);
// The caller's execution context was cancelled while the operation waited.
absl::Status CancelledError(const char* operation, const char* preposition,
                            const Address& address);
// TCP_NODELAY on a TCP socket (best effort); nothing for other families.
void SetNoDelay(int fd, int family);

// One operation in one direction: holds a reference on the descriptor and the
// direction's one-at-a-time flag for its duration.
class Operation {
 public:
  Operation(Descriptor* descriptor, std::uint32_t generation, Descriptor::Direction direction,
            const char* name, const char* preposition, const Address& address)
      : descriptor_(descriptor),
        direction_(direction),
        name_(name),
        preposition_(preposition),
        address_(address) {
    if (descriptor_ == nullptr || !descriptor_->Acquire(generation)) {
      descriptor_ = nullptr;
      status_ = ClosedError(name, preposition, address);
      return;
    }
    if (descriptor_->closed()) {
      status_ = ClosedError(name, preposition, address);
      descriptor_->Release();
      descriptor_ = nullptr;
      return;
    }
    if (direction_ != Descriptor::kNeither && !descriptor_->TryStartOperation(direction_)) {
      status_ = absl::FailedPreconditionError(absl::StrCat(
          Context(name, preposition, address), ": another ",
          direction_ == Descriptor::kRead ? "reader" : "writer",
          " is already using it (one at a time per direction)"));
      descriptor_->Release();
      descriptor_ = nullptr;
    }
  }
  ~Operation() {
    if (descriptor_ == nullptr) return;
    if (direction_ != Descriptor::kNeither) descriptor_->EndOperation(direction_);
    descriptor_->Release();
  }
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  bool ok() const { return descriptor_ != nullptr; }
  const absl::Status& status() const { return status_; }
  int fd() const { return descriptor_->fd(); }
  Descriptor* descriptor() const { return descriptor_; }

  // Waits for the direction after EAGAIN; OK to retry the system call, or the error.
  absl::Status Wait(Deadline deadline, Descriptor::Direction direction) {
    int error = 0;
    // io's edge: the deadline's one conversion (fiber/internal/deadline.h).
    switch (descriptor_->Wait(direction, spindle::internal::MonotonicDeadline::At(deadline),
                              &error)) {
      case Descriptor::WaitResult::kReady:
        return absl::OkStatus();
      case Descriptor::WaitResult::kClosed:
        return ClosedError(name_, preposition_, address_);
      case Descriptor::WaitResult::kTimedOut:
        return DeadlineError(name_, preposition_, address_);
      case Descriptor::WaitResult::kCancelled:
        return CancelledError(name_, preposition_, address_);
      case Descriptor::WaitResult::kFailed:
        return absl::Status(absl::ErrnoToStatusCode(error),
                            absl::StrCat(Context(name_, preposition_, address_),
                                         ": cannot watch it (epoll_ctl): ",
                                         ErrorText(error)));
    }
    return absl::OkStatus();
  }
  absl::Status Wait(Deadline deadline) { return Wait(deadline, direction_); }
  // Whether the descriptor was closed while this operation ran. Close() shuts the
  // socket down under an operation in flight, so a system call made after it sees end
  // of stream or an error (EPIPE, EINVAL) that is really the close.
  bool closed_meanwhile() const { return descriptor_->closed(); }
  absl::Status Closed() const { return ClosedError(name_, preposition_, address_); }
  // The OS error `error`, or the close that caused it.
  absl::Status Error(int error) const {
    if (closed_meanwhile()) return Closed();
    return OsError(error, name_, preposition_, address_);
  }

 private:
  Descriptor* descriptor_;
  const Descriptor::Direction direction_;
  const char* const name_;
  const char* const preposition_;
  const Address& address_;
  absl::Status status_;
};

}  // namespace spindle::io::internal

#endif  // SPINDLE_IO_OPERATION_H_
