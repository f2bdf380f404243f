// Copyright 2026 The Spindle Authors.

#include "io/stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "io/internal/descriptor.h"

namespace spindle::io {
namespace {

using internal::Descriptor;

// "Read from 1.2.3.4:80" etc.
std::string Context(const char* operation, const char* preposition, const Address& address) {
  return absl::StrCat(operation, " ", preposition, " ", address.ToString());
}

// The OS error's text without absl's StrError (Debian's abseil is not built for
// ThreadSanitizer, and its first-use table shows up as a race there): GNU strerror_r.
std::string ErrorText(int error) {
  char buffer[128];
  return absl::StrCat(strerror_r(error, buffer, sizeof(buffer)), " [errno ", error, "]");
}

absl::Status OsError(int error, const char* operation, const char* preposition,
                     const Address& address) {
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrCat(Context(operation, preposition, address), ": ",
                                   ErrorText(error)));
}

absl::Status ClosedError(const char* operation, const char* preposition,
                         const Address& address) {
  return absl::FailedPreconditionError(
      absl::StrCat(Context(operation, preposition, address), ": closed"));
}

absl::Status DeadlineError(const char* operation, const char* preposition,
                           const Address& address) {
  return absl::DeadlineExceededError(
      absl::StrCat(Context(operation, preposition, address), ": deadline exceeded"));
}

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
    switch (descriptor_->Wait(direction, deadline, &error)) {
      case Descriptor::WaitResult::kReady:
        return absl::OkStatus();
      case Descriptor::WaitResult::kClosed:
        return ClosedError(name_, preposition_, address_);
      case Descriptor::WaitResult::kTimedOut:
        return DeadlineError(name_, preposition_, address_);
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

void SetNoDelay(int fd, int family) {
  if (family != AF_INET && family != AF_INET6) return;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // best effort
}

}  // namespace

// ---- Stream.

Stream::~Stream() { (void)Close(); }

Stream::Stream(Stream&& other) noexcept
    : descriptor_(std::exchange(other.descriptor_, nullptr)),
      generation_(other.generation_),
      peer_(std::move(other.peer_)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    (void)Close();
    descriptor_ = std::exchange(other.descriptor_, nullptr);
    generation_ = other.generation_;
    peer_ = std::move(other.peer_);
  }
  return *this;
}

absl::StatusOr<Stream> Stream::Adopt(int fd, Address peer) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    const int error = errno;
    close(fd);  // ours either way, as documented
    return OsError(error, "Adopt", "of", peer);
  }
  Descriptor* descriptor = Descriptor::Create(fd);
  return Stream(descriptor, descriptor->generation(), std::move(peer));
}

absl::StatusOr<Stream> Stream::Connect(const Address& address, Deadline deadline) {
  if (address.empty()) {
    return absl::InvalidArgumentError("Connect: the address is empty");
  }
  const int fd = socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int error = errno;
    return OsError(error, "Connect", "to", address);
  }
  SetNoDelay(fd, address.family());
  Descriptor* descriptor = Descriptor::Create(fd);
  Stream stream(descriptor, descriptor->generation(), address);
  // Non-blocking: EINPROGRESS (and EINTR, after which the connection goes on
  // asynchronously) mean "wait until writable". A Unix socket whose listener's backlog
  // is full says EAGAIN and is not connecting at all: that is an error (as in Go).
  if (connect(fd, address.sockaddr_ptr(), address.length()) == 0) return stream;
  if (errno != EINPROGRESS && errno != EINTR) {
    const int error = errno;
    return OsError(error, "Connect", "to", address);
  }
  {
    Operation op(descriptor, stream.generation_, Descriptor::kWrite, "Connect", "to",
                 address);
    if (!op.ok()) return op.status();
    for (;;) {
      if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
      int error = 0;
      socklen_t length = sizeof(error);
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
      if (error == 0) {
        // Writable with no error: connected, unless this was a stale edge (then the
        // peer address is not there yet).
        sockaddr_storage peer;
        socklen_t peer_length = sizeof(peer);
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0) break;
        if (errno != ENOTCONN) return op.Error(errno);
        continue;
      }
      if (error == EINPROGRESS || error == EALREADY) continue;
      return op.Error(error);
    }
  }
  return stream;
}

bool Stream::is_open() const {
  return descriptor_ != nullptr && descriptor_->IsOpen(generation_);
}

