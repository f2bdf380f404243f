// Copyright 2026 The Spindle Authors.
//
// Listener: listen, accept, and what Accept does when the process is out of
// descriptors (a spare one to refuse with) or memory (a back-off).

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "io/internal/descriptor.h"
#include "io/operation.h"
#include "io/stream.h"

namespace spindle::io {

using internal::Descriptor;
using internal::ErrorText;
using internal::Operation;
using internal::OsError;
using internal::SetNoDelay;

namespace {

bool IsPerConnectionAcceptError(int error) {
  // The pending connection failed (or a signal came); the next one may be fine.
  return error == ECONNABORTED || error == EPROTO || error == EPERM || error == EINTR ||
         error == ENETDOWN || error == ENOPROTOOPT || error == EHOSTDOWN ||
         error == ENONET || error == EHOSTUNREACH || error == EOPNOTSUPP ||
         error == ENETUNREACH;
}

bool IsResourceAcceptError(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

// The spare descriptor of ListenOptions::refuse_when_out_of_descriptors; -1 if none.
int OpenSpare() { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

Listener::~Listener() {
  (void)Close();
  ReleaseSpare();
}

Listener::Listener(Listener&& other) noexcept
    : descriptor_(std::exchange(other.descriptor_, nullptr)),
      generation_(other.generation_),
      address_(std::move(other.address_)),
      resource_backoffs_(other.resource_backoffs_),
      refused_(other.refused_),
      spare_fd_(std::exchange(other.spare_fd_, -1)),
      keep_spare_(other.keep_spare_) {}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    (void)Close();
    ReleaseSpare();
    descriptor_ = std::exchange(other.descriptor_, nullptr);
    generation_ = other.generation_;
    address_ = std::move(other.address_);
    resource_backoffs_ = other.resource_backoffs_;
    refused_ = other.refused_;
    spare_fd_ = std::exchange(other.spare_fd_, -1);
    keep_spare_ = other.keep_spare_;
  }
  return *this;
}

void Listener::ReleaseSpare() {
  if (spare_fd_ >= 0) close(spare_fd_);
  spare_fd_ = -1;
}

absl::StatusOr<Listener> Listener::Listen(const Address& address,
                                          const ListenOptions& options) {
  if (address.empty()) return absl::InvalidArgumentError("Listen: the address is empty");
  if (options.backlog < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Listen on ", address.ToString(), ": backlog ", options.backlog,
        " is not in [1, INT_MAX]"));
  }
  const int fd = socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int error = errno;
    return OsError(error, "Listen", "on", address);
  }
  const int one = 1;
  if ((options.reuse_address && address.family() != AF_UNIX &&
       setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) ||
      (options.reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) ||
      bind(fd, address.sockaddr_ptr(), address.length()) != 0 ||
      listen(fd, options.backlog) != 0) {
    const int error = errno;
    close(fd);
    return OsError(error, "Listen", "on", address);
  }
  sockaddr_storage bound;
  socklen_t length = sizeof(bound);
  Listener listener;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0 &&
      address.family() != AF_UNIX) {
    listener.address_ = Address::FromSockaddr(reinterpret_cast<sockaddr*>(&bound), length);
  } else {
    listener.address_ = address;
  }
  listener.descriptor_ = Descriptor::Create(fd);
  listener.generation_ = listener.descriptor_->generation();
  listener.keep_spare_ = options.refuse_when_out_of_descriptors;
  if (listener.keep_spare_) listener.spare_fd_ = OpenSpare();  // best effort
  return listener;
}

absl::StatusOr<Stream> Listener::Accept(Deadline deadline) {
  Operation op(descriptor_, generation_, Descriptor::kRead, "Accept", "on", address_);
  if (!op.ok()) return op.status();
  constexpr auto kFirstBackoff = std::chrono::milliseconds(5);
  constexpr auto kMaxBackoff = std::chrono::milliseconds(250);
  auto backoff = kFirstBackoff;
  for (;;) {
    sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    const int fd = accept4(op.fd(), reinterpret_cast<sockaddr*>(&peer), &length,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Address peer_address =
          address_.family() == AF_UNIX
              ? address_
              : Address::FromSockaddr(reinterpret_cast<sockaddr*>(&peer), length);
      SetNoDelay(fd, address_.family());
      Descriptor* descriptor = internal::Descriptor::Create(fd);
      return Stream(descriptor, descriptor->generation(), std::move(peer_address));
    }
    const int error = errno;
    if (error == EAGAIN) {
      if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
      continue;
    }
    if (IsPerConnectionAcceptError(error)) continue;
    if (!IsResourceAcceptError(error)) return op.Error(error);
    if ((error == EMFILE || error == ENFILE) && keep_spare_) {
      // Out of descriptors: give back the spare, take the waiting connection with its
      // number and close it at once (its client sees the end now, not a silent
      // backlog: libev's and nginx's answer to EMFILE), then take the spare again. A
      // thread that grabs the freed number first makes our accept fail: then back off.
      if (spare_fd_ >= 0) {
        close(spare_fd_);
        spare_fd_ = -1;
        const int refused = accept4(op.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        const int refuse_error = errno;
        if (refused >= 0) close(refused);
        spare_fd_ = OpenSpare();
        if (refused < 0 && refuse_error == EAGAIN) {
          // Nobody waits: accept4 says EMFILE before it looks at the backlog. Wait for
          // the next connection as after any EAGAIN.
          if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
          continue;
        }
        if (refused >= 0) {
          ++refused_;
          // A backlog that refills as fast as we refuse must not hold this call (and
          // its worker) past its deadline.
          if (Clock::now() >= deadline) {
            return absl::ResourceExhaustedError(absl::StrCat(
                "Accept on ", address_.ToString(), ": ", ErrorText(error),
                " until the deadline (refused ", refused_, " connections)"));
          }
          LOG_EVERY_N(WARNING, 1000)
              << "Accept on " << address_.ToString() << ": " << ErrorText(error)
              << "; refused a connection (closed it at once; logged every 1000th time)";
          backoff = kFirstBackoff;  // progress: the next shortage starts short again
          continue;
        }
      } else {
        spare_fd_ = OpenSpare();  // taken at the next shortage if it worked
      }
    }
    // Out of descriptors or memory, with no spare to refuse with: the connection stays
    // in the backlog. Back off (never retry at once: libuv #690, warp #928) unless the
    // deadline is reached.
    ++resource_backoffs_;
    LOG_EVERY_N(WARNING, 100) << "Accept on " << address_.ToString() << ": "
                              << ErrorText(error) << "; backing off for "
                              << backoff.count() << " ms (logged every 100th time)";
    const Deadline now = Clock::now();
    if (now >= deadline) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "Accept on ", address_.ToString(), ": ", ErrorText(error),
          " until the deadline (backed off ", resource_backoffs_, " times)"));
    }
    const Deadline until = std::min(deadline, now + backoff);
    absl::Status waited = op.Wait(until, Descriptor::kNeither);
    if (absl::IsFailedPrecondition(waited)) return waited;  // closed meanwhile
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
}

bool Listener::is_open() const {
  return descriptor_ != nullptr && descriptor_->IsOpen(generation_);
}

absl::Status Listener::Close() {
  if (descriptor_ != nullptr) descriptor_->Close(generation_);
  return absl::OkStatus();
}

}  // namespace spindle::io
