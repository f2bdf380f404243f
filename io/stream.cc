// Copyright 2026 The Spindle Authors.

#include "io/stream.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/internal/descriptor.h"
#include "io/operation.h"

namespace spindle::io {

using internal::ClosedError;
using internal::Descriptor;
using internal::Operation;
using internal::OsError;
using internal::SetNoDelay;

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

}  // namespace spindle::io