int Stream::fd() const { return is_open() ? descriptor_->fd() : -1; }

absl::StatusOr<std::size_t> Stream::Read(void* buffer, std::size_t size, Deadline deadline) {
  Operation op(descriptor_, generation_, Descriptor::kRead, "Read", "from", peer_);
  if (!op.ok()) return op.status();
  if (size == 0) return 0;  // documented: returns at once
  Descriptor* descriptor = op.descriptor();
  bool& likely_blocked = descriptor->likely_blocked(Descriptor::kRead);
  if (likely_blocked && !descriptor->SkipBlockedGuess(Descriptor::kRead)) {
    // The last read drained the socket: wait for an edge (or the ready flag an edge
    // left) instead of a read that would say EAGAIN. Only a guess: the read below
    // decides, and after EAGAIN we always wait.
    likely_blocked = false;
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
  for (;;) {
    const ssize_t n = read(op.fd(), buffer, size);
    // End of stream from a Close() meanwhile (its shutdown), not from the peer.
    if (n == 0 && op.closed_meanwhile()) return op.Closed();
    if (n >= 0) {
      likely_blocked = n > 0 && static_cast<std::size_t>(n) < size;
      return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return op.Error(errno);
    likely_blocked = false;
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
}

absl::Status Stream::ReadFull(void* buffer, std::size_t size, Deadline deadline) {
  std::size_t done = 0;
  while (done < size) {
    absl::StatusOr<std::size_t> n =
        Read(static_cast<char*>(buffer) + done, size - done, deadline);
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return absl::OutOfRangeError(absl::StrCat("ReadFull from ", peer_.ToString(),
                                                ": end of stream after ", done, " of ",
                                                size, " bytes"));
    }
    done += *n;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::size_t> Stream::Write(const void* data, std::size_t size,
                                          Deadline deadline) {
  Operation op(descriptor_, generation_, Descriptor::kWrite, "Write", "to", peer_);
  if (!op.ok()) return op.status();
  if (size == 0) return 0;
  Descriptor* descriptor = op.descriptor();
  bool& likely_blocked = descriptor->likely_blocked(Descriptor::kWrite);
  if (likely_blocked && !descriptor->SkipBlockedGuess(Descriptor::kWrite)) {
    likely_blocked = false;  // as in Read()
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
  for (;;) {
    // MSG_NOSIGNAL: a peer that went away is an EPIPE error, not a SIGPIPE.
    const ssize_t n = send(op.fd(), data, size, MSG_NOSIGNAL);
    if (n >= 0) {
      likely_blocked = static_cast<std::size_t>(n) < size;
      return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return op.Error(errno);  // ENOTSOCK too: sockets only
    likely_blocked = false;
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
}

absl::Status Stream::WriteAll(const void* data, std::size_t size, Deadline deadline) {
  std::size_t done = 0;
  while (done < size) {
    absl::StatusOr<std::size_t> n =
        Write(static_cast<const char*>(data) + done, size - done, deadline);
    if (!n.ok()) return n.status();
    done += *n;
  }
  return absl::OkStatus();
}

namespace {

// Up to IOV_MAX non-empty pieces of `pieces` from piece `first` (its first `skip` bytes
// already written) as iovecs in `out`; returns how many.
std::size_t FillIovecs(absl::Span<const absl::string_view> pieces, std::size_t first,
                       std::size_t skip, iovec* out, std::size_t capacity) {
  std::size_t n = 0;
  for (std::size_t i = first; i < pieces.size() && n < capacity; ++i) {
    const std::size_t offset = i == first ? skip : 0;
    if (pieces[i].size() <= offset) continue;
    out[n].iov_base = const_cast<char*>(pieces[i].data() + offset);
    out[n].iov_len = pieces[i].size() - offset;
    ++n;
  }
  return n;
}

constexpr std::size_t kMaxIovecs = IOV_MAX;  // 1024 on Linux

}  // namespace

absl::StatusOr<std::size_t> Stream::WriteVectored(absl::Span<const absl::string_view> pieces,
                                                  Deadline deadline) {
  return WriteVectoredFrom(pieces, 0, 0, deadline);
}

absl::StatusOr<std::size_t> Stream::WriteVectoredFrom(
    absl::Span<const absl::string_view> pieces, std::size_t first, std::size_t skip,
    Deadline deadline) {
  Operation op(descriptor_, generation_, Descriptor::kWrite, "Write", "to", peer_);
  if (!op.ok()) return op.status();
  iovec vectors[64];
  std::unique_ptr<iovec[]> large;
  iovec* iov = vectors;
  std::size_t capacity = sizeof(vectors) / sizeof(vectors[0]);
  if (pieces.size() - first > capacity) {
    capacity = std::min(pieces.size() - first, kMaxIovecs);
    large.reset(new iovec[capacity]);
    iov = large.get();
  }
  const std::size_t count = FillIovecs(pieces, first, skip, iov, capacity);
  if (count == 0) return 0;
  std::size_t size = 0;
  for (std::size_t i = 0; i < count; ++i) size += iov[i].iov_len;
  Descriptor* descriptor = op.descriptor();
  bool& likely_blocked = descriptor->likely_blocked(Descriptor::kWrite);
  if (likely_blocked && !descriptor->SkipBlockedGuess(Descriptor::kWrite)) {
    likely_blocked = false;  // as in Read()
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = count;
  for (;;) {
    // MSG_NOSIGNAL as in Write() (writev(2) has no such flag: a SIGPIPE).
    const ssize_t n = sendmsg(op.fd(), &message, MSG_NOSIGNAL);
    if (n >= 0) {
      likely_blocked = static_cast<std::size_t>(n) < size;
      return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return op.Error(errno);
    likely_blocked = false;
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
}

absl::Status Stream::WriteAllVectored(absl::Span<const absl::string_view> pieces,
                                      Deadline deadline) {
  std::size_t first = 0;  // the first piece not fully written
  std::size_t skip = 0;   // bytes of it written
  for (;;) {
    while (first < pieces.size() && pieces[first].size() <= skip) {
      ++first;
      skip = 0;
    }
    if (first == pieces.size()) return absl::OkStatus();
    absl::StatusOr<std::size_t> n = WriteVectoredFrom(pieces, first, skip, deadline);
    if (!n.ok()) return n.status();
    std::size_t written = *n + skip;
    while (first < pieces.size() && written >= pieces[first].size()) {
      written -= pieces[first].size();
      ++first;
    }
    skip = written;
  }
}

absl::Status Stream::WaitReadable(Deadline deadline) {
  Operation op(descriptor_, generation_, Descriptor::kRead, "WaitReadable", "from", peer_);
  if (!op.ok()) return op.status();
  // A zero-byte peek tells whether data (or end of stream, or an error) is pending.
  for (;;) {
    char byte;
    const ssize_t n = recv(op.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    // Readable now (data, end of stream, or a pending error): the next Read() must not
    // wait for an edge that this wait may have consumed.
    if (n >= 0 || (errno != EINTR && errno != EAGAIN)) {
      if (op.closed_meanwhile()) return op.Closed();  // readable through its shutdown
      op.descriptor()->likely_blocked(Descriptor::kRead) = false;
      return absl::OkStatus();
    }
    if (errno == EINTR) continue;
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
  }
}

absl::Status Stream::WaitWritable(Deadline deadline) {
  Operation op(descriptor_, generation_, Descriptor::kWrite, "WaitWritable", "to", peer_);
  if (!op.ok()) return op.status();
  if (!op.descriptor()->likely_blocked(Descriptor::kWrite)) {
    pollfd entry{op.fd(), POLLOUT, 0};
    if (poll(&entry, 1, 0) > 0) return absl::OkStatus();
  }
  for (;;) {
    if (absl::Status waited = op.Wait(deadline); !waited.ok()) return waited;
    pollfd entry{op.fd(), POLLOUT, 0};
    if (poll(&entry, 1, 0) > 0) {
      op.descriptor()->likely_blocked(Descriptor::kWrite) = false;
      return absl::OkStatus();
    }
  }
}

absl::Status Stream::ShutdownWrite() {
  Operation op(descriptor_, generation_, Descriptor::kWrite, "ShutdownWrite", "to", peer_);
  if (!op.ok()) return op.status();
  if (shutdown(op.fd(), SHUT_WR) != 0) return op.Error(errno);
  return absl::OkStatus();
}

absl::Status Stream::Close() {
  if (descriptor_ != nullptr) descriptor_->Close(generation_);
  return absl::OkStatus();
}

// ---- Listener.

namespace {

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
